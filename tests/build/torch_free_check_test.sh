#!/usr/bin/env bash
# The build's LibTorch-free check (scripts/check_torch_free.py) finds a LibTorch include reached
# through a chain of project headers, names the chain, and passes a tree without one.
set -euo pipefail
checker="$1"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/tools" "$root/simulator/graph"
printf '#pragma once\n#include <torch/script.h>\n' > "$root/simulator/graph/heavy.h"
printf '#pragma once\n#include "simulator/graph/heavy.h"\n' > "$root/simulator/graph/middle.h"
printf '#include <vector>\n#include "simulator/graph/plain.h"\n' > "$root/tools/clean_tool.cpp"
printf '#pragma once\n#include <string>\n' > "$root/simulator/graph/plain.h"

if ! python3 "$checker" "$root" tools 2> "$root/err"; then
  echo "a tree without LibTorch was refused:"; cat "$root/err"; exit 1
fi
printf '#include "simulator/graph/middle.h"\n' > "$root/tools/heavy_tool.cpp"
if python3 "$checker" "$root" tools 2> "$root/err"; then
  echo "a tools file that reaches <torch/script.h> was accepted"; exit 1
fi
expected='tools/heavy_tool.cpp -> simulator/graph/middle.h -> simulator/graph/heavy.h -> <torch/script.h>'
if ! grep -qF "$expected" "$root/err"; then
  echo "the chain is not named; got:"; cat "$root/err"; exit 1
fi
if grep -q clean_tool "$root/err"; then
  echo "the clean file was blamed too:"; cat "$root/err"; exit 1
fi
echo "ok"
