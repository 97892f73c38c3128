"""Zero-pad attention heads that do not fill whole sticks.

Two gaps, one padding. RoPE runs as a matmul on the device and rotate_half splits each head in
two: the second half must start on a stick boundary, so head_dim/2 must be a whole number of
64-value sticks (Llama- and Mixtral-style heads of 32 or 64 values do not compile; hf-adapters
pads Granite 3.3 2B's heads from 64 to 128). Without RoPE, the heads together must fill whole
sticks: three heads of 32 (BERT, ViT, MPNet at hidden 96) or one of 80 (GPT-2's fused c_attn)
leave the projections' outputs, and a fused projection's split, inside sticks.

Interleaved rotary (GPT-J's rotate_every_two, Cohere's): each pair of values turns together,
taken with strided slices, which no stick layout reads. The rotated rows of each query and key
head are permuted, pairs' first values then their second ones, and the rotation becomes
rotate_half's on those halves, padded as above where they do not fill sticks.

The transform finds the attention by what it computes, not by its modules' names: Llama's
q_proj ... o_proj, BERT's self.query ... output.dense, MPNet's q ... o and GPT-2's fused c_attn
... c_proj alike. Attention whose heads already fit is left alone.
"""
name = "pad-attention-heads"
gap = "attention heads that do not fill whole sticks: rotate_half splits head_dim inside a stick (RoPE as a matmul needs head_dim/2 >= 64), or the q, k and v outputs are not whole sticks; interleaved rotary's strided slices"
why = "the padding is zeros in queries, keys and values and zero columns in the output projection: every score and output is the same sum with zero terms added"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["rope-head-dim aten::slice", "weight-stick-alignment aten::linear", "weight-stick-alignment aten::addmm", "stick-misaligned-offset aten::split", "stick-misaligned-offset aten::slice", "stick-strided-slice aten::slice", "zero-length aten::slice"]
remove_when = "the compiler lowers RoPE for heads smaller than two sticks and pads partial sticks itself"
max_ulps = 16
transform = pad_attention_heads()
