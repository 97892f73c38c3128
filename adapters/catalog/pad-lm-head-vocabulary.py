"""Pad the vocabulary of lm_head to whole sticks the cores can split.

The device lays a weight's output dimension out in 64-value sticks and splits them across cores
in slices of the stick count's largest prime factor; a vocabulary that is not a whole number of
sticks (GPT-2's 50257) does not compile, and one whose slice overflows the per-core span (151936
over a hidden size of 4096: 2374 = 2 x 1187 sticks) does not either.
"""
name = "pad-lm-head-vocabulary"
gap = "lm_head's vocabulary is not a whole number of sticks, or its per-core slice overflows the span"
why = "the added rows are zeros whose logits are sliced off before anything reads them"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::linear", "core-span aten::linear"]
remove_when = "the compiler pads partial sticks and balances slices itself"
transform = pad_to_sticks(role="logits")
