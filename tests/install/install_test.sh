#!/bin/sh
# Stickler installed: `cmake --install` to a temporary prefix, and the .deb that cpack makes of
# the same install, unpacked with dpkg-deb -x. Each copy, run from another directory, finds its
# resources beside its binary (not in the source tree), and a missing resource directory is a
# clear error with a non-zero exit.
# Usage: install_test.sh BUILD_DIR ZOO_DIR
set -eu
build=$1
zoo=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/elsewhere"

fail() {
  echo "install_test: $*" >&2
  exit 1
}

# $1: the installed binary, $2: where its resources must come from.
check() {
  binary=$1
  share=$2
  run() { (cd "$tmp/elsewhere" && env -u STICKLER_PROFILE_DIR -u STICKLER_CATALOG_DIR \
    -u STICKLER_KNOWLEDGE_DIR -u STICKLER_SKILLS_DIR -u STICKLER_DOCS_DIR "$binary" "$@"); }
  run profiles | grep -q '^spyre-2026 ' || fail "$binary profiles does not list spyre-2026"
  catalog=$(run adapters --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["shipped_catalog"])')
  [ "$catalog" = "$share/catalog" ] || fail "$binary reads its catalog from $catalog, not $share/catalog"
  run kb search "rotary tables" | grep -q 'adapter-precompute-rotary-tables' ||
    fail "$binary kb search finds no knowledge page"
  run inspect "$zoo/gpt2-tiny.pt" --json | grep -q '"parameters"' || fail "$binary inspect failed"
  set +e
  message=$(cd "$tmp/elsewhere" && STICKLER_PROFILE_DIR="$tmp/missing" "$binary" profiles 2>&1)
  status=$?
  set -e
  [ "$status" -ne 0 ] || fail "$binary profiles exits 0 without its profile directory"
  echo "$message" | grep -q "device profile directory $tmp/missing does not exist" ||
    fail "$binary profiles without its profile directory says: $message"
}

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
check "$tmp/prefix/bin/stickler" "$tmp/prefix/share/stickler"

cpack -G DEB -B "$tmp/deb" --config "$build/CPackConfig.cmake" >/dev/null
deb=$(ls "$tmp"/deb/stickler_*.deb)
dpkg-deb -f "$deb" Depends | grep -q libtorch || fail "the .deb does not depend on LibTorch"
dpkg-deb -x "$deb" "$tmp/root"
check "$tmp/root/usr/bin/stickler" "$tmp/root/usr/share/stickler"
echo "install_test: the install and the .deb both run from elsewhere"
