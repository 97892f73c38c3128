"""Pad the heads of BERT-style encoder attention to whole sticks.

BERT, RoBERTa, MPNet and ViT split the query, key and value projections into heads with a view;
three heads of 32 values fill a stick and a half, so the projections' outputs are not whole
sticks. Each head is padded at its end with zeros (zero rows in query, key and value, zero
columns in the output projection) until the heads fill whole sticks, and the view that merges
the heads back is widened. BERT names the projections self.query ..., ViT attention.query ...
"""
name = "pad-attention-heads-encoder"
gap = "attention heads that do not fill whole sticks: the q, k and v outputs are not whole sticks"
why = "the padding is zeros in queries, keys and values and zero columns in the output dense layer: every score and output is the same sum with zero terms added"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
clears = ["weight-stick-alignment aten::linear"]
remove_when = "the compiler pads partial sticks itself"
max_ulps = 16
transform = pad_attention_heads(module="*.attention", q="self.query|attention.query", k="self.key|attention.key", v="self.value|attention.value", o="output.dense", rotary="")
