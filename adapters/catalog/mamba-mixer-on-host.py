"""Run Mamba2 mixers on the host.

Bamba's mixer layers are built of the operators the 2025 device stack could not lower (exp,
softplus, constant_pad_nd, roll, slice_scatter, select_scatter, copy_; DeepView's seven for
Bamba-9B) and split their projection at offsets inside sticks. Until the stack lowers them, the
mixers run on the CPU and the attention layers, norms and MLPs on the device.
"""
name = "mamba-mixer-on-host"
gap = "the Mamba2 mixer's scan operators cannot be lowered by the 2025 device stack"
why = "the same graph runs, the mixers on the CPU in float32: nothing is rewritten"
models = ["bamba*"]
profiles = ["spyre-2025", "spyre-2025-clean"]
clears = ["unsupported-op", "stick-misaligned-offset", "weight-stick-alignment"]
remove_when = "the profile lowers exp, softplus, constant_pad_nd, roll and the scatters (spyre-2026 does)"
transform = run_on_host(module="*.mamba")
