"""Precompute RoPE's cos and sin tables on the host.

sin and cos fall back to the CPU on the device, so every forward sends the frequencies to the
host and the tables back (FACTS.md: RoPE is precomputed into rotation tables). The tables depend
only on the rotary frequencies and the positions 0..n-1, fixed by the input's shape.
"""
name = "precompute-rotary-tables"
gap = "sin and cos are CPU fallbacks: each forward round-trips the rotary tables"
why = "the tables are the module's own outputs for the compiled shape, computed once instead of every time"
models = ["*"]
profiles = ["spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"]
remove_when = "the device lowers sin and cos"
transform = precompute_tables(module="*.rotary_emb")
