#!/usr/bin/env bash
# A sharded coverage sweep on a real (one-node) Slurm cluster: starts the cluster
# (one_node_cluster.sh), submits a 4-task `sbatch --array` job in which each task runs
# `stickler sweep` with its shard read from the Slurm environment (no --shard), waits, checks
# that all four tasks completed, merges the shards with `stickler sweep merge`, runs the same
# sweep unsharded, and compares the per-model results (model, category, compiled_without,
# compiled_with, verdict; not timings or ids).
#
# Usage: slurm_sweep_test.sh STICKLER_BINARY ZOO_DIR
#        slurm_sweep_test.sh --selftest   the cluster and the array alone: a stand-in job that
#                                         takes its slice of a list from the same variables
#
# Needs root and the slurm-wlm and munge packages (scripts/setup); fails (never skips) without.
# STICKLER_SLURM_TIMEOUT: seconds to wait for the array job (default 300).
# STICKLER_SLURM_KEEP=1 keeps the working directory (its path is printed).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=one_node_cluster.sh
. "$here/one_node_cluster.sh"

selftest=0
if [[ ${1:-} == --selftest ]]; then
  selftest=1
elif [[ $# -ne 2 ]]; then
  echo "usage: $0 STICKLER_BINARY ZOO_DIR | $0 --selftest" >&2
  exit 2
fi
timeout=${STICKLER_SLURM_TIMEOUT:-300}
shards=4

step() { echo "slurm_sweep_test: $*"; }
fail() {
  echo "slurm_sweep_test: FAILED: $*" >&2
  exit 1
}

if ((!selftest)); then
  [[ -f $1 && -x $1 ]] || fail "$1 is not an executable"
  [[ -f $2/index.json ]] || fail "no zoo manifest at $2/index.json"
  stickler=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  zoo=$(cd "$2" && pwd)
  "$stickler" sweep --help 2>&1 | grep -q -- --models ||
    fail "$stickler has no 'sweep' subcommand ('stickler sweep --help' does not show --models)"
fi

# A Slurm job (or a Kubernetes pod) around the test must not shard the unsharded sweep or
# confuse sbatch: drop what the environment says about an enclosing job.
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_)')
unset JOB_COMPLETION_INDEX STICKLER_SHARD_COUNT

work=$(mktemp -d "${TMPDIR:-/tmp}/stickler-slurm.XXXXXX") || fail "cannot create a temporary directory"
chmod 0755 "$work"
cluster=$work/cluster
cleanup() {
  local status=$?
  [[ -f $work/watchdog.pid ]] && kill "$(cat "$work/watchdog.pid")" 2>/dev/null
  slurm_cluster_stop "$cluster"
  if ((status != 0)); then
    local f
    for f in "$work"/logs/*.out; do
      [[ -s "$f" ]] || continue
      echo "---- $f" >&2
      tail -n 30 "$f" >&2
    done
  fi
  if [[ ${STICKLER_SLURM_KEEP:-0} == 1 ]]; then
    echo "slurm_sweep_test: kept $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A test runner that kills the test on a timeout (SIGKILL: no trap runs) would leave the
# daemons, which run in sessions of their own, behind. A detached watchdog stops them and
# removes the working directory when this shell is gone.
(
  # shellcheck disable=SC2016 # expanded by the inner bash
  setsid bash -c 'while kill -0 "$0" 2>/dev/null; do sleep 2; done
    . "$1"; slurm_cluster_stop "$2"; [[ $4 == 1 ]] || rm -rf "$3"' \
    "$$" "$here/one_node_cluster.sh" "$cluster" "$work" "${STICKLER_SLURM_KEEP:-0}" \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$work/watchdog.pid"
)

started=$SECONDS
step "starting a one-node Slurm cluster in $cluster"
slurm_cluster_start "$cluster" || fail "could not start the Slurm cluster (see above)"
step "cluster up in $((SECONDS - started))s: $(sinfo -h -o '%P %a %D %T %N')"
mkdir -p "$work/logs" "$work/out" "$work/workspace"

# Submits the sbatch script $1 (environment passed on), waits for it, and checks that tasks
# 0..shards-1 of the array each completed with exit code 0 (the cluster's job completion log).
run_array() {
  local script=$1 job rc t line submitted=$SECONDS
  step "submitting $script: sbatch --wait (timeout ${timeout}s)"
  job=$(cd "$work/workspace" && timeout "$timeout" sbatch --parsable --wait "$script")
  rc=$?
  job=${job%%;*}
  ((rc != 124)) || fail "the array job ${job:-?} did not finish within ${timeout}s: $(squeue -h -o '%i %T %R' | tr '\n' ' ')"
  [[ $job =~ ^[0-9]+$ ]] || fail "sbatch did not submit the job (exit $rc)"
  ((rc == 0)) || fail "array job $job: a task failed (sbatch --wait exited $rc)"
  # The completion log is written as each task ends; give the last one a moment.
  for ((t = 0; t < 20; t++)); do
    (($(grep -c "ArrayJobId=$job " "$cluster/jobcomp.txt" 2>/dev/null) >= shards)) && break
    sleep 0.5
  done
  for ((t = 0; t < shards; t++)); do
    line=$(grep "ArrayJobId=$job ArrayTaskId=$t " "$cluster/jobcomp.txt" 2>/dev/null)
    [[ -n $line ]] || fail "array job $job: no completion record for task $t"
    [[ $line == *"JobState=COMPLETED "* && $line == *" ExitCode=0:0 "* ]] ||
      fail "array job $job task $t did not complete: $(grep -oE 'JobState=[A-Z_]+|ExitCode=[0-9:]+' <<<"$line" | tr '\n' ' ')"
  done
  step "array job $job: tasks 0-$((shards - 1)) COMPLETED, exit 0, in $((SECONDS - submitted))s"
}

if ((selftest)); then
  # The stand-in: a list of 10 names; each task takes every count-th from its index, as
  # `stickler sweep` takes its shard, and writes them with what Slurm told it.
  seq -f 'model-%02g' 0 9 >"$work/list.txt"
  cat >"$work/standin.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=stickler-standin
#SBATCH --array=0-$((shards - 1))
#SBATCH --cpus-per-task=1
#SBATCH --time=5
#SBATCH --output=$work/logs/shard-%a.out
set -euo pipefail
k=\$((SLURM_ARRAY_TASK_ID - \${SLURM_ARRAY_TASK_MIN:-0}))
n=\$SLURM_ARRAY_TASK_COUNT
mkdir -p "$work/out/shard-\$SLURM_ARRAY_TASK_ID"
cd "$work/out/shard-\$SLURM_ARRAY_TASK_ID"
echo "\$SLURM_ARRAY_TASK_ID \$SLURM_ARRAY_TASK_COUNT \${SLURM_ARRAY_TASK_MIN:-}" > task.txt
awk -v k="\$k" -v n="\$n" '(NR - 1) % n == k' "$work/list.txt" > models.txt
EOF
  run_array "$work/standin.sbatch"
  for ((t = 0; t < shards; t++)); do
    read -r id count min <"$work/out/shard-$t/task.txt" || fail "task $t wrote nothing"
    [[ $id == "$t" && $count == "$shards" && $min == 0 ]] ||
      fail "task $t saw SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=$count SLURM_ARRAY_TASK_MIN=$min"
    step "task $t: SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=$count SLURM_ARRAY_TASK_MIN=$min, took $(paste -sd, "$work/out/shard-$t/models.txt")"
  done
  cat "$work"/out/shard-*/models.txt | sort | diff - "$work/list.txt" >/dev/null ||
    fail "the tasks' slices do not partition the list"
  step "the 4 slices partition the list"
  step "ok (--selftest) in $((SECONDS - started))s"
  exit 0
fi

# The model list: 8 zoo models, one per family, by name from the zoo's manifest.
names=(gpt2-tiny llama-tiny bert-tiny vit-tiny qwen2-hd128 t5-encoder-tiny mpnet-tiny bamba-tiny)
python3 - "$zoo" "$work/models.txt" "${names[@]}" <<'EOF' || fail "cannot write the model list"
import json, os, sys
zoo, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
models = {m["name"]: m for m in json.load(open(os.path.join(zoo, "index.json")))["models"]}
missing = [n for n in names if n not in models]
if missing:
    sys.exit("not in the zoo's index.json: " + ", ".join(missing))
with open(out, "w") as f:
    f.write("# written by tests/slurm/slurm_sweep_test.sh\n")
    for n in names:
        f.write(os.path.join(zoo, models[n]["file"]) + "\n")
EOF
step "model list $work/models.txt: ${names[*]}"

# The job script, as docs/sweeps.md shows it; the test passes its variables in the
# environment (sbatch exports the submitter's environment by default).
cat >"$work/sweep.sbatch" <<'EOF'
#!/bin/bash
#SBATCH --job-name=stickler-sweep
#SBATCH --array=0-3
#SBATCH --cpus-per-task=1
#SBATCH --time=20
#SBATCH --output=logs/shard-%a.out
# STICKLER (the binary), MODELS (the list) and OUT (the output directory) must be on a
# filesystem every node sees. The shard comes from SLURM_ARRAY_TASK_ID/_COUNT: no --shard.
set -euo pipefail
"$STICKLER" sweep --models "$MODELS" --profile spyre-2026 \
  --out "$OUT/shard-$SLURM_ARRAY_TASK_ID" --jobs 1
EOF
# Run from the workspace (the sweeps' history lives in the current directory); its logs/ is
# where --output writes.
ln -s "$work/logs" "$work/workspace/logs"
export STICKLER=$stickler MODELS=$work/models.txt OUT=$work/out
run_array "$work/sweep.sbatch"

python3 - "$work/out" "$shards" <<'EOF' || fail "the shards' sweep.json files are not as expected"
import json, sys
out, count = sys.argv[1], int(sys.argv[2])
seen = []
for k in range(count):
    d = json.load(open(f"{out}/shard-{k}/sweep.json"))
    assert d.get("schema") == "stickler.sweep", f"shard {k}: schema {d.get('schema')!r}"
    s = d.get("shard") or {}
    assert s.get("index") == k and s.get("count") == count, \
        f"shard-{k}/sweep.json says shard {s}, not {k}/{count}"
    assert s.get("source") == "slurm", f"shard-{k}/sweep.json: shard not from the Slurm environment: {s}"
    names = [m["model"] for m in d["models"]]
    print(f"slurm_sweep_test: shard {k}/{count}: {len(names)} models: " +
          ", ".join(n.rsplit('/', 1)[-1] for n in names))
    seen += names
assert len(seen) == len(set(seen)), f"a model is in two shards: {sorted(seen)}"
EOF

merge_started=$SECONDS
(cd "$work/workspace" && "$stickler" sweep merge --out "$work/merged" \
  "$work"/out/shard-{0..3}) >"$work/logs/merge.out" 2>&1 ||
  { cat "$work/logs/merge.out" >&2; fail "stickler sweep merge failed"; }
[[ -f $work/merged/sweep.json ]] || fail "stickler sweep merge wrote no $work/merged/sweep.json"
step "merged the 4 shards into $work/merged/sweep.json in $((SECONDS - merge_started))s"

whole_started=$SECONDS
mkdir -p "$work/workspace-whole"
(cd "$work/workspace-whole" && "$stickler" sweep --models "$MODELS" --profile spyre-2026 \
  --out "$work/whole" --jobs 1) >"$work/logs/whole.out" 2>&1 ||
  { cat "$work/logs/whole.out" >&2; fail "the unsharded sweep failed"; }
step "unsharded sweep in $((SECONDS - whole_started))s"

python3 - "$work/merged/sweep.json" "$work/whole/sweep.json" "${#names[@]}" <<'EOF' || fail "the merged sweep differs from the unsharded one"
import json, sys
fields = ("model", "category", "compiled_without", "compiled_with", "verdict")
def results(path):
    d = json.load(open(path))
    rows = {m["model"]: {f: m.get(f) for f in fields} for m in d["models"]}
    assert len(rows) == len(d["models"]), f"{path}: a model appears twice"
    return rows
merged, whole = results(sys.argv[1]), results(sys.argv[2])
expected = int(sys.argv[3])
for model in sorted(whole):
    r = whole[model]
    print(f"slurm_sweep_test:   {model.rsplit('/', 1)[-1]}: {r['category']}, verdict {r['verdict']}")
ok = True
if len(whole) != expected:
    print(f"the unsharded sweep has {len(whole)} models, not {expected}"); ok = False
for model in sorted(set(merged) | set(whole)):
    a, b = merged.get(model), whole.get(model)
    if a != b:
        ok = False
        print(f"differs: {model}:\n  merged:    {a}\n  unsharded: {b}")
sys.exit(0 if ok else 1)
EOF
step "the merged sweep's per-model results equal the unsharded sweep's (${#names[@]} models)"
step "ok in $((SECONDS - started))s"
