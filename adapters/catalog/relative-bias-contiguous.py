"""Lay T5's relative position bias out row-major before it meets the attention scores.

T5 looks its bias up as [query, key, heads] and permutes it to [heads, query, key]: the permuted
view keeps the heads dimension innermost in memory, so its sticks run along another dimension
than the scores' and the device cannot add the two.
"""
import torch
from torch import Tensor

name = "relative-bias-contiguous"
gap = "operands sticked on different dimensions cannot be combined on the device"
why = "contiguous() copies the same values into row-major order; nothing is computed"
models = ["t5*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["stick-mismatch aten::add"]
remove_when = "the compiler inserts the layout change itself"


def pattern(values: Tensor):
    return values.permute([2, 0, 1]).unsqueeze(0)


def replacement(values: Tensor):
    return values.permute([2, 0, 1]).contiguous().unsqueeze(0)
