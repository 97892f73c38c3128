"""Shared pieces of the model zoo: HF-style activations, export, model cards, outliers.

The families in families/ are written the way HuggingFace Transformers writes its models
(module names, class names, code patterns), small enough to run in milliseconds.
"""
import contextlib
import json
import math
import zlib

import torch
from torch import nn


class NewGELUActivation(nn.Module):
    """GPT-2's tanh approximation of GELU, with the torch.pow(x, 3.0) that older device stacks
    could not lower."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class GELUActivation(nn.Module):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(input)


class SiLUActivation(nn.SiLU):
    pass


def seed_for(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def token_input(name, batch, seq, vocab, dtype="int64"):
    return {"name": name, "shape": [batch, seq], "dtype": dtype, "kind": "token_ids", "vocab_size": vocab}


def mask_input(name, batch, seq):
    return {"name": name, "shape": [batch, seq], "dtype": "int64", "kind": "mask"}


# The decode interface (docs/model-card.md "Decoding"): a prompt of 16 tokens left-padded to 64,
# as Spyre's stack pads prompts to a multiple of 64, and a static cache of 128 slots.
DECODE_PROMPT = 64
DECODE_PROMPT_TOKENS = 16
DECODE_MAX_LENGTH = 128


def static_cache_mask(attention_mask, cache_position, dtype):
    """The additive attention mask over a static cache's slots: slots at or before each token's
    own, among those `attention_mask` keeps. A left-padded prompt's padding rows see nothing:
    they attend to every slot instead, as Transformers' _unmask_unattended does, so that no row
    of the softmax is empty."""
    slots = torch.arange(attention_mask.shape[-1], dtype=torch.long)
    keep = (slots[None, :] <= cache_position[:, None])[None, None, :, :]
    keep = keep & attention_mask[:, None, None, :].to(torch.bool)
    keep = keep | ~keep.any(dim=-1, keepdim=True)
    return torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)


def cache_position_ids(attention_mask, cache_position):
    """A token's position counts the slots kept before it: left padding does not count."""
    return (attention_mask.cumsum(-1) - 1).clamp(min=0).index_select(1, cache_position)


class StaticCacheDecoder:
    """The decode interface's prefill (docs/model-card.md "Decoding") for a causal LM with a
    decode_step(input_ids, attention_mask, cache_position, past_keys, past_values) and the
    `max_length` and `cache_shape` its build sets: a left-padded prompt fills a static cache of
    max_length slots; each step writes one token's keys and values at its slot."""

    def prefill(self, input_ids, attention_mask):
        batch, prompt = input_ids.shape
        slots = torch.zeros(batch, self.max_length - prompt, dtype=attention_mask.dtype)
        cache_mask = torch.cat((attention_mask, slots), dim=-1)
        cache_position = torch.arange(prompt, dtype=torch.long)
        empty = torch.zeros(self.cache_shape, dtype=self.lm_head.weight.dtype)
        return self.decode_step(input_ids, cache_mask, cache_position, empty, empty)


def causal_lm_card(model, name, family, description, config, kv_heads, head_dim):
    """The card of a StaticCacheDecoder taking 16 tokens and their mask and returning logits,
    with its decode section; gives `model` the cache its prefill builds
    ([layers, batch, kv_heads, max_length, head_dim])."""
    cache_shape = [config["num_hidden_layers"], 1, kv_heads, DECODE_MAX_LENGTH, head_dim]
    model.max_length = DECODE_MAX_LENGTH
    model.cache_shape = cache_shape
    return {
        "name": name,
        "family": family,
        "description": description,
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [{"name": "logits", "kind": "logits"}],
        "decode": decode_card(config["vocab_size"], cache_shape),
        "config": config,
    }


def image_encoder_card(name, family, description, config):
    """The card of an image encoder taking one square image of config's size and channels and
    returning its last hidden state and a pooled embedding."""
    size = config["image_size"]
    return {
        "name": name,
        "family": family,
        "description": description,
        "inputs": [float_input("pixel_values", [1, config["num_channels"], size, size])],
        "outputs": [{"name": "last_hidden_state", "kind": "hidden_states"},
                    {"name": "pooler_output", "kind": "embeddings"}],
        "config": config,
    }


def decode_card(vocab, cache_shape, max_length=DECODE_MAX_LENGTH):
    """The card's decode section for a decoder with `prefill` and `decode_step` methods whose
    caches are [layers, batch, kv_heads, max_length, head_dim]."""
    padding = DECODE_PROMPT - DECODE_PROMPT_TOKENS
    outputs = [{"name": "logits", "kind": "logits"}, {"name": "past_keys", "kind": "past_keys"},
               {"name": "past_values", "kind": "past_values"}]
    cache = [{"name": name, "shape": list(cache_shape), "dtype": "float32", "kind": name}
             for name in ("past_keys", "past_values")]
    return {
        "max_length": max_length,
        "prefill": {
            "method": "prefill",
            "inputs": [token_input("input_ids", 1, DECODE_PROMPT, vocab),
                       dict(mask_input("attention_mask", 1, DECODE_PROMPT), left_padding=padding)],
            "outputs": outputs,
        },
        "step": {
            "method": "decode_step",
            "inputs": [token_input("input_ids", 1, 1, vocab),
                       dict(mask_input("attention_mask", 1, max_length), left_padding=padding),
                       {"name": "cache_position", "shape": [1], "dtype": "int64", "kind": "cache_position",
                        "start": DECODE_PROMPT}] + cache,
            "outputs": outputs,
        },
    }


def set_float_inputs_dtype(card, dtype):
    """Gives the card's float32 inputs, the decode interface's included (its caches), `dtype`:
    a 16-bit model takes and returns 16-bit values."""
    decode = card.get("decode", {})
    for spec in card["inputs"] + [s for g in ("prefill", "step") for s in decode.get(g, {}).get("inputs", [])]:
        if spec["dtype"] == "float32":
            spec["dtype"] = dtype


def float_input(name, shape, low=-1.0, high=1.0):
    return {"name": name, "shape": list(shape), "dtype": "float32", "kind": "float", "range": [low, high]}


_DTYPES = {"int64": torch.int64, "int32": torch.int32, "float32": torch.float32, "bfloat16": torch.bfloat16,
           "float16": torch.float16, "bool": torch.bool}


def example_inputs(inputs, seed=0):
    """Example tensors for a card's inputs, drawn exactly as Stickler's C++ loader draws them
    (same CPU generator, seed and order), so both sides run the model on the same values."""
    gen = torch.Generator().manual_seed(seed)
    values = []
    for spec in inputs:
        dtype = _DTYPES[spec["dtype"]]
        if spec["kind"] == "token_ids":
            values.append(torch.randint(0, spec["vocab_size"], spec["shape"], generator=gen).to(dtype))
        elif spec["kind"] == "mask":
            mask = torch.ones(spec["shape"], dtype=dtype)
            mask[..., : spec.get("left_padding", 0)] = 0
            values.append(mask)
        elif spec["kind"] == "cache_position":
            start = spec.get("start", 0)
            values.append(torch.arange(start, start + spec["shape"][-1], dtype=dtype).expand(spec["shape"]).contiguous())
        else:
            low, high = spec.get("range", [-1.0, 1.0])
            values.append((torch.rand(spec["shape"], generator=gen, dtype=torch.float64) * (high - low) + low).to(dtype))
    return tuple(values)


def add_outliers(model, hidden_size, seed, count=2, embedding_scale=60.0, norm_scale=8.0):
    """Gives weights the structure of trained models: a few hidden channels carry activations
    far larger than the rest (embedding columns and norm gains scaled up on those channels)."""
    gen = torch.Generator().manual_seed(seed + 1)
    channels = torch.randperm(hidden_size, generator=gen)[:count]
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, nn.Embedding) and module.embedding_dim == hidden_size:
                module.weight[:, channels] *= embedding_scale
            weight = getattr(module, "weight", None)
            is_norm = isinstance(module, nn.LayerNorm) or type(module).__name__.endswith("RMSNorm") or type(module).__name__.endswith("LayerNorm")
            if is_norm and isinstance(weight, torch.Tensor) and weight.dim() == 1 and weight.numel() == hidden_size:
                weight[channels] *= norm_scale
    return [int(c) for c in channels]


def record_module_calls(model, inputs):
    """The order in which modules are entered when the eager model runs: the C++ interpreter's
    module boundaries must come in the same order. A module registered under two names (T5's
    shared embedding is also encoder.embed_tokens) is named by the path it is called through."""
    calls = []
    stack = []
    handles = []
    aliases = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if name:
            aliases.setdefault(module, []).append(name)

    def enter(module, args):
        parent = stack[-1] if stack else ""
        names = aliases[module]
        called_as = next((n for n in names if n.rpartition(".")[0] == parent), None)
        called_as = called_as or next((n for n in names if n.startswith(parent + ".")), names[0])
        calls.append(called_as)
        stack.append(called_as)

    def leave(module, args, output):
        stack.pop()

    for module in aliases:
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    with torch.no_grad():
        model(*inputs)
    for handle in handles:
        handle.remove()
    return calls


def flatten_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        out = []
        for item in value:
            out.extend(flatten_tensors(item))
        return out
    return []


def export(model, inputs, method, decode=None):
    with torch.no_grad():
        if method == "trace" and decode:
            # One archive, three traced methods sharing the weights; a module called with other
            # arguments in prefill or decode_step gets forward1, forward2 beside its forward.
            methods = {"forward": inputs}
            for graph in ("prefill", "step"):
                methods[decode[graph]["method"]] = example_inputs(decode[graph]["inputs"])
            return torch.jit.trace_module(model, methods, check_trace=False)
        if method == "trace":
            return torch.jit.trace(model, inputs, check_trace=False)
        if method == "script":
            return torch.jit.script(model)
    raise ValueError(method)


def describe_model(model, card):
    """What the index records of a model: the module calls, output shapes and input sums of one
    eager run on the card's example inputs. Returns (record, inputs)."""
    model.eval()
    inputs = example_inputs(card["inputs"])
    calls = record_module_calls(model, inputs)
    with torch.no_grad():
        outputs = flatten_tensors(model(*inputs))
    record = {
        "module_calls": calls,
        "output_shapes": [list(t.shape) for t in outputs],
        "input_sums": [float(t.double().sum()) for t in inputs],
    }
    return record, inputs


def write_model(path, model, card, method, running=contextlib.nullcontext):
    """Exports `model` to a TorchScript archive with its card; returns what the index records.
    `running` is the context its example runs and the export happen in (not the save)."""
    with running():
        record, inputs = describe_model(model, card)
        exported = export(model, inputs, method, card.get("decode"))
    torch.jit.save(exported, path, _extra_files={"stickler/model.json": json.dumps(card, indent=2)})
    return record


_renamed_classes = {}


def rename_classes(model, old_prefix, new_prefix):
    """Gives each `old_prefix*` module the `new_prefix*` class name, as Transformers names the
    classes it copies from one model into another (BertLayer -> XLMRobertaLayer)."""
    for module in model.modules():
        cls = type(module)
        if cls.__name__.startswith(old_prefix):
            key = (cls, new_prefix)
            if key not in _renamed_classes:
                name = new_prefix + cls.__name__[len(old_prefix):]
                module_name = "transformers.models." + new_prefix.lower() + ".modeling_" + new_prefix.lower()
                _renamed_classes[key] = type(name, (cls,), {"__module__": module_name, "__qualname__": name})
            module.__class__ = _renamed_classes[key]


def init_weights_like_transformers(model, std=0.02):
    """Transformers' _init_weights: normal(0, initializer_range) for linear, convolution and
    embedding weights, zero biases and padding rows; norms keep their ones."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                module.weight.normal_(mean=0.0, std=std)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.normal_(mean=0.0, std=std)
                if module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
