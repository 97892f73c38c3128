#!/usr/bin/env python3
"""Peak memory against weight bytes (issue 29): a Llama-style model of about 110M parameters saved
in bfloat16 (bench/models/generate_large.py), run on the CPU reference and on spyre-2026. Memory
is a figure that is stable where a time is not, so it is asserted here; time ratios are the
benchmarks' (docs/benchmarks.md).

Each run's figure is the peak of the resident memory summed over its whole process tree (the CLI
and the model host it starts), sampled every 20 ms, less the same for a zoo model (what
a run costs without weights: LibTorch's libraries, the profile, the catalog; qwen2-hd128, which
both backends run), as a multiple of
the archive's weight bytes. A bfloat16 model is computed in float32 from its 16-bit weights
without a float32 copy of them: one would add 2x on its own.

Usage: memory_test.py STICKLER_BINARY ZOO_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(HERE, "..", "..", "bench", "models", "generate_large.py")
MODEL = "llama-110m"
# Measured 2026-12-03: the CPU run 1.9x (the weights, and at this size the logits and the
# comparison's float64 copies of them), the device run 4.5-4.7x (the CLI and the model host each
# load the model and run it, at the same time). Bounds with room for
# allocator noise, and below what a float32 copy of the weights would add (2x on its own).
# Issue 29's target is 1.3x for both; docs/benchmarks.md says where the rest goes.
BOUNDS = {"cpu": 2.5, "spyre-sim:spyre-2026": 5.5}


def fail(message):
    print(f"memory_test: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def tree_rss(root):
    """Resident bytes of `root` and its descendants."""
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
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total


def peak_of(command):
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.02)
    out, err = process.communicate()
    return peak, process.returncode, out, err


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
    for backend, bound in BOUNDS.items():
        base, status, _, err = peak_of([stickler, "run", os.path.join(zoo, "qwen2-hd128.pt"), "--backend", backend])
        if status != 0:
            fail(f"qwen2-hd128 on {backend} exited {status}: {err}")
        peak, status, out, err = peak_of([stickler, "run", archive, "--backend", backend, "--json"])
        if status != 0:
            fail(f"{MODEL} on {backend} exited {status}: {err}")
        report = json.loads(out)
        if report["verdict"] != "pass":
            problems.append(f"{backend}: verdict {report['verdict']}, not pass")
        ratio = (peak - base) / weights
        print(f"{backend}: peak {peak / 2**20:.0f} MiB, {base / 2**20:.0f} MiB without weights: "
              f"{ratio:.2f}x the {weights / 2**20:.0f} MiB of weights (bound {bound}x)")
        if ratio > bound:
            problems.append(f"{backend}: {ratio:.2f}x the weight bytes, above {bound}x")
    if problems:
        fail("\n  " + "\n  ".join(problems))
    print("memory_test: peak memory within its bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
