#!/usr/bin/env python3
"""Stickler's commands on Llama-style models of growing size, saved in bfloat16 (issue 29): for each
model, the wall time of `inspect`, `check`, `run` on the CPU and on the device, `adapt`, `localize` (a
wrong-scale fault in one layer's MLP output projection), the review gate's check of the model
(`review baseline`: what `review approve` runs for each known model) and a sweep's probe of it,
against one device run of the same model measured in the same run (the gate and the sweep also
against the runs they make: one device run and one CPU run, and for a decoder its decode, the
prefill and 4 steps on the device and on the CPU reference); and the peak memory of each command's whole process tree (the CLI and the
model hosts and workers it starts) against the archive's weight bytes, as proportional set size
(a page shared by several processes, such as the archive's mapped weights, counted once) and its
anonymous part (what the processes hold of their own); for the runs of the adapted archive, also
against the tensors that archive stores (its weights and its adapters' constants).

Models come from bench/models/generate_large.py (generated on first use, never committed):
llama-110m (215 MB) and llama-480m (0.97 GB) by default; llama-8b (Llama-3-8B's geometry, 16 GB,
about six minutes and 16 GB of memory to make) when named.

  /usr/bin/python3 bench/scale_bench.py --stickler build/stickler --models build/bench-models \\
      [--only llama-110m llama-480m llama-8b] [--skip inspect adapt decode localize gate sweep] [--timeout 3600]

The gate and the sweep run in the models' directory, their workspace (a stickler-adapters catalog
is created there): a sweep list names archives inside the workspace only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "zoo"))

from memory_test import peak_of, weight_bytes  # noqa: E402

GENERATOR = os.path.join(HERE, "models", "generate_large.py")
PROFILE = "spyre-2026"


def measured(command, cwd=None):
    """(seconds, peak proportional set size, its peak anonymous part, exit status, stdout)."""
    start = time.time()
    (peak, peak_anonymous), status, out, _ = peak_of(command, cwd)
    return time.time() - start, peak, peak_anonymous, status, out


def wrong_scale_profile(directory, module):
    path = os.path.join(directory, "scale-bench-wrong-scale.json")
    with open(path, "w") as f:
        json.dump({"extends": PROFILE, "name": "scale-bench-wrong-scale",
                   "description": "One MLP output projection's outputs come out three times too large.",
                   "faults": [{"id": "wrong-scale", "match": {"module": module},
                               "effect": {"kind": "wrong_scale", "factor": 3.0}}]}, f)
    return path


def tensor_bytes(archive):
    """The bytes of every tensor an archive stores: its weights (data/) and its graph's constants
    (constants/, where an adapted archive keeps the weights its adapters made)."""
    with zipfile.ZipFile(archive) as z:
        return sum(i.file_size for i in z.infolist() if "/data/" in i.filename or "/constants/" in i.filename)


def verdict_of(output):
    try:
        report = json.loads(output)
    except ValueError:
        return "-"
    if report.get("schema") == "stickler.localize":
        culprit = report.get("culprit") or {}
        return f"{report.get('status')} {culprit.get('module', '')} in {len(report.get('runs', []))} runs"
    if report.get("schema") == "stickler.baseline" or "catalog" in report:  # the gate, a sweep
        model = (report.get("models") or [{}])[0]
        return model.get("verdict") or model.get("category", "-")
    return report.get("verdict", "-")


def decode_line(output):
    """A decode step's device time against the prefill's, from adapt --decode's document."""
    try:
        report = json.loads(output)
    except ValueError:
        return "adapt --decode 4: no document (" + output.strip()[-200:] + ")"
    decode = report.get("decode", {})
    steps = decode.get("per_step", [])
    if len(steps) < 2:
        blocked = decode.get("blocked_graph")
        return ("adapt --decode 4: " + report.get("verdict", "?") +
                (f" (its {blocked} graph does not compile)" if blocked else ""))
    prefill = steps[0]["seconds"]
    step = sum(s["seconds"] for s in steps[1:]) / (len(steps) - 1)
    return (f"adapt --decode 4: a decode step takes {step:.3f} s on the device, {step / prefill:.2f}x the "
            f"prefill's {prefill:.3f} s ({decode.get('prompt_length')} positions); "
            f"min KV cosine {decode.get('min_kv_cosine')}")


def decode_seconds(output):
    """The device seconds of the decode a gate's or a sweep's entry made (its prefill and steps),
    None when it did not decode (a model without a decode interface, or a forward that failed)."""
    try:
        entry = json.loads(output)["models"][0]
    except (ValueError, KeyError, IndexError):
        return None
    steps = entry.get("decode", {}).get("per_step")
    return sum(step.get("seconds", 0) for step in steps) if steps else None


def cpu_decode_seconds(stickler, archive):
    """The seconds of a decode's CPU runs (the prefill and 4 steps on the cpu backend, each alone),
    None when the model does not decode. The original archive's: an adapted one keeps no decode
    graphs, and the original computes less (no padded heads), so the figure is a lower bound."""
    run = subprocess.run([stickler, "run", archive, "--backend", "cpu", "--decode", "4", "--json"],
                         capture_output=True, text=True)
    try:
        steps = json.loads(run.stdout)["decode"]["per_step"]
    except (ValueError, KeyError):
        return None
    return sum(step.get("seconds", 0) for step in steps)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stickler", required=True)
    parser.add_argument("--models", required=True, help="where generate_large.py writes (and finds) them")
    parser.add_argument("--only", nargs="*", default=["llama-110m", "llama-480m"])
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["inspect", "adapt", "decode", "localize", "gate", "sweep"])
    parser.add_argument("--timeout", type=float, default=3600, help="per device run, seconds")
    args = parser.parse_args()
    stickler = os.path.abspath(args.stickler)
    for name in args.only:
        subprocess.run(["/usr/bin/python3", GENERATOR, "--out", args.models, "--only", name, "--dtype", "bfloat16"],
                       check=True)
        archive = os.path.join(args.models, name + "-bfloat16.pt")
        weights = weight_bytes(archive)
        layer = "model.layers.0.mlp.down_proj"
        profile = wrong_scale_profile(args.models, layer)
        timeout = ["--timeout", str(args.timeout)]
        # The baseline is one device run of the model as it runs on the device: adapted, when the
        # catalog's adapters are what it needs (adapt --save writes that model).
        adapted = os.path.join(args.models, name + "-bfloat16-adapted.pt")
        if os.path.exists(adapted):
            os.remove(adapted)
        results = []
        if "adapt" not in args.skip:
            results.append(("adapt (saving the adapted model)",
                            measured([stickler, "adapt", archive, "--profile", PROFILE, "--save", adapted, "--json"])))
        device_model = adapted if os.path.exists(adapted) else archive
        which = " (the adapted model)" if device_model == adapted else ""
        device = measured([stickler, "run", device_model, "--backend", "spyre-sim:" + PROFILE, "--json"] + timeout)
        results.insert(0, ("run, device" + which, device))
        # The CPU run of the same model (the adapted one computes padded heads too).
        cpu = measured([stickler, "run", device_model, "--backend", "cpu", "--json"])
        results.append(("run, cpu" + which, cpu))
        if "inspect" not in args.skip:
            # The archive's hash is remembered by the commands above; once more, from nothing.
            fresh_cache = tempfile.mkdtemp(prefix="scale-bench-cache-")
            results.append(("inspect, its hash not yet remembered",
                            measured(["env", "STICKLER_CACHE_DIR=" + fresh_cache, stickler, "inspect", archive,
                                      "--no-include-nodes", "--json"])))
            shutil.rmtree(fresh_cache, ignore_errors=True)
            results.append(("inspect", measured([stickler, "inspect", archive, "--no-include-nodes", "--json"])))
            results.append(("check", measured([stickler, "check", archive, "--profile", PROFILE, "--json"])))
        if "decode" not in args.skip:
            # The decode graphs take the adapters the forward took (adapt --decode), then decode.
            results.append(("adapt --decode 4",
                            measured([stickler, "adapt", archive, "--profile", PROFILE,
                                      "--decode", "4", "--json"] + timeout)))
        if "localize" not in args.skip:
            results.append((f"localize ({layer} x3)",
                            measured([stickler, "localize", archive, "--profile", profile, "--adapt", "--json"] + timeout)))
        workspace = os.path.abspath(args.models)
        if {"gate", "sweep"} - set(args.skip):
            subprocess.run([stickler, "init"], cwd=workspace, check=True, stdout=subprocess.DEVNULL)
        model_timeout = ["--model-timeout", str(args.timeout)]
        if "gate" not in args.skip:
            results.append(("gate (review baseline)",
                            measured([stickler, "review", "baseline", "--model", os.path.basename(archive),
                                      "--profile", PROFILE, "--json"] + model_timeout, workspace)))
        if "sweep" not in args.skip:
            listed = os.path.join(workspace, "scale-bench-sweep.txt")
            with open(listed, "w") as f:
                f.write(os.path.basename(archive) + "\n")
            out = tempfile.mkdtemp(prefix="scale-bench-sweep-")
            results.append(("sweep (one model)",
                            measured([stickler, "sweep", "--models", listed, "--profile", PROFILE, "--out", out,
                                      "--json"] + model_timeout + timeout, workspace)))
            shutil.rmtree(out, ignore_errors=True)
        print(f"\n{name}: {weights / 1e9:.2f} GB of bfloat16 weights, profile {PROFILE}")
        print(f"{'command':44} {'seconds':>9} {'x device run':>12} {'peak GB':>8} {'x weights':>9} "
              f"{'own x':>6}  verdict")
        for label, (seconds, peak, anonymous, status, output) in results:
            print(f"{label:44} {seconds:9.1f} {seconds / device[0]:11.2f}x {peak / 1e9:8.2f} "
                  f"{peak / weights:8.2f}x {anonymous / weights:5.2f}x  {verdict_of(output)} (exit {status})",
                  flush=True)
        print(f"run, device{which}: {device[0] / cpu[0]:.2f}x the CPU run of the same model (target: at most 2x)")
        if device_model == adapted:
            # The adapted archive stores the weights its adapters made (the padded heads) as graph
            # constants beside the original's: the runs' own archive holds more than `weights`.
            stored = tensor_bytes(adapted)
            for label, (_, peak, anonymous, _, _) in results:
                if label.startswith("run,"):
                    print(f"{label}: peak {peak / stored:.2f}x (own {anonymous / stored:.2f}x) the tensors "
                          f"of the archive it runs ({stored / 1e9:.2f} GB, its weights and its adapters' constants)")
        cpu_decoded = None
        for label, (seconds, _, _, _, output) in results:
            if label.startswith("localize"):
                try:
                    runs = sum(run.get("seconds", 0) for run in json.loads(output).get("runs", []))
                except ValueError:
                    continue
                print(f"{label}: {seconds / runs:.2f}x the device runs it makes ({runs:.1f} s; its own work "
                      f"{(seconds - runs) / runs:.2f}x them)")
            if label.startswith("adapt --decode"):
                print(decode_line(output))
            if label.startswith(("gate", "sweep")):
                decoded = decode_seconds(output)
                if decoded is not None and cpu_decoded is None:
                    cpu_decoded = cpu_decode_seconds(stickler, archive)
                runs = device[0] + cpu[0] + (decoded or 0) + (cpu_decoded or 0 if decoded is not None else 0)
                what = ("a device run, a CPU run and the decode, the prefill and 4 steps on the device "
                        f"({decoded:.1f} s) and on the CPU reference ({cpu_decoded or 0:.1f} s)"
                        if decoded is not None else "a device run and a CPU run")
                print(f"{label}: {seconds / runs:.2f}x the runs it makes ({what}, {runs:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
