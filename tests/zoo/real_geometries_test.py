#!/usr/bin/env python3
"""Real geometries, judged right (issue 17): the weightless archives of real configurations
(Granite-3.3-8b, Llama-2-7B, Llama-3-8B, Mistral-7B, Qwen2-7B, Granite-Embedding, e5-large,
BGE reranker, BERT-large, ViT-L; tests/zoo/targets.py --only-real) are swept on spyre-2026,
lowered only. The vLLM Spyre plugin runs such models on the real stack, so none may be blocked
by a rule that stack does not have: each must compile with the catalog's adapters, and none is
run end to end (they have no weights).

Usage: real_geometries_test.py STICKLER_BINARY WORK_DIR
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = {"granite-3.3-8b", "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b",
        "granite-embedding-125m-english", "granite-embedding-278m-multilingual",
        "multilingual-e5-large", "bge-reranker-large", "bert-large-uncased",
        "vit-large-patch16-224"}


def fail(message):
    print(f"real_geometries_test: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    stickler, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    targets = os.path.join(work, "targets")
    # Incremental: archives already written are kept (the generator skips them).
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "targets.py"), "--out", targets,
                    "--only-real"], check=True)
    for name in REAL:
        path = os.path.join(targets, "real", name + ".pt")
        size = os.path.getsize(path)
        if size > 1 << 20:
            fail(f"{path} is {size} bytes: a real geometry's weights must never be allocated")

    workspace = os.path.join(work, "workspace")
    os.makedirs(workspace, exist_ok=True)
    out = os.path.join(workspace, "sweep")
    subprocess.run(["rm", "-rf", out], check=True)
    result = subprocess.run([stickler, "sweep", "--models", os.path.join(targets, "index.json"),
                             "--profile", "spyre-2026", "--out", out, "--jobs", "2", "--json"],
                            cwd=workspace, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"the sweep exited {result.returncode}: {result.stderr}")
    sweep = json.loads(result.stdout)
    by_name = {entry.get("name"): entry for entry in sweep["models"]}
    missing = REAL - set(by_name)
    if missing:
        fail(f"not in the sweep: {sorted(missing)}")
    problems = []
    for name in sorted(REAL):
        entry = by_name[name]
        with_adapters = entry.get("compile_with", {})
        if not entry.get("covered") or with_adapters.get("status") != "ok":
            first = with_adapters.get("first") or {}
            problems.append(f"{name}: {entry.get('category')} ({entry.get('detail')}); first "
                            f"blocker {first.get('rule')} {first.get('op')} in {first.get('module')}")
        if entry.get("category") != "lowered only" or entry.get("verdict") != "not_run":
            problems.append(f"{name}: a weightless archive must be lowered only, not "
                            f"{entry.get('category')} / {entry.get('verdict')}")
        print(f"{name}: {entry.get('category')}, blockers without adapters "
              f"{entry['compile_without']['blockers']}, adapters {entry['adapters']['applied']}")
    # Granite's vocabulary (49159) is no whole number of sticks: the real stack pads it, and so
    # must the catalog, or every Granite would count as blocked.
    granite = by_name["granite-3.3-8b"]
    if granite["compile_without"]["status"] != "blocked":
        problems.append("granite-3.3-8b: expected its vocabulary to block it before adapters")
    if "pad-logits-to-sticks" not in granite["adapters"]["applied"]:
        problems.append("granite-3.3-8b: pad-logits-to-sticks was not applied")
    if problems:
        fail("\n  " + "\n  ".join(problems))
    print(f"real_geometries_test: all {len(REAL)} real geometries compile on spyre-2026 with the "
          "catalog's adapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
