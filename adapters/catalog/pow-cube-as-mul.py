"""Rewrite torch.pow(x, 3.0) as x * x * x.

GELU's tanh approximation (gelu_new: GPT-2 and its descendants) cubes its input; the 2025 stack
cannot lower aten::pow. This is the rewrite hf-adapters made for the same gap.
"""
import torch
from torch import Tensor

name = "pow-cube-as-mul"
gap = "aten::pow cannot be lowered by the 2025 device stack"
why = "x * x * x is the cube in two multiplications the device has; each rounds, so the result may differ from pow by an ULP or two"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean"]
clears = ["unsupported-op aten::pow"]
remove_when = "the profile lowers aten::pow (spyre-2026 does)"
max_ulps = 4


def pattern(x: Tensor):
    return torch.pow(x, 3.0)


def replacement(x: Tensor):
    return x * x * x
