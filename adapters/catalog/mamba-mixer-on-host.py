"""Run Mamba2 mixers on the host.

Bamba's mixer layers are built of the operators the 2025 device stack could not lower (exp,
softplus, constant_pad_nd, roll, slice_scatter, select_scatter, copy_; DeepView's seven for
Bamba-9B). The 2026 stack lowers those operators, but not the mixer's layout: its projection is
split at offsets inside sticks (the SSM state and dt widths), its chunked scan multiplies values
sticked on different dimensions, and it slices the last position of each chunk out of a stick.
Until the stack re-lays those out, the mixers run on the CPU and the attention layers, norms and
MLPs on the device.
"""
name = "mamba-mixer-on-host"
gap = "the Mamba2 mixer cannot be lowered: its scan's operators (2025) or its scan's layout (2025 and 2026)"
why = "the same graph runs, the mixers on the CPU in float32: nothing is rewritten"
models = ["bamba*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["unsupported-op", "stick-misaligned-offset", "weight-stick-alignment", "stick-mismatch"]
remove_when = "the profile lowers the scan's operators and re-lays out its split, its chunked products and its last-position slice"
transform = run_on_host(module="*.mamba")
