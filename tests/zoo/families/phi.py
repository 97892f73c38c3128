"""Phi-style decoders (PhiForCausalLM, as Transformers' modeling_phi writes them): attention and
MLP in parallel on one layer norm's output (hidden = attention + MLP + residual), rotary
embeddings over part of each head only (partial_rotary_factor: the first rotary_ndims values of a
head are rotated, the rest passed through), q_proj/k_proj/v_proj with biases and an output
projection called `dense`, a gelu_new MLP (fc1, fc2), LayerNorm, one rotary embedding for the
whole model, and an lm_head with a bias."""
import torch
from torch import nn

from common import NewGELUActivation, StaticCacheDecoder, causal_lm_card
from families.llama import LlamaModel, LlamaRotaryEmbedding, apply_rotary_pos_emb, run_decoder

FAMILY = "phi"


class PhiRotaryEmbedding(LlamaRotaryEmbedding):
    """Llama's, over the rotated part of a head only (Transformers copies it the same way)."""


class PhiAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = config["hidden_size"]
        self.num_heads = config["num_attention_heads"]
        self.head_dim = hidden // self.num_heads
        self.rotary_ndims = int(self.head_dim * config["partial_rotary_factor"])
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(hidden, self.num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(hidden, self.num_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(hidden, self.num_heads * self.head_dim, bias=True)
        self.dense = nn.Linear(self.num_heads * self.head_dim, hidden, bias=True)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        # Partial rotary: only the first rotary_ndims values of each head turn.
        query_rot, query_pass = query_states[..., : self.rotary_ndims], query_states[..., self.rotary_ndims :]
        key_rot, key_pass = key_states[..., : self.rotary_ndims], key_states[..., self.rotary_ndims :]
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        if past_key is not None:
            key_states = past_key = past_key.index_copy(2, cache_position, key_states)
            value_states = past_value = past_value.index_copy(2, cache_position, value_states)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(*input_shape, -1)
        attn_output = self.dense(attn_output)
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class PhiMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.activation_fn = NewGELUActivation()
        self.fc1 = nn.Linear(config["hidden_size"], config["intermediate_size"])
        self.fc2 = nn.Linear(config["intermediate_size"], config["hidden_size"])

    def forward(self, hidden_states):
        return self.fc2(self.activation_fn(self.fc1(hidden_states)))


class PhiDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = PhiAttention(config)
        self.mlp = PhiMLP(config)
        self.input_layernorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.resid_dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        # Attention and the MLP read the same normalized input, side by side.
        if past_key is None:
            attn_outputs = self.self_attn(hidden_states, position_embeddings, attention_mask)
        else:
            attn_outputs, past_key, past_value = self.self_attn(hidden_states, position_embeddings, attention_mask,
                                                                past_key, past_value, cache_position)
        attn_outputs = self.resid_dropout(attn_outputs)
        feed_forward_hidden_states = self.resid_dropout(self.mlp(hidden_states))
        hidden_states = attn_outputs + feed_forward_hidden_states + residual
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class PhiModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.embed_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList([PhiDecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.final_layernorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        self.rotary_emb = PhiRotaryEmbedding(int(head_dim * config["partial_rotary_factor"]),
                                             base=config.get("rope_theta", 10000.0))

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        hidden_states = self.embed_dropout(self.embed_tokens(input_ids))
        return run_decoder(self.layers, self.final_layernorm, self._causal_mask, input_ids, hidden_states, attention_mask, cache_position,
                           past_keys, past_values, rotary_emb=self.rotary_emb)


class PhiForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = PhiModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=True)

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.model(input_ids, attention_mask))

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.model(input_ids, attention_mask, cache_position, past_keys, past_values)
        return self.lm_head(hidden_states), keys, values


def _config(hidden, layers, heads, vocab, intermediate, partial_rotary_factor):
    return dict(model_type="phi", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                vocab_size=vocab, intermediate_size=intermediate, partial_rotary_factor=partial_rotary_factor,
                layer_norm_eps=1e-5)


VARIANTS = {
    # Phi-1.5's shape in small: heads of 64, half of each rotated (32 values, halves of 16).
    "phi-tiny": _config(128, 2, 2, 1000, 512, 0.5),
    # Phi-2's rotary fraction: 0.4 of heads of 80 (32 values), hidden 160 over sticks of 64.
    "phi-hd80": _config(160, 1, 2, 1024, 640, 0.4),
}


def build(name, config):
    model = PhiForCausalLM(config)
    heads = config["num_attention_heads"]
    card = causal_lm_card(model, name, FAMILY,
                          "Phi-style decoder (parallel attention and MLP, partial rotary embeddings, gelu_new MLP)",
                          config, heads, config["hidden_size"] // heads)
    return model, card, "trace", config["hidden_size"]
