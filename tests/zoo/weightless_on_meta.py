"""Weightless archives traced without computing on their weights: while
`weightless_runs_on_meta()` is active, an operator that reads a weight without storage (one zero
expanded to the weight's shape, targets.py's make_weightless) or a value computed from one runs on
the meta device, and its results are again zeros expanded from one element. The tracer sits above
the dispatch mode and records the operators themselves; nothing multiplies an 8B model's zero
matrices, nor makes them dense (the vocabulary projection alone is 2 GB in float32). Stickler
runs such archives the same way (simulator/interpreter/shape_only.h)."""
import contextlib
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

STORAGELESS_ELEMENTS = 1 << 16  # as simulator/interpreter/shape_only.h


def _expanded(tensor):
    return tensor.dim() > 0 and tensor.numel() > 1 and all(s == 0 for s in tensor.stride())


def _shape(tensor):
    return [int(size) for size in tensor.shape]  # plain ints: the tracer follows torch.Size


def _on_meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty(_shape(value), dtype=value.dtype, device="meta")
    return value


def _storageless(value):
    if isinstance(value, torch.Tensor) and value.device.type == "meta":
        zero = torch.zeros((), dtype=value.dtype)
        return zero.expand(_shape(value)) if value.dim() else zero
    return value


def _dense(value):
    if isinstance(value, torch.Tensor) and (value.device.type == "meta" or _expanded(value)):
        return torch.zeros(_shape(value), dtype=value.dtype)
    return value


class _WeightlessOnMeta(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.derived = {}  # id -> weak reference: results this mode made, weight-derived shapes

    def _shape_only(self, tensor):
        made = self.derived.get(id(tensor))
        if made is not None and made() is tensor:
            return True
        return tensor.numel() >= STORAGELESS_ELEMENTS and _expanded(tensor)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [v for v in tree_flatten((args, kwargs))[0] if isinstance(v, torch.Tensor)]
        if not any(self._shape_only(t) for t in tensors):
            return func(*args, **kwargs)
        try:
            results = func(*tree_map(_on_meta, args), **tree_map(_on_meta, kwargs))
        except (RuntimeError, NotImplementedError):
            # No meta kernel, or one that reads values (item): the CPU's, on dense zeros.
            return func(*tree_map(_dense, args), **tree_map(_dense, kwargs))
        if func._schema.name.endswith("_") and args and isinstance(args[0], torch.Tensor):
            return args[0]  # in place: the values are zeros either way
        results = tree_map(_storageless, results)
        for value in tree_flatten(results)[0]:
            if isinstance(value, torch.Tensor):
                self.derived[id(value)] = weakref.ref(value)
        return results


@contextlib.contextmanager
def weightless_runs_on_meta():
    with _WeightlessOnMeta():
        yield
