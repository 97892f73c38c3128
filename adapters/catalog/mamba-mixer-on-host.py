"""Run Mamba2 mixers on the host.

Bamba's mixer layers are built of the operators the 2025 device stack could not lower (exp,
softplus, constant_pad_nd, roll, slice_scatter, select_scatter, copy_; DeepView's seven for
Bamba-9B) and split their projection at offsets inside sticks. The 2026 stack lowers the
operators, but the layout is still the mixer's own: in_proj's output (two intermediate sizes,
the groups' B and C, one value per head: 552 for the zoo's bamba-tiny) is not whole sticks, is
split at offsets inside them, and the scan multiplies tensors sticked on different dimensions.
Until the stack (or a rewrite of the mixer) lays them out, the mixers run on the CPU and the
attention layers, norms and MLPs on the device.
"""
name = "mamba-mixer-on-host"
gap = "the Mamba2 mixer's scan operators (2025) and its projection's layout (2025 and 2026) cannot be lowered"
why = "the same graph runs, the mixers on the CPU in float32: nothing is rewritten"
models = ["bamba*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["unsupported-op", "stick-misaligned-offset", "weight-stick-alignment", "stick-mismatch"]
remove_when = "the profile lowers the scan's operators (spyre-2026 does) and a rewrite lays in_proj's pieces out on whole sticks"
transform = run_on_host(module="*.mamba")
