"""Take a mask's indices as nonzero's own 1-D result instead of squeezing an [n, 1] tensor.

Mixtral-style routing finds each expert's tokens with torch.nonzero(mask).squeeze(-1). When an
expert gets no token the [0, 1] result reaches the device's squeeze, and zero-length tensors
crash the device. torch.where(mask)[0] (nonzero as a tuple) is the same index list, made on
the host where nonzero runs anyway.
"""
import torch
from torch import Tensor

name = "nonzero-indices-without-squeeze"
gap = "zero-length tensors crash the device"
why = "for a 1-D mask, torch.where(mask)[0] holds exactly the indices nonzero(...).squeeze(-1) does"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["zero-length aten::squeeze"]
remove_when = "the device handles zero-length tensors"


def pattern(mask: Tensor):
    return torch.nonzero(mask).squeeze(-1)


def condition(mask: Tensor) -> bool:
    return mask.dim() == 1


def replacement(mask: Tensor):
    return torch.where(mask)[0]
