#!/usr/bin/env python3
"""Generates models of realistic geometry for the benchmarks, with the zoo's own families (so
they are written as the zoo's are, and the catalog's adapters meet the same structure).

Not part of the test run, never committed: the archives are hundreds of megabytes.

  /usr/bin/python3 bench/models/generate_large.py --out build/bench-models [--only NAME...]
      [--dtype bfloat16]   # saved as checkpoints are served: NAME-bfloat16.pt
  /usr/bin/python3 bench/models/generate_large.py --out build/bench-models --only llama-8b \
      --dtype bfloat16     # Llama-3-8B's geometry: 16 GB on disk, about 18 GB of memory to make
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "zoo"))

import torch  # noqa: E402

from common import init_weights_like_transformers, mask_input, seed_for, set_float_inputs_dtype, token_input, write_model  # noqa: E402
from families import llama  # noqa: E402

# name: (family module, config, tokens)
MODELS = {
    # A Llama-style decoder the size of TinyLlama's geometry cut to 8 layers: hidden 2048, 32
    # heads of 64, 4 KV heads, intermediate 5632, vocabulary 32000; about 480M parameters.
    "llama-480m": (llama, llama._config("llama", 2048, 8, 32, 4, 64, 32000, 5632), 128),
    # A size CI can afford, for tests/zoo/memory_test.py: hidden 1024, 4 layers, 8 heads of 128
    # (no rotary head padding on spyre-2026), 4 KV heads, intermediate 2816; about 110M parameters.
    "llama-110m": (llama, llama._config("llama", 1024, 4, 8, 4, 128, 32000, 2816), 128),
    # Llama-3-8B's geometry: hidden 4096, 32 layers, 32 heads of 128, 8 KV heads, intermediate
    # 14336, vocabulary 128256; 8.0B parameters, 16 GB in bfloat16. Only with --dtype bfloat16
    # (built in bfloat16 from the start: a float32 model would take 32 GB) and only when named.
    "llama-8b": (llama, llama._config("llama", 4096, 32, 32, 8, 128, 128256, 14336, rope_theta=500000.0), 128),
}
# Generated only when named with --only: minutes and tens of gigabytes.
ON_REQUEST = {"llama-8b"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                        help="the weights' dtype; a 16-bit model is written as NAME-DTYPE.pt")
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    os.makedirs(args.out, exist_ok=True)
    for name, (family, config, tokens) in MODELS.items():
        if (args.only and name not in args.only) or (not args.only and name in ON_REQUEST):
            continue
        if name in ON_REQUEST and args.dtype == "float32":
            print(f"{name}: only in a 16-bit dtype (--dtype bfloat16)", file=sys.stderr)
            return 2
        suffix = "" if args.dtype == "float32" else "-" + args.dtype
        path = os.path.join(args.out, name + suffix + ".pt")
        if os.path.exists(path):
            print(f"{path}: present")
            continue
        start = time.time()
        torch.manual_seed(seed_for(name))
        if name in ON_REQUEST:
            # Parameters and buffers made in the 16-bit dtype (the rotary frequencies computed in
            # it too, not rounded from float32), so that no float32 copy is ever held.
            torch.set_default_dtype(getattr(torch, args.dtype))
        model, card, method, _ = family.build(name, dict(config))
        torch.set_default_dtype(torch.float32)
        card["inputs"] = [token_input("input_ids", 1, tokens, config["vocab_size"]), mask_input("attention_mask", 1, tokens)]
        model.eval()
        init_weights_like_transformers(model)
        if args.dtype != "float32":
            model.to(getattr(torch, args.dtype))
            set_float_inputs_dtype(card, args.dtype)
            card["config"]["torch_dtype"] = args.dtype
        partial = path + ".partial"
        write_model(partial, model, card, method)
        os.replace(partial, path)
        params = sum(p.numel() for p in model.parameters())
        print(f"{path}: {params / 1e6:.0f}M parameters in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
