"""Pad the projections that produce logits to whole sticks the cores can split.

The device lays a weight's output dimension out in 64-value sticks and splits them across cores
in slices of the stick count's largest prime factor. Two kinds of linear layer produce logits
whose count is rarely a whole number of sticks:
- the vocabulary projection (lm_head, whatever it is called): GPT-2's 50257 does not compile, and
  151936 over a hidden size of 4096 (2374 = 2 x 1187 sticks) overflows the per-core span;
- a mixture-of-experts router: one logit per expert, 4, 8 or 64 of them.
"""
name = "pad-logits-to-sticks"
gap = "a logits projection (vocabulary or MoE router) is not a whole number of sticks, or its per-core slice overflows the span"
why = "the added rows are zeros whose logits are sliced off before softmax, top-k or sampling see them"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::linear", "core-span aten::linear"]
remove_when = "the compiler pads partial sticks and balances slices itself"
transform = pad_to_sticks(role="logits|router")
