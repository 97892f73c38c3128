"""Build the additive attention mask with a fill value the device's formats can hold.

BERT, XLM-RoBERTa and MPNet build their mask as (1 - mask) * finfo(float32).min. On the device
-3.4e38 overflows every 16-bit format to -inf, and 0 * -inf is NaN for every kept position. The
host-side fix hf-adapters uses: fill with float16's lowest value instead.
"""
import torch
from torch import Tensor

name = "mask-fill-in-device-range"
gap = "finfo(float32).min overflows 16-bit formats: the mask becomes NaN on the device"
why = "after softmax a score lowered by 65504 and one lowered by 3.4e38 are both exactly 0 in float32"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
remove_when = "the model builds its mask with the device's own minimum, or the device saturates instead of overflowing"


def pattern(mask: Tensor, fill: Tensor):
    return torch.rsub(mask, 1.0) * fill


def condition(mask: Tensor, fill: Tensor) -> bool:
    return fill.numel() == 1 and float(fill) < -65504.0


def replacement(mask: Tensor, fill: Tensor):
    return torch.rsub(mask, 1.0) * -65504.0
