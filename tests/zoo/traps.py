"""Models built to stay blocked on the device whatever the catalog learns.

The sweep's tests need a model that is blocked before and after its adapters by a layout rule:
their categories, their diffs between two nights, their reports. A zoo model cannot serve, since
the catalog's next adapter may bring it up. Each trap here carries a trait no real architecture
has, so the catalog, which learns from real families, has no reason to ever cover it; beside it
are traits the catalog does fix, so that adapters still apply to the trap.
"""
import os

import torch

from common import init_weights_like_transformers, seed_for, write_model
from families import llama


class FeaturesReversed(torch.nn.Module):
    """Wraps an MLP and reverses its output's features: a flip along the stick dimension, which
    the 2026 stack cannot lower (aten::flip is not_on_stick_dim) and no padding moves."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x):
        return torch.flip(self.mlp(x), [-1])


def write_traps(out_dir):
    """Writes the traps into out_dir; returns their index entries."""
    name = "flipped-features"
    torch.manual_seed(seed_for(name))
    # llama-tiny's geometry: heads of 32 and a vocabulary of 1000 are padded by the catalog.
    model, card, method, _ = llama.build(name, dict(llama.VARIANTS["llama-tiny"]))
    model.eval()
    init_weights_like_transformers(model)
    layer = model.model.layers[0]
    layer.mlp = FeaturesReversed(layer.mlp)
    card["name"] = name
    card["family"] = "trap"
    card["description"] = ("Llama-style decoder whose first MLP reverses its output's features: "
                           "blocked on spyre-2026 by a flip along the stick dimension")
    del card["decode"]
    path = os.path.join(out_dir, name + ".pt")
    write_model(path, model, card, method)
    return [{"name": name, "file": "traps/" + name + ".pt", "blocked_by": "flip along the stick dimension"}]
