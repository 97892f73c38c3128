"""Pad the heads of GPT-2 attention to whole sticks.

GPT-2 computes query, key and value with one projection (c_attn) and splits its output in
three; heads whose sizes add up to part of a stick leave both the projection's outputs and the
split's offsets inside sticks. Each head of each part is padded at its end with zeros, the split
and the views into and out of heads follow, c_proj reads the padding with zero rows, and the
attention scale keeps the real head size.
"""
name = "pad-attention-heads-gpt2"
gap = "attention heads smaller than a stick: the q, k and v outputs are not whole sticks"
why = "the padding is zeros in queries, keys and values and zero rows in c_proj: every score and output is the same sum with zero terms added"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::addmm", "stick-misaligned-offset aten::split"]
remove_when = "the compiler pads partial sticks itself"
max_ulps = 16
transform = pad_attention_heads(module="*.attn", qkv="c_attn", o="c_proj", rotary="")
