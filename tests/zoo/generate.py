#!/usr/bin/env python3
"""Generates Stickler's model zoo: small TorchScript archives of HuggingFace-style families,
each with a model card (stickler/model.json), plus index.json describing them.

Run with Debian's python3-torch: /usr/bin/python3 tests/zoo/generate.py --out build/zoo
Deterministic: the same generator writes the same weights.
"""
import argparse
import contextlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from broken import write_broken  # noqa: E402
from common import add_outliers, init_weights_like_transformers, seed_for, set_float_inputs_dtype, write_model  # noqa: E402
from foreign import write_foreign  # noqa: E402
from half_on_cpu import half_kernels_in_float32  # noqa: E402
from traps import write_traps  # noqa: E402
from families import bamba, bert, cohere, convnext, esm, falcon, gpt2, gpt_neox, gptj, llama, moe, mpnet, opt, phi, phi3, t5, vit, xlm_roberta  # noqa: E402

FAMILIES = [bert, xlm_roberta, mpnet, esm, gpt2, llama, phi, phi3, opt, gpt_neox, falcon, gptj, cohere, bamba, vit, convnext, t5, moe]


def all_variants():
    for family in FAMILIES:
        for name, config in family.VARIANTS.items():
            yield family, name, dict(config)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="directory to write the archives and index.json into")
    parser.add_argument("--only", nargs="*", help="generate only these models")
    parser.add_argument("--outliers", action="store_true",
                        help="give every model trained-like weights: a few hidden channels with large outliers")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                        help="save the weights and the float inputs in this dtype, as checkpoints are "
                             "served (traced in it, as Transformers traces a model loaded in it)")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args()

    if args.list:
        for family, name, config in all_variants():
            print(f"{name:28s} {family.FAMILY}")
        return 0

    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    index = {"version": 1, "torch": torch.__version__, "models": []}
    start = time.time()
    for family, name, config in all_variants():
        if args.only and name not in args.only:
            continue
        outliers = config.pop("outliers", False) or args.outliers
        torch.manual_seed(seed_for(name))
        model, card, method, hidden_size = family.build(name, config)
        model.eval()
        init_weights_like_transformers(model)
        if hasattr(family, "after_init"):
            family.after_init(model, card)
        outlier_channels = add_outliers(model, hidden_size, seed_for(name)) if outliers else []
        if outlier_channels:
            card["config"]["outlier_channels"] = outlier_channels
        if args.dtype != "float32":
            model.to(getattr(torch, args.dtype))
            # What a module decides from its dtype at run time in Transformers, it decides here,
            # as a Final constant of its scripted graph (float32 graphs keep no branch for it).
            for module in model.modules():
                if hasattr(module, "export_in"):
                    module.export_in(getattr(torch, args.dtype))
            set_float_inputs_dtype(card, args.dtype)
            card["config"]["torch_dtype"] = args.dtype
        path = os.path.join(args.out, name + ".pt")
        running = half_kernels_in_float32 if args.dtype == "float16" else contextlib.nullcontext
        recorded = write_model(path, model, card, method, running)
        index["models"].append({
            "name": name,
            "family": card["family"],
            "file": name + ".pt",
            "export": method,
            "outlier_channels": outlier_channels,
            "parameters": sum(p.numel() for p in model.parameters()),
            **recorded,
        })
    if not args.only and args.dtype == "float32":
        for sub in ("foreign", "broken", "traps"):
            os.makedirs(os.path.join(args.out, sub), exist_ok=True)
        torch.manual_seed(0)
        index["foreign"] = write_foreign(os.path.join(args.out, "foreign"))
        index["broken"] = write_broken(os.path.join(args.out, "broken"))
        index["traps"] = write_traps(os.path.join(args.out, "traps"))
    # index.json last: the build treats it as the stamp of a complete zoo.
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"zoo: {len(index['models'])} models in {args.out} ({time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
