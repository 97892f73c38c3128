"""Divide an RMS norm's input by its row's largest magnitude before squaring it.

The 2026 stack lowers an RMS norm's mean of squares without the float32 upcast the model asks
for: it accumulates in fp16, whose largest value is 65504. A residual stream with outlier
channels (the massive activations of a few thousand that LLMs grow on some tokens) squares past
that range, the variance becomes inf, and the norm collapses to zeros. With s the row's largest
magnitude and y = x / s, no square exceeds 1, and the norm is the same function:

    x * rsqrt(mean(x^2) + eps) = y * rsqrt(mean(y^2) + eps / s^2)

s is clamped to at least 2^-6 so that eps / s^2 stays small and a row of zeros divides by no zero.
"""
import torch
from torch import Tensor

name = "prescale-mean-of-squares"
gap = "an RMS norm's mean of squares accumulates in fp16 on the 2026 stack: outlier channels overflow it"
why = "x * rsqrt(mean(x^2) + eps) = y * rsqrt(mean(y^2) + eps / s^2) for y = x / s and any s > 0"
models = ["*"]
profiles = ["spyre-2026"]
remove_when = "the device accumulates the norm's mean of squares in float32"
max_ulps = 16


def pattern(x: Tensor, eps: float):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def replacement(x: Tensor, eps: float):
    s = x.abs().amax(-1, keepdim=True).clamp(min=0.015625)
    y = x / s
    return y * torch.rsqrt((y * y).mean(-1, keepdim=True) + eps / (s * s))
