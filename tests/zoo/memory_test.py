#!/usr/bin/env python3
"""Peak memory against weight bytes (issue 29): a Llama-style model of about 110M parameters saved
in bfloat16 (bench/models/generate_large.py), run on the CPU reference and on spyre-2026. Memory
is a figure that is stable where a time is not, so it is asserted here; time ratios are the
benchmarks' (docs/benchmarks.md).

Then the review gate's check of the same model (`review baseline`: every adapter meant for it
applied and checked for equivalence, the whole adapted model checked, a device run and a decode of
4 steps), the command that holds the most at once: a worker computing the CPU reference and the
checks beside a model host running the device.

Each run's figures are peaks over its whole process tree (the CLI, its workers and model hosts),
sampled every 20 ms, less the same for a zoo model (what a run costs without weights: LibTorch's
libraries, the profile, the catalog; qwen2-hd128, which both backends run and the gate passes),
as multiples of the archive's weight bytes: the proportional set size (every page the tree
holds, one shared by several processes counted once) and its anonymous part (what the processes
hold of their own, not the archive's mapped pages). The weights are mapped from the archive
(mapped_archive.h), so the CLI and the model host share one copy; a bfloat16 model is computed
in float32 from them without a float32 copy, which would add 2x on its own.

Usage: memory_test.py STICKLER_BINARY ZOO_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(HERE, "..", "..", "bench", "models", "generate_large.py")
MODEL = "llama-110m"
# Measured 2026-12-03, in all and of their own: the CPU run 1.6-1.7x and 0.8x (the weights, and at
# this size the logits, the comparison's float64 copies of them and BLAS buffers), the device run
# 2.1x and 1.3x (the host's and the CLI's activations; the weights DL16 rounds to values bfloat16
# cannot hold are read through the rounding, not copied: with float32 copies of them, 3.5x and
# 2.4x). Before the weights were mapped: 1.9x and 4.1x in all, each process holding its own copy.
# Since a load gives back the memory its example run freed (freed_memory.h; 2026-12-07, one run):
# the CPU run 1.3x and 0.5x, the device run 1.4x and 0.6x. Bounds with room for allocator noise,
# below what a float32 copy of the weights or a second copy of the model would add. Issue 29's
# target is 1.3x for both; docs/benchmarks.md says where the rest goes.
BOUNDS = {"cpu": (2.2, 1.3), "spyre-sim:spyre-2026": (3.0, 1.8)}
# The gate, measured 2026-12-07 over ten runs: 2.1-2.9x in all, 1.3-1.9x of their own (its peak
# depends on how the worker's checks and the host's runs overlap); 3.5x and 2.6x once in CI.
# Before an equivalence check gave back the freed blocks it kept for reuse, which the worker then
# held through the host's runs: 3.7-4.3x and 2.7-3.3x. Since a load's example run and a check
# give back the heap's free pages too, which one of the worker's threads' heaps or another held
# (0.1 GB more in some runs than in others), over 24 runs: 1.8-2.4x and 1.0-1.6x.
GATE_BOUNDS = (3.3, 2.3)


def fail(message):
    print(f"memory_test: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def tree_pss(root):
    """Proportional set size of `root` and its descendants, summed, and its anonymous part: the
    memory the tree holds, pages it shares (the archive's mapped weights, the libraries) counted
    once however many of its processes map them. Resident sizes summed would count them once per
    process."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    total, anonymous, stack = 0, 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                    elif line.startswith("Pss_Anon:"):
                        anonymous += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total, anonymous


def peak_of(command, cwd=None):
    """Runs `command` (in `cwd`): ((peak proportional set size, its peak anonymous part), exit
    status, stdout, stderr), its process tree sampled while it runs."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    # Read on the side: output larger than a pipe would otherwise stall the command.
    outputs = {}
    readers = [threading.Thread(target=lambda key=key, stream=stream: outputs.update({key: stream.read()}))
               for key, stream in (("out", process.stdout), ("err", process.stderr))]
    for reader in readers:
        reader.start()
    peak, peak_anonymous = 0, 0
    while process.poll() is None:
        sampled = time.time()
        total, anonymous = tree_pss(process.pid)
        peak, peak_anonymous = max(peak, total), max(peak_anonymous, anonymous)
        # Reading a 16 GB process's page tables takes tens of milliseconds: sample so that the
        # sampler takes at most a tenth of a core from the command it measures.
        time.sleep(max(0.02, 9 * (time.time() - sampled)))
    for reader in readers:
        reader.join()
    return (peak, peak_anonymous), process.returncode, outputs["out"], outputs["err"]


def weight_bytes(archive):
    with zipfile.ZipFile(archive) as z:
        return sum(i.file_size for i in z.infolist() if "/data/" in i.filename)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    stickler, zoo, work = (os.path.abspath(a) for a in sys.argv[1:])
    os.makedirs(work, exist_ok=True)
    subprocess.run(["/usr/bin/python3", GENERATOR, "--out", work, "--only", MODEL, "--dtype", "bfloat16"],
                   check=True)
    archive = os.path.join(work, MODEL + "-bfloat16.pt")
    weights = weight_bytes(archive)
    if not 150e6 < weights < 300e6:
        fail(f"{archive} holds {weights} bytes of weights, not a bfloat16 model of about 110M parameters")
    problems = []

    def measure(label, model_command, base_command, bounds, verdict_of):
        """Runs `model_command` in `work` and asserts its peaks, less the largest of three runs of
        `base_command` (the libraries, a tiny model): a run of a fraction of a second on a loaded
        machine can end between two samples of its peak, and a baseline measured low makes the
        model's ratio look high (85 MiB instead of 173 in CI)."""
        base = (0, 0)
        for _ in range(3):
            sample, status, _, err = peak_of(base_command, work)
            if status != 0:
                fail(f"{label}, qwen2-hd128: exited {status}: {err}")
            base = (max(base[0], sample[0]), max(base[1], sample[1]))
        peak, status, out, err = peak_of(model_command, work)
        if status != 0:
            fail(f"{label}, {MODEL}: exited {status}: {err}")
        verdict = verdict_of(json.loads(out))
        if verdict != "pass":
            problems.append(f"{label}: verdict {verdict}, not pass")
        for what, value, without, bound in zip(("in all", "of their own"), peak, base, bounds):
            ratio = (value - without) / weights
            print(f"{label}, {what}: peak {value / 2**20:.0f} MiB, {without / 2**20:.0f} MiB "
                  f"without weights: {ratio:.2f}x the {weights / 2**20:.0f} MiB of weights (bound {bound}x)")
            if ratio > bound:
                problems.append(f"{label}: {ratio:.2f}x the weight bytes {what}, above {bound}x")

    for backend, bounds in BOUNDS.items():
        measure(backend, [stickler, "run", archive, "--backend", backend, "--json"],
                [stickler, "run", os.path.join(zoo, "qwen2-hd128.pt"), "--backend", backend], bounds,
                lambda report: report["verdict"])
    # The gate reads its models and the catalog (made by `init`) in its workspace, `work`.
    shutil.copyfile(os.path.join(zoo, "qwen2-hd128.pt"), os.path.join(work, "qwen2-hd128.pt"))
    subprocess.run([stickler, "init"], cwd=work, check=True, stdout=subprocess.DEVNULL)

    def gate(model):
        return [stickler, "review", "baseline", "--model", model, "--profile", "spyre-2026", "--json"]

    def adapted_verdict(report):
        entry = report["models"][0]
        # Without an adapter applied and checked, the gate would measure a plain run.
        return entry["verdict"] if entry["applied"] else "no adapter applied"

    measure("the gate", gate(os.path.basename(archive)), gate("qwen2-hd128.pt"), GATE_BOUNDS,
            adapted_verdict)
    if problems:
        fail("\n  " + "\n  ".join(problems))
    print("memory_test: peak memory within its bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
