"""Pad a mixture-of-experts router to whole sticks.

The router (gate) of a Mixtral-style block has one output per expert: 4, 8 or 64 values, rarely
a whole number of 64-value sticks, and a weight whose output size is not a whole number of
sticks does not compile.
"""
name = "pad-router-gate"
gap = "the router's expert count is not a whole number of sticks"
why = "the added rows are zeros whose logits are sliced off before softmax and top-k see them"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::linear"]
remove_when = "the compiler pads partial sticks itself"
transform = pad_to_sticks(role="router")
