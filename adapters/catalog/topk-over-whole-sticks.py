"""Run top-k over whole sticks: pad its row with -inf, which it never chooses.

The 2026 runtime's top-k kernel asserts that each row fills whole 64-value sticks; a
mixture-of-experts router choosing among 4, 8 or 60 experts aborts the device. Padding the row
with -inf to the next whole stick leaves the k largest values and their indices where they were:
a padded position is smaller than every real one, so it is never chosen.
"""
import torch
from torch import Tensor

name = "topk-over-whole-sticks"
gap = "top-k over a row that does not fill whole sticks aborts the 2026 runtime"
why = "-inf is below every value of the row, so the k largest and their indices are the same"
models = ["*"]
profiles = ["spyre-2026"]
remove_when = "the runtime's top-k kernel handles a partial stick"


def pattern(x: Tensor, k: int, dim: int, largest: bool, sorted: bool):
    values, indices = torch.topk(x, k, dim, largest, sorted)
    return values, indices


def condition(x: Tensor, k: int, dim: int, largest: bool, sorted: bool) -> bool:
    return largest and (dim == -1 or dim == x.dim() - 1) and x.size(-1) % 64 != 0


def replacement(x: Tensor, k: int, dim: int, largest: bool, sorted: bool):
    # Concatenated rather than constant_pad_nd, which the 2025 stack cannot lower; the fill
    # depends on shapes only, so it is computed once, as a constant.
    sizes = x.size()
    fill = torch.full(sizes[:-1] + [64 - sizes[-1] % 64], float("-inf"), dtype=x.dtype)
    return torch.topk(torch.cat([x, fill], -1), k, dim, largest, sorted)
