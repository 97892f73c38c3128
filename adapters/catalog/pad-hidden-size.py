"""Pad a hidden size that is not a whole number of sticks.

Every weight that reads or writes the residual stream has the hidden size as a dimension; the
device needs it to fill whole 64-value sticks. Zero padding keeps the added positions zero all
the way through an RMSNorm model (norm weights are padded with zeros, and the variance is
divided by the real hidden size).
"""
name = "pad-hidden-size"
gap = "the hidden size is not a whole number of sticks"
why = "the padded positions hold zeros that no norm, projection or output ever counts"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::linear"]
remove_when = "the compiler pads partial sticks itself"
max_ulps = 16
transform = pad_hidden_size()
