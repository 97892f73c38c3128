"""Zero-pad attention heads whose halves are smaller than a stick.

RoPE runs as a matmul on the device and rotate_half splits each head in two: the second half
must start on a stick boundary, so head_dim/2 must be a whole number of 64-value sticks. Llama-
and Mixtral-style models with 32- or 64-value heads do not compile; hf-adapters pads Granite
3.3 2B's heads from 64 to 128.
"""
name = "pad-attention-heads"
gap = "rotate_half splits head_dim inside a stick: RoPE as a matmul needs head_dim/2 >= 64"
why = "the padding is zeros in queries, keys and values and zero columns in o_proj: every score and output is the same sum with zero terms added"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["rope-head-dim aten::slice"]
remove_when = "the compiler lowers RoPE for heads smaller than two sticks"
max_ulps = 16
transform = pad_attention_heads(module="*.self_attn")
