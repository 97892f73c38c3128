"""Rewrite x.pow(2) as x * x.

RMSNorm (Llama, Granite, Qwen2, Mixtral, Bamba) and T5's layer norm square their input to get
the variance; the 2025 stack cannot lower aten::pow at all.
"""
import torch
from torch import Tensor

name = "pow-square-as-mul"
gap = "aten::pow cannot be lowered by the 2025 device stack"
why = "x * x is x squared: IEEE multiplication rounds once, as pow(x, 2) does"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean"]
clears = ["unsupported-op aten::pow"]
remove_when = "the profile lowers aten::pow (spyre-2026 does)"


def pattern(x: Tensor):
    return x.pow(2)


def replacement(x: Tensor):
    return x * x
