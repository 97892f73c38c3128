"""float16 models on a CPU whose PyTorch (1.13) lacks most float16 kernels (addmm, layer_norm,
softmax, gelu, ...): while `half_kernels_in_float32()` is active, an operator that has no float16
kernel computes in float32 from its float16 inputs and rounds its results back to float16, as a GPU
kernel computes float16 in float32. Tracing records the operator itself (the tracer sits above the
dispatch mode), so the archive is the float16 model as a GPU would have traced it; only its example
run on this machine goes through float32."""
import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map


def _widen(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float16:
        return value.float()
    return value


def _narrow(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.half()
    return value


class _HalfInFloat32(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            return func(*args, **kwargs)
        except RuntimeError as error:
            if "not implemented for 'Half'" not in str(error):
                raise
        # Only operators that refused float16 get here: their float16 results are what a float16
        # kernel would return, so every float32 result is rounded back.
        results = tree_map(_narrow, func(*tree_map(_widen, args), **tree_map(_widen, kwargs)))
        if func._schema.name.endswith("_") and args and isinstance(args[0], torch.Tensor):
            args[0].copy_(results if isinstance(results, torch.Tensor) else results[0])
            return args[0]
        return results


@contextlib.contextmanager
def half_kernels_in_float32():
    with _HalfInFloat32():
        yield
