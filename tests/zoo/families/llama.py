"""Llama-style decoders (LlamaForCausalLM, and the Qwen2 and Granite variants): RMSNorm with
pow(2) and an fp32 upcast, rotary embeddings computed with sin/cos, grouped-query attention
with repeat_kv, a SiLU-gated MLP, a causal mask built with tril, Granite's multipliers and
Qwen2's q/k/v biases."""
import torch
from torch import nn

from common import (DECODE_MAX_LENGTH, StaticCacheDecoder, cache_position_ids, decode_card, example_inputs, mask_input,
                    rename_classes, static_cache_mask, token_input)

FAMILY = "llama"


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def run_decoder(layers, final_norm, causal_mask_of, input_ids, hidden_states, attention_mask, cache_position=None,
                past_keys=None, past_values=None, rotary_emb=None):
    """A decoder's layers over the embedded tokens. Without `rotary_emb` each layer computes its own
    rotary angles and takes (hidden_states, mask, position_ids[, past_key, past_value,
    cache_position]), as Llama's, GPT-J's and Cohere's do; with it the model computes them once and
    each layer takes (hidden_states, position_embeddings, mask[, ...]), as Phi's, GPT-NeoX's, Phi-3's
    and Falcon's do. With a static cache, `attention_mask` covers the cache's slots and every
    layer's keys and values come back stacked."""
    if past_keys is None:
        position_ids = torch.arange(0, input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        causal_mask = causal_mask_of(attention_mask, hidden_states.dtype)
    else:
        position_ids = cache_position_ids(attention_mask, cache_position)
        causal_mask = static_cache_mask(attention_mask, cache_position, hidden_states.dtype)
    if rotary_emb is None:
        positional = (causal_mask, position_ids)
    else:
        positional = (rotary_emb(hidden_states, position_ids), causal_mask)
    if past_keys is None:
        for layer in layers:
            hidden_states = layer(hidden_states, *positional)
        return final_norm(hidden_states)
    keys, values = [], []
    for i, layer in enumerate(layers):
        hidden_states, key, value = layer(hidden_states, *positional, past_keys[i], past_values[i], cache_position)
        keys.append(key)
        values.append(value)
    return final_norm(hidden_states), torch.stack(keys), torch.stack(values)


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config["hidden_size"]
        self.num_heads = config["num_attention_heads"]
        self.head_dim = config["head_dim"]
        self.num_key_value_heads = config["num_key_value_heads"]
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.scaling = config.get("attention_multiplier", self.head_dim ** -0.5)
        bias = config.get("attention_bias", False)
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, base=config.get("rope_theta", 10000.0))

    def _project(self, hidden_states, position_ids, bsz: int, q_len: int):
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        return query_states, key_states, value_states

    def _attend(self, query_states, key_states, value_states, attention_mask, bsz: int, q_len: int):
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states, key_states, value_states = self._project(hidden_states, position_ids, bsz, q_len)
        return self._attend(query_states, key_states, value_states, attention_mask, bsz, q_len)


class LlamaAttentionWithCache(LlamaAttention):
    """The attention of the traced decoders, which also decode: with a static cache it writes the
    tokens' keys and values at their slots, as Transformers' StaticCache does, and attends over
    every slot. (Mixtral's scripted graph takes LlamaAttention: TorchScript compiles one forward
    with one result type.)"""

    def forward(self, hidden_states, attention_mask, position_ids, past_key=None, past_value=None,
                cache_position=None):
        bsz, q_len, _ = hidden_states.size()
        query_states, key_states, value_states = self._project(hidden_states, position_ids, bsz, q_len)
        if past_key is None:
            return self._attend(query_states, key_states, value_states, attention_mask, bsz, q_len)
        past_key = past_key.index_copy(2, cache_position, key_states)
        past_value = past_value.index_copy(2, cache_position, value_states)
        attn_output = self._attend(query_states, past_key, past_value, attention_mask, bsz, q_len)
        return attn_output, past_key, past_value


LlamaAttentionWithCache.__name__ = LlamaAttentionWithCache.__qualname__ = "LlamaAttention"


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config["hidden_size"], config["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(config["hidden_size"], config["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(config["intermediate_size"], config["hidden_size"], bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = LlamaAttentionWithCache(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        self.post_attention_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        self.residual_multiplier = config.get("residual_multiplier", 1.0)

    def forward(self, hidden_states, attention_mask, position_ids, past_key=None, past_value=None,
                cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if past_key is None:
            hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        else:
            hidden_states, past_key, past_value = self.self_attn(
                hidden_states, attention_mask, position_ids, past_key, past_value, cache_position)
        hidden_states = residual + hidden_states * self.residual_multiplier
        residual = hidden_states
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
        hidden_states = residual + hidden_states * self.residual_multiplier
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        self.embedding_multiplier = config.get("embedding_multiplier", 1.0)

    def _causal_mask(self, attention_mask, dtype):
        seq_len = attention_mask.shape[-1]
        causal = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))
        keep = causal[None, None, :, :] & attention_mask[:, None, None, :].to(torch.bool)
        return torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        inputs_embeds = self.embed_tokens(input_ids) * self.embedding_multiplier
        return run_decoder(self.layers, self.norm, self._causal_mask, input_ids, inputs_embeds, attention_mask,
                           cache_position, past_keys, past_values)


class LlamaForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        self.logits_scaling = config.get("logits_scaling", 1.0)

    def forward(self, input_ids, attention_mask):
        hidden_states = self.model(input_ids, attention_mask)
        logits = self.lm_head(hidden_states)
        return logits / self.logits_scaling

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.model(input_ids, attention_mask, cache_position, past_keys, past_values)
        logits = self.lm_head(hidden_states)
        return logits / self.logits_scaling, keys, values


def _config(model_type, hidden, layers, heads, kv_heads, head_dim, vocab, intermediate, **extra):
    return dict(model_type=model_type, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=kv_heads, head_dim=head_dim, vocab_size=vocab, intermediate_size=intermediate,
                rms_norm_eps=1e-6, **extra)


VARIANTS = {
    "llama-tiny": _config("llama", 128, 2, 4, 2, 32, 1000, 256),
    "llama-hd64": _config("llama", 256, 1, 4, 2, 64, 1000, 512),
    "llama-4layer-outliers": dict(_config("llama", 128, 4, 2, 1, 64, 1000, 384), outliers=True),
    "qwen2-hd128": _config("qwen2", 256, 1, 2, 1, 128, 1024, 512, attention_bias=True, rope_theta=1000000.0),
    # Massive activations (Sun et al., 2024): the token the prompt decodes to carries a few hidden
    # channels thousands of times the others. Its prompt never holds it, so the prefill is
    # ordinary; decoding feeds it back, and an RMS norm whose mean of squares is kept in fp16
    # overflows on it (the spyre-2026 fault rmsnorm-variance-fp16: drift during decode).
    "qwen2-massive-token": _config("qwen2", 256, 1, 2, 1, 128, 1024, 512, attention_bias=True,
                                   rope_theta=1000000.0, massive_next_token=3000.0),
    # An intermediate size of 5.5 sticks: the MLP's three projections are padded by structure.
    "llama-ffn352": _config("llama", 128, 1, 2, 1, 64, 1024, 352),
    "granite-hd80": _config("granite", 160, 2, 2, 1, 80, 1000, 320, embedding_multiplier=12.0,
                            residual_multiplier=0.22, attention_multiplier=0.015625, logits_scaling=8.0),
}

_CLASS_PREFIX = {"llama": "Llama", "qwen2": "Qwen2", "granite": "Granite"}


def build(name, config):
    model = LlamaForCausalLM(config)
    prefix = _CLASS_PREFIX[config["model_type"]]
    if prefix != "Llama":
        rename_classes(model, "Llama", prefix)
    cache_shape = [config["num_hidden_layers"], 1, config["num_key_value_heads"], DECODE_MAX_LENGTH,
                   config["head_dim"]]
    model.max_length = DECODE_MAX_LENGTH
    model.cache_shape = cache_shape
    card = {
        "name": name,
        "family": config["model_type"],
        "description": f"{prefix}-style decoder (RMSNorm, rotary embeddings, grouped-query attention, SiLU MLP)",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [{"name": "logits", "kind": "logits"}],
        "decode": decode_card(config["vocab_size"], cache_shape),
        "config": config,
    }
    return model, card, "trace", config["hidden_size"]


def after_init(model, card):
    """Gives the token the decode prompt decodes to its massive activations (see VARIANTS): two
    channels of its embedding row set to massive_next_token."""
    value = card["config"].get("massive_next_token")
    if not value:
        return
    prompt = example_inputs(card["decode"]["prefill"]["inputs"])
    with torch.no_grad():
        logits, _, _ = model.prefill(*prompt)
        token = int(logits[0, -1].argmax())
        assert token not in prompt[0][0].tolist(), "the prompt holds the massive token"
        model.model.embed_tokens.weight[token, :2] = value
    card["config"]["massive_token_id"] = token
