#!/usr/bin/env python3
"""Writes the sweep target set (issue 17): many small variants of the zoo's families, the way a
model hub is a few architectures in many sizes, plus weightless archives with the geometry of
real models ("lowered only"), and index.json describing them.

Run with Debian's python3-torch:
  /usr/bin/python3 tests/zoo/targets.py --out build/targets                 # 3000 variants + real
  /usr/bin/python3 tests/zoo/targets.py --out /tmp/targets --subset 20      # for tests
  /usr/bin/python3 tests/zoo/targets.py --out build/targets --only-real

Deterministic: variant i is drawn from its own seeded generator, so --count 100 writes the first
100 of --count 3000. Re-running skips archives already present (incremental); index.json is
written last.
"""
import argparse
import contextlib
import json
import math
import multiprocessing
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

from common import describe_model, init_weights_like_transformers, seed_for, write_model  # noqa: E402
from families import bamba, bert, cohere, convnext, falcon, gpt2, gpt_neox, gptj, llama, moe, mpnet, opt, phi, phi3, t5, vit, xlm_roberta  # noqa: E402
from weightless_on_meta import weightless_runs_on_meta  # noqa: E402

REAL_DIR = "real"
REAL_LAYERS = 2          # every layer of these models has the same shapes: two show them all
REAL_SEQUENCE = 64       # tokens; ViT keeps its real image
HEAD_DIMS = [32, 48, 64, 80, 96, 128]
MAX_HIDDEN = 256
ROUND_VOCABS = [256, 512, 1000, 1024, 2048, 4096]
MAX_VOCAB = 4096
MAX_INTERMEDIATE = 512   # the MLPs dominate the archives: keeps 3000 of them a few GB


# ---------------------------------------------------------------------------------------------
# Drawing variants. Each sampler takes a seeded random.Random and returns (family, config,
# hidden, layers) with a config in the shape of the family's own VARIANTS.

def _heads(rng, max_width=MAX_HIDDEN):
    # Fewer heads more often (triangular): every width up to max_width occurs, but the
    # archives' size goes with the square of the width, and the set should stay a few GB.
    head_dim = rng.choice(HEAD_DIMS)
    most = max_width // head_dim
    return min(most, 1 + int(rng.triangular(0, most, 0))), head_dim


def _width(rng, low, step):
    """A width from low to MAX_HIDDEN in steps of `step`, narrow ones more often (as _heads)."""
    return low + step * int(rng.triangular(0, (MAX_HIDDEN - low) // step + 1, 0))


def _layers(rng, most=4):
    return rng.choices(range(1, most + 1), weights=range(most, 0, -1))[0]  # 1 to 4, shallow first


def _vocab(rng):
    # Half round sizes, half anything (mostly odd: they break stick alignment), log-uniform so
    # small vocabularies, and small archives, are as common as large ones.
    if rng.random() < 0.5:
        return rng.choice(ROUND_VOCABS)
    return int(math.exp(rng.uniform(math.log(257), math.log(MAX_VOCAB + 1))))


def _intermediate(rng, hidden):
    llama_style = 16 * math.ceil(8 * hidden / 3 / 16)
    size = rng.choice([2 * hidden, 4 * hidden, llama_style, rng.randrange(hidden, 4 * hidden + 1)])
    return min(size, MAX_INTERMEDIATE)


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def draw_bert(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    config = bert._config(hidden, layers, heads, _vocab(rng), _intermediate(rng, hidden))
    config["layer_norm_eps"] = rng.choice([1e-12, 1e-5])
    return bert, config, hidden, layers


def draw_xlm_roberta(rng):
    _, config, hidden, layers = draw_bert(rng)
    # RoBERTa's position ids start past the padding index: max positions covers 16 + 2.
    config.update(pad_token_id=1, max_position_embeddings=80, type_vocab_size=rng.choice([1, 2]))
    return xlm_roberta, config, hidden, layers


def draw_mpnet(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    config = dict(vocab_size=_vocab(rng), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=_intermediate(rng, hidden), max_position_embeddings=80,
                  relative_attention_num_buckets=32, layer_norm_eps=1e-5)
    return mpnet, config, hidden, layers


def draw_gpt2(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    config = dict(vocab_size=_vocab(rng), n_positions=64, n_embd=hidden, n_layer=layers, n_head=heads)
    return gpt2, config, hidden, layers


def draw_llama(rng):
    model_type = rng.choice(["llama", "llama", "qwen2", "granite"])
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    kv_heads = rng.choice(_divisors(heads))  # grouped-query attention
    extra = dict(rope_theta=rng.choice([10000.0, 500000.0, 1000000.0, 10000000.0]))
    if model_type == "qwen2":
        extra.update(attention_bias=True)
    if model_type == "granite":
        extra.update(embedding_multiplier=12.0, residual_multiplier=0.22, logits_scaling=rng.choice([4.0, 8.0, 16.0]),
                     attention_multiplier=rng.choice([1.0 / head_dim, head_dim ** -0.5]), tie_word_embeddings=True)
    config = llama._config(model_type, hidden, layers, heads, kv_heads, head_dim, _vocab(rng),
                           _intermediate(rng, hidden), **extra)
    config["rms_norm_eps"] = rng.choice([1e-5, 1e-6])
    return llama, config, hidden, layers


def draw_phi(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    # Phi-1.5's half, Phi-2's 0.4, GPT-NeoX's quarter: those that rotate an even number of values.
    fractions = [f for f in (0.25, 0.4, 0.5) if int(head_dim * f) % 2 == 0]
    config = phi._config(hidden, layers, heads, _vocab(rng), _intermediate(rng, hidden), rng.choice(fractions))
    return phi, config, hidden, layers


def draw_opt(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    return opt, opt._config(hidden, layers, heads, _vocab(rng), _intermediate(rng, hidden)), hidden, layers


def draw_gpt_neox(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    # Pythia's quarter, GPT-NeoX-20B's quarter of 96, StableLM's quarter and half.
    fractions = [f for f in (0.25, 0.5) if int(head_dim * f) % 2 == 0]
    config = gpt_neox._config(hidden, layers, heads, _vocab(rng), _intermediate(rng, hidden), rng.choice(fractions))
    return gpt_neox, config, hidden, layers


def draw_falcon(rng):
    # Falcon's multi-query attention: every query head, one key head and one value head in one
    # fused projection; heads of 64 as Falcon-7B, -40B and -180B have, or the other sizes drawn.
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    config = falcon._config(hidden, layers, heads, _vocab(rng), bias=rng.random() < 0.25)
    return falcon, config, hidden, layers


def draw_gptj(rng):
    # Interleaved rotary over part of each head: GPT-J-6B's quarter (64 of 256), CodeGen's half.
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    rotary_dim = int(head_dim * rng.choice([f for f in (0.25, 0.5) if int(head_dim * f) % 2 == 0]))
    config = gptj._config(hidden, layers, heads, _vocab(rng), rotary_dim, n_inner=_intermediate(rng, hidden))
    return gptj, config, hidden, layers


def draw_cohere(rng):
    # Interleaved rotary over whole heads, with grouped-query attention as Command-R's.
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    config = cohere._config(hidden, layers, heads, rng.choice(_divisors(heads)), _vocab(rng),
                            _intermediate(rng, hidden))
    config["logit_scale"] = rng.choice([0.0625, 0.125, 0.25])
    return cohere, config, hidden, layers


def draw_phi3(rng):
    # One fused qkv_proj cut by slicing over fewer key and value heads; Phi-3's rotation over whole
    # heads or Phi-4-mini's three quarters of them.
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    fractions = [f for f in (1.0, 0.75, 0.5) if int(head_dim * f) % 2 == 0]
    config = phi3._config(hidden, layers, heads, rng.choice(_divisors(heads)), _vocab(rng), _intermediate(rng, hidden),
                          partial_rotary_factor=rng.choice(fractions))
    return phi3, config, hidden, layers


def draw_bamba(rng):
    hidden, layers = _width(rng, 64, 32), 1 + _layers(rng, 3)
    mamba_heads = rng.choice([4, 6, 8])
    d_head = rng.choice([d for d in (16, 32, 64) if mamba_heads * d <= 512])
    config = bamba._config(hidden, layers, [rng.randrange(layers)], _vocab(rng), heads=mamba_heads, d_head=d_head)
    config["mamba_d_state"] = rng.choice([16, 32])
    return bamba, config, hidden, layers


def draw_vit(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng)
    image, patch = rng.choice([(32, 8), (24, 6), (32, 16), (48, 16), (28, 7), (30, 10), (32, 4)])
    config = vit._config(hidden, layers, heads, image=image, patch=patch)
    config["intermediate_size"] = _intermediate(rng, hidden)
    return vit, config, hidden, layers


def draw_convnext(rng):
    # The hub's first-stage widths: 96 (tiny, small), 128 (base); each stage twice the last, two
    # or three stages, the widest within MAX_HIDDEN.
    first = rng.choice([64, 96, 128])
    stages = 2 if first > 64 else rng.choice([2, 3])
    sizes = [first * 2 ** i for i in range(stages)]
    depths = [_layers(rng, 2) for _ in sizes]
    image = rng.choice([16, 32]) if stages == 2 else 32
    config = convnext._config(sizes, depths, image=image, patch=4, permute_norm=rng.random() < 0.5)
    return convnext, config, first, sum(depths)


def draw_t5(rng):
    hidden, layers = _width(rng, 64, 16), _layers(rng)
    heads, d_kv = _heads(rng)  # T5's inner width heads * d_kv need not be d_model
    config = dict(model_type="t5", vocab_size=_vocab(rng), d_model=hidden, d_kv=d_kv, num_heads=heads,
                  d_ff=_intermediate(rng, hidden), num_layers=layers, relative_attention_num_buckets=32,
                  relative_attention_max_distance=128, layer_norm_epsilon=1e-6)
    return t5, config, hidden, layers


def draw_moe(rng):
    heads, head_dim = _heads(rng)
    hidden, layers = heads * head_dim, _layers(rng, 3)
    experts = rng.choices([2, 4, 8], weights=[3, 2, 1])[0]
    config = dict(model_type="mixtral", hidden_size=hidden, intermediate_size=min(_intermediate(rng, hidden), 256),
                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=rng.choice(_divisors(heads)),
                  head_dim=head_dim, vocab_size=_vocab(rng), num_local_experts=experts,
                  num_experts_per_tok=rng.choice([1, 2]), rms_norm_eps=1e-5)
    return moe, config, hidden, layers


# Roughly a hub's proportions: decoders and text encoders dominate; ViT, T5 and MoE are rarer.
SAMPLERS = [(draw_llama, 30), (draw_bert, 14), (draw_xlm_roberta, 12), (draw_gpt2, 10), (draw_mpnet, 8),
            (draw_vit, 7), (draw_t5, 7), (draw_bamba, 6), (draw_moe, 6), (draw_phi, 5), (draw_opt, 5),
            (draw_gpt_neox, 4), (draw_convnext, 4), (draw_falcon, 3), (draw_gptj, 3), (draw_cohere, 3),
            (draw_phi3, 3)]
FAMILIES = {family.__name__.split(".")[-1]: family
            for family in (bamba, bert, cohere, convnext, falcon, gpt2, gpt_neox, gptj, llama, moe, mpnet, opt, phi,
                           phi3, t5, vit, xlm_roberta)}
_TAGS = {"t5": "t5-encoder", "gpt_neox": "gpt-neox"}  # the zoo's own prefixes for the others are the card family


def draw_variant(index, width):
    """Variant `index`, from a generator seeded by its index alone (independent of --count)."""
    rng = random.Random(seed_for(f"targets-{index}"))
    sampler = rng.choices([s for s, _ in SAMPLERS], weights=[w for _, w in SAMPLERS])[0]
    family, config, hidden, layers = sampler(rng)
    tag = _TAGS.get(family.FAMILY, config.get("model_type") if family is llama else family.FAMILY)
    name = f"{tag}-t{index:0{width}d}-h{hidden}-l{layers}"
    return {"name": name, "family": family.__name__.split(".")[-1], "tag": tag, "config": config,
            "file": name + ".pt", "kind": "variant"}


def subset_indices(specs, k):
    """K variant indices for tests: round-robin over the family tags (llama, qwen2 and granite
    apart; each tag's indices in a seeded order), so a small subset still covers every family."""
    rng = random.Random(seed_for("targets-subset"))
    by_family = {}
    for i, spec in enumerate(specs):
        by_family.setdefault(spec["tag"], []).append(i)
    queues = [rng.sample(indices, len(indices)) for _, indices in sorted(by_family.items())]
    chosen = []
    while len(chosen) < k and any(queues):
        for queue in queues:
            if queue and len(chosen) < k:
                chosen.append(queue.pop())
    return sorted(chosen)


# ---------------------------------------------------------------------------------------------
# Real geometries, weightless. Numbers from each model's public config.json on the HuggingFace
# hub (docs/zoo.md lists the sources).

def _real_llama(model_type, source, hidden, layers, heads, kv_heads, vocab, intermediate, rms_norm_eps, **extra):
    config = llama._config(model_type, hidden, layers, heads, kv_heads, hidden // heads, vocab, intermediate, **extra)
    config["rms_norm_eps"] = rms_norm_eps
    return {"family": llama, "source": source, "config": config}


def _real_encoder(family, source, hidden, layers, heads, vocab, intermediate, **extra):
    config = dict(bert._config(hidden, layers, heads, vocab, intermediate), **extra)
    return {"family": family, "source": source, "config": config}


_ROBERTA = dict(pad_token_id=1, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)

REAL = {
    "granite-3.3-8b": _real_llama(
        "granite", "ibm-granite/granite-3.3-8b-instruct", 4096, 40, 32, 8, 49159, 12800, rms_norm_eps=1e-5,
        rope_theta=10000000.0, attention_multiplier=0.0078125, embedding_multiplier=12.0, residual_multiplier=0.22,
        logits_scaling=16.0, tie_word_embeddings=True, max_position_embeddings=131072),
    "llama-2-7b": _real_llama(
        "llama", "meta-llama/Llama-2-7b-hf", 4096, 32, 32, 32, 32000, 11008, rms_norm_eps=1e-5,
        rope_theta=10000.0, max_position_embeddings=4096),
    "llama-3-8b": _real_llama(
        "llama", "meta-llama/Meta-Llama-3-8B", 4096, 32, 32, 8, 128256, 14336, rms_norm_eps=1e-5,
        rope_theta=500000.0, max_position_embeddings=8192),
    "mistral-7b": _real_llama(
        "llama", "mistralai/Mistral-7B-v0.1", 4096, 32, 32, 8, 32000, 14336, rms_norm_eps=1e-5,
        rope_theta=10000.0, max_position_embeddings=32768, sliding_window=4096),
    "qwen2-7b": _real_llama(
        "qwen2", "Qwen/Qwen2-7B", 3584, 28, 28, 4, 152064, 18944, rms_norm_eps=1e-6,
        rope_theta=1000000.0, attention_bias=True, max_position_embeddings=131072),
    # RoBERTa is XLM-RoBERTa's architecture under other class names: the xlm_roberta family.
    "granite-embedding-125m-english": _real_encoder(
        xlm_roberta, "ibm-granite/granite-embedding-125m-english", 768, 12, 12, 50265, 3072, **_ROBERTA),
    "granite-embedding-278m-multilingual": _real_encoder(
        xlm_roberta, "ibm-granite/granite-embedding-278m-multilingual", 768, 12, 12, 250002, 3072, **_ROBERTA),
    "multilingual-e5-large": _real_encoder(
        xlm_roberta, "intfloat/multilingual-e5-large", 1024, 24, 16, 250002, 4096, **_ROBERTA),
    # A sequence classifier on the hub; the family has no classification head, so its encoder
    # (whose pooler stands in for the classifier's dense layer: 1,025 parameters apart).
    "bge-reranker-large": _real_encoder(
        xlm_roberta, "BAAI/bge-reranker-large", 1024, 24, 16, 250002, 4096, **_ROBERTA),
    "bert-large-uncased": _real_encoder(
        bert, "google-bert/bert-large-uncased", 1024, 24, 16, 30522, 4096, max_position_embeddings=512),
    "vit-large-patch16-224": {"family": vit, "source": "google/vit-large-patch16-224",
                              "config": vit._config(1024, 24, 16, image=224, patch=16)},
}


class _FactoriesOnMeta(TorchFunctionMode):
    """Sends tensor factories (empty, zeros, randn, ...) of at least `threshold` elements to the
    meta device: a module is built with its weight matrices as shapes only, never allocated,
    while small buffers computed from the configuration (rotary frequencies, position ids) stay
    real. threshold 0 puts everything on meta."""

    FACTORIES = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn, torch.arange}

    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.FACTORIES and kwargs.get("device") is None:
            probe = func(*args, **dict(kwargs, device="meta"))  # free: shapes only
            if probe.numel() >= self.threshold:
                return probe
        return func(*args, **kwargs)


def _zero_storage(tensor):
    # One stored element, stride 0 everywhere: torch.jit.save writes a 1-element storage.
    return torch.zeros(1, dtype=tensor.dtype).expand(tensor.shape)


def make_weightless(model):
    """Replaces every parameter, and every buffer still on meta, by zeros with a 1-element
    storage. Shared parameters (tied embeddings) stay shared."""
    replaced = {}
    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is not None:
                if id(param) not in replaced:
                    replaced[id(param)] = nn.Parameter(_zero_storage(param), requires_grad=False)
                module._parameters[name] = replaced[id(param)]
        for name, buffer in list(module._buffers.items()):
            if buffer is not None and buffer.is_meta:
                if not buffer.is_floating_point():
                    raise ValueError(f"buffer {name} of {type(module).__name__} is too large to keep and not floating")
                module._buffers[name] = _zero_storage(buffer)
    return model


def tie_word_embeddings(model, config):
    """The output projection shares the input embedding when the configuration says so
    (Granite), as Transformers ties them: one tensor, counted once."""
    if config.get("tie_word_embeddings") and hasattr(model, "lm_head"):
        model.lm_head.weight = model.model.embed_tokens.weight


def full_parameter_count(family, config):
    """The real model's parameter count: the full-depth module built on the meta device."""
    with _FactoriesOnMeta(threshold=0):
        model, _, _, _ = family.build("count", dict(config))
    tie_word_embeddings(model, config)
    return sum(p.numel() for p in model.parameters())


def _set_sequence_length(card, length):
    for spec in card["inputs"]:
        if spec["kind"] in ("token_ids", "mask"):
            spec["shape"][1] = length


def build_real(name, spec):
    """The first REAL_LAYERS layers of a real geometry, weightless, with its card."""
    family, config = spec["family"], dict(spec["config"])
    depth = config["num_hidden_layers"]
    with _FactoriesOnMeta(threshold=1 << 16):
        model, card, method, _ = family.build(name, dict(config, num_hidden_layers=REAL_LAYERS))
    tie_word_embeddings(model, config)
    make_weightless(model)
    _set_sequence_length(card, REAL_SEQUENCE)
    card["description"] += f"; the geometry of {spec['source']}, weightless, first {REAL_LAYERS} layers"
    card["config"].update(num_hidden_layers=depth, lowered_layers=REAL_LAYERS, weightless=True,
                          parameters_full=full_parameter_count(family, config), source=spec["source"])
    return model, card, method


def build_variant(spec):
    family = FAMILIES[spec["family"]]
    config = dict(spec["config"])
    torch.manual_seed(seed_for(spec["name"]))
    model, card, method, _ = family.build(spec["name"], config)
    model.eval()
    tie_word_embeddings(model, config)
    init_weights_like_transformers(model)
    return model, card, method


# ---------------------------------------------------------------------------------------------
# Writing.

def index_entry(spec, model, card, method, record):
    entry = {"name": spec["name"], "family": card["family"], "file": spec["file"], "export": method,
             "kind": spec["kind"], "outlier_channels": [], "parameters": sum(p.numel() for p in model.parameters())}
    if spec["kind"] == "real":
        entry.update(source=card["config"]["source"], parameters_full=card["config"]["parameters_full"],
                     num_hidden_layers=card["config"]["num_hidden_layers"], lowered_layers=REAL_LAYERS)
    entry.update(record)
    return entry


def produce(job):
    """Writes one archive unless it is there; returns its index entry and how long it took."""
    spec, out, previous = job
    path = os.path.join(out, spec["file"])
    start = time.time()
    if os.path.exists(path) and previous is not None:
        return previous, None
    model, card, method = build_real(spec["name"], REAL[spec["name"]]) if spec["kind"] == "real" else build_variant(spec)
    running = contextlib.nullcontext
    if spec["kind"] == "real" and REAL[spec["name"]]["family"] is llama:
        # The decoders, whose vocabulary projections are gigabytes of zeros to multiply. Not the
        # encoders (their large tables are gathered from, which costs little): under a dispatch
        # mode, PyTorch 1.13's tracer asserts on ViT's cls_token.expand(batch_size, ...).
        running = weightless_runs_on_meta
    if os.path.exists(path):  # written by an interrupted run: describe it, do not export again
        with running():
            record, _ = describe_model(model, card)
        return index_entry(spec, model, card, method, record), None
    partial = path + ".partial"  # renamed when complete, so an interrupted save is never skipped
    record = write_model(partial, model, card, method, running)
    os.replace(partial, path)
    return index_entry(spec, model, card, method, record), time.time() - start


def previous_entries(out):
    """The index entries of an earlier run into `out`, by name: skipped archives keep them."""
    try:
        with open(os.path.join(out, "index.json")) as f:
            index = json.load(f)
    except (OSError, ValueError):
        return {}
    return {m["name"]: m for m in index.get("models", [])} if index.get("set") == "targets" else {}


def planned(args):
    width = max(4, len(str(max(args.count - 1, 0))))
    specs = [draw_variant(i, width) for i in range(args.count)] if not args.only_real else []
    if args.subset is not None:
        specs = [specs[i] for i in subset_indices(specs, args.subset)]
    if not args.no_real:
        specs += [{"name": name, "file": f"{REAL_DIR}/{name}.pt", "kind": "real"} for name in REAL]
    return specs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="directory to write the archives and index.json into")
    parser.add_argument("--count", type=int, default=3000, help="how many variants (default 3000)")
    parser.add_argument("--subset", type=int, metavar="K", help="only K of the variants, every family represented (tests)")
    real = parser.add_mutually_exclusive_group()
    real.add_argument("--only-real", action="store_true", help="only the real geometries")
    real.add_argument("--no-real", action="store_true", help="no real geometries")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes for the variants")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args()

    specs = planned(args)
    if args.list:
        for spec in specs:
            print(f"{spec['name']:44s} {spec['kind']:8s} {spec['file']}")
        return 0

    os.makedirs(os.path.join(args.out, REAL_DIR), exist_ok=True)
    previous = previous_entries(args.out)
    jobs = [(spec, args.out, previous.get(spec["name"])) for spec in specs]
    variants = [job for job in jobs if job[0]["kind"] == "variant"]
    reals = [job for job in jobs if job[0]["kind"] == "real"]
    start = time.time()
    torch.set_num_threads(1)  # tiny models: threads cost more than they give; --jobs is the parallelism
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            results = list(pool.imap(produce, variants, chunksize=8))
    else:
        results = [produce(job) for job in variants]
    written = [seconds for _, seconds in results if seconds is not None]
    print(f"targets: {len(written)} of {len(variants)} variants written "
          f"({sum(written) / max(len(written), 1) * 1000:.0f} ms each)")
    # The real geometries one at a time, with every core (what reads their weights runs on
    # shapes, weightless_on_meta.py; the rest is small).
    torch.set_num_threads(os.cpu_count() or 1)
    for job in reals:
        entry, seconds = produce(job)
        results.append((entry, seconds))
        if seconds is not None:
            size = os.path.getsize(os.path.join(args.out, entry["file"]))
            print(f"  {entry['name']:40s} {seconds:6.1f} s {size / 1024:8.1f} KiB")

    index = {"version": 1, "set": "targets", "torch": torch.__version__, "count": args.count,
             "subset": args.subset, "models": [entry for entry, _ in results]}
    # index.json last: a sweep treats it as the stamp of a complete set.
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"targets: {len(index['models'])} models in {args.out} ({time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
