"""Phi-3 decoders (Phi3ForCausalLM, as Transformers' modeling_phi3 writes Phi-3-mini and -medium):
one fused qkv_proj whose queries, keys and values are cut apart by slicing its last dimension at
the query and key widths, grouped-query (or multi-query) attention over fewer key and value heads,
rotary embeddings from one model-level table (partial when partial_rotary_factor < 1, as in
Phi-4-mini), an o_proj, a fused gate_up_proj chunked in two for the SiLU-gated MLP, RMSNorm, and an
untied lm_head."""
import torch
from torch import nn

from common import StaticCacheDecoder, causal_lm_card
from families.gpt_neox import apply_rotary_pos_emb
from families.llama import LlamaModel, LlamaRMSNorm, LlamaRotaryEmbedding, repeat_kv, run_decoder

FAMILY = "phi3"


class Phi3RMSNorm(LlamaRMSNorm):
    pass


class Phi3RotaryEmbedding(LlamaRotaryEmbedding):
    pass


class Phi3MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_up_proj = nn.Linear(config["hidden_size"], 2 * config["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(config["intermediate_size"], config["hidden_size"], bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * self.activation_fn(gate)
        return self.down_proj(up_states)


class Phi3Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config["num_attention_heads"]
        self.head_dim = config["hidden_size"] // self.num_attention_heads
        self.num_key_value_heads = config["num_key_value_heads"]
        self.num_key_value_groups = self.num_attention_heads // self.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        op_size = self.num_attention_heads * self.head_dim + 2 * (self.num_key_value_heads * self.head_dim)
        self.o_proj = nn.Linear(self.num_attention_heads * self.head_dim, config["hidden_size"], bias=False)
        self.qkv_proj = nn.Linear(config["hidden_size"], op_size, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        qkv = self.qkv_proj(hidden_states)
        query_pos = self.num_attention_heads * self.head_dim
        query_states = qkv[..., :query_pos]
        key_states = qkv[..., query_pos: query_pos + self.num_key_value_heads * self.head_dim]
        value_states = qkv[..., query_pos + self.num_key_value_heads * self.head_dim:]
        query_states = query_states.view(hidden_shape).transpose(1, 2)
        key_states = key_states.view(hidden_shape).transpose(1, 2)
        value_states = value_states.view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key is not None:
            key_states = past_key = past_key.index_copy(2, cache_position, key_states)
            value_states = past_value = past_value.index_copy(2, cache_position, value_states)
        # eager_attention_forward
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = (query_states @ key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = (attn_weights @ value_states).transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class Phi3DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = Phi3Attention(config)
        self.mlp = Phi3MLP(config)
        self.input_layernorm = Phi3RMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        self.post_attention_layernorm = Phi3RMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if past_key is None:
            hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        else:
            hidden_states, past_key, past_value = self.self_attn(hidden_states, position_embeddings, attention_mask,
                                                                 past_key, past_value, cache_position)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
        hidden_states = residual + hidden_states
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class Phi3Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.layers = nn.ModuleList([Phi3DecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.norm = Phi3RMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        self.rotary_emb = Phi3RotaryEmbedding(int(head_dim * config["partial_rotary_factor"]),
                                              base=config["rope_theta"])

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        hidden_states = self.embed_tokens(input_ids)
        return run_decoder(self.layers, self.norm, self._causal_mask, input_ids, hidden_states, attention_mask, cache_position,
                           past_keys, past_values, rotary_emb=self.rotary_emb)


class Phi3ForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Phi3Model(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.model(input_ids, attention_mask))

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.model(input_ids, attention_mask, cache_position, past_keys, past_values)
        return self.lm_head(hidden_states), keys, values


def _config(hidden, layers, heads, kv_heads, vocab, intermediate, partial_rotary_factor=1.0):
    return dict(model_type="phi3", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=kv_heads, vocab_size=vocab, intermediate_size=intermediate, rms_norm_eps=1e-5,
                rope_theta=10000.0, partial_rotary_factor=partial_rotary_factor)


VARIANTS = {
    # Phi-3-mini's heads of 96 in small, with one key and value head for both query heads.
    "phi3-tiny": _config(192, 2, 2, 1, 1024, 256),
    # Phi-4-mini's three quarters of heads of 128 rotated (halves of 48, and 32 passed through),
    # and an intermediate size of 200: the fused gate_up_proj's halves are not whole sticks.
    "phi4-mini-tiny": _config(256, 1, 2, 1, 1000, 200, partial_rotary_factor=0.75),
}


def build(name, config):
    model = Phi3ForCausalLM(config)
    card = causal_lm_card(model, name, FAMILY,
                          "Phi-3-style decoder (fused qkv_proj cut by slicing, grouped-query attention, fused "
                          "gate_up_proj)",
                          config, config["num_key_value_heads"], config["hidden_size"] // config["num_attention_heads"])
    return model, card, "trace", config["hidden_size"]
