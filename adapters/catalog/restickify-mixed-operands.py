"""Copy a permuted operand into row-major order before a pointwise operator meets it.

A permute keeps the memory order of its input, so the permuted view is sticked on another
logical dimension than a row-major partner, and the device cannot combine the two ("no
mechanism to resolve stick incompatibility"). ConvNeXt permutes each layer's MLP output back to
NCHW and adds it to the NCHW residual; T5 looks its position bias up as [query, key, heads] and
permutes it to [heads, query, key] before adding it to the scores. The transform finds every
such operator by the operands' layouts, whatever the model calls them.
"""
name = "restickify-mixed-operands"
gap = "operands sticked on different dimensions cannot be combined on the device"
why = "contiguous() copies the same values into row-major order; nothing is computed"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["stick-mismatch"]
remove_when = "the compiler inserts the layout change itself"
transform = restickify()
