"""Zero-pad an MLP's intermediate size to whole sticks.

An intermediate size that is not a whole number of 64-value sticks (352, 200) leaves both of
the MLP's linear layers misaligned: the up (and gate) projections' outputs and the down
projection's inputs. The MLP is found by what it computes, so Llama's gate_proj, up_proj,
down_proj, Mixtral's w1, w3, w2, BERT's intermediate.dense and output.dense and T5's wi and wo
are all padded by this one adapter.
"""
name = "pad-intermediate-size"
gap = "an MLP intermediate size that is not whole sticks: its up, gate and down projections are misaligned"
why = "the up and gate projections get zero rows and the down projection zero columns: whatever the activation makes of a padded zero is multiplied by zero, so every output is the same sum with zero terms added"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::linear"]
remove_when = "the compiler pads partial sticks itself"
max_ulps = 16
transform = pad_intermediate_size()
