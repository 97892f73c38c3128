"""Falcon decoders (FalconForCausalLM, as Transformers' modeling_falcon writes them for Falcon-7B:
multi_query, parallel_attn, new_decoder_architecture off): one fused query_key_value projection
producing every query head and one key head and one value head (multi-query attention), split by
viewing it as heads + 2 and indexing ([..., :-2, :], [..., [-2], :], [..., [-1], :]), rotary
embeddings over whole heads of 64, attention and MLP in parallel on one layer norm's output, and
FalconLinear (`x @ weight.T`, not `F.linear`) for every projection but the tied lm_head."""
import math

import torch
from torch import nn

from common import StaticCacheDecoder, causal_lm_card
from families.llama import LlamaModel, LlamaRotaryEmbedding, apply_rotary_pos_emb, run_decoder

FAMILY = "falcon"


class FalconLinear(nn.Linear):
    """Transformers' own: a matmul with the transposed weight, then the bias if there is one."""

    def forward(self, input):
        hidden_states = input @ self.weight.T
        if self.bias is None:
            return hidden_states
        return hidden_states + self.bias


class FalconAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config["hidden_size"]
        self.num_heads = config["num_attention_heads"]
        self.head_dim = self.hidden_size // self.num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        # multi_query: every query head, then one key head and one value head.
        qkv_out_dim = self.hidden_size + 2 * self.head_dim
        self.query_key_value = FalconLinear(self.hidden_size, qkv_out_dim, bias=config["bias"])
        self.dense = FalconLinear(self.hidden_size, self.hidden_size, bias=config["bias"])
        self.num_kv_heads = 1

    def _split_heads(self, fused_qkv):
        batch_size, seq_length, three_times_hidden_size = fused_qkv.shape
        fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads + 2, self.head_dim)
        return fused_qkv[..., :-2, :], fused_qkv[..., [-2], :], fused_qkv[..., [-1], :]

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        fused_qkv = self.query_key_value(hidden_states)
        (query_layer, key_layer, value_layer) = self._split_heads(fused_qkv)
        batch_size, query_length, _, _ = query_layer.shape
        query_layer = query_layer.transpose(1, 2).reshape(batch_size, self.num_heads, query_length, self.head_dim)
        key_layer = key_layer.transpose(1, 2).reshape(batch_size, self.num_kv_heads, query_length, self.head_dim)
        value_layer = value_layer.transpose(1, 2).reshape(batch_size, self.num_kv_heads, query_length, self.head_dim)
        cos, sin = position_embeddings
        query_layer, key_layer = apply_rotary_pos_emb(query_layer, key_layer, cos, sin)
        if past_key is not None:
            key_layer = past_key = past_key.index_copy(2, cache_position, key_layer)
            value_layer = past_value = past_value.index_copy(2, cache_position, value_layer)
        # The single key and value head broadcast over every query head.
        attention_scores = query_layer @ key_layer.transpose(-1, -2)
        attention_scores = attention_scores / math.sqrt(self.head_dim)
        attention_scores = nn.functional.softmax(attention_scores + attention_mask, dim=-1,
                                                 dtype=hidden_states.dtype)
        attn_output = attention_scores @ value_layer
        attn_output = attn_output.view(batch_size, self.num_heads, query_length, self.head_dim)
        attn_output = attn_output.permute(0, 2, 1, 3)
        attn_output = attn_output.reshape(batch_size, query_length, self.num_heads * self.head_dim)
        attn_output = self.dense(attn_output)
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class FalconMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden_size = config["hidden_size"]
        self.dense_h_to_4h = FalconLinear(hidden_size, config["ffn_hidden_size"], bias=config["bias"])
        self.act = nn.GELU()
        self.dense_4h_to_h = FalconLinear(config["ffn_hidden_size"], hidden_size, bias=config["bias"])

    def forward(self, x):
        x = self.act(self.dense_h_to_4h(x))
        x = self.dense_4h_to_h(x)
        return x


class FalconDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attention = FalconAttention(config)
        self.mlp = FalconMLP(config)
        self.input_layernorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_epsilon"])

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        residual = hidden_states
        attention_layernorm_out = self.input_layernorm(hidden_states)
        mlp_layernorm_out = attention_layernorm_out
        if past_key is None:
            attention_output = self.self_attention(attention_layernorm_out, position_embeddings, attention_mask)
        else:
            attention_output, past_key, past_value = self.self_attention(
                attention_layernorm_out, position_embeddings, attention_mask, past_key, past_value, cache_position)
        # parallel_attn: the MLP reads the same normalized input, and the two are summed.
        mlp_output = self.mlp(mlp_layernorm_out)
        mlp_output += attention_output
        output = mlp_output + residual
        if past_key is None:
            return output
        return output, past_key, past_value


class FalconModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.h = nn.ModuleList([FalconDecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.ln_f = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_epsilon"])
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        self.rotary_emb = LlamaRotaryEmbedding(head_dim, base=config.get("rope_theta", 10000.0))

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        hidden_states = self.word_embeddings(input_ids)
        return run_decoder(self.h, self.ln_f, self._causal_mask, input_ids, hidden_states, attention_mask, cache_position,
                           past_keys, past_values, rotary_emb=self.rotary_emb)


class FalconForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = FalconModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.word_embeddings.weight  # tie_word_embeddings

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.transformer(input_ids, attention_mask))

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.transformer(input_ids, attention_mask, cache_position, past_keys,
                                                       past_values)
        return self.lm_head(hidden_states), keys, values


def _config(hidden, layers, heads, vocab, bias=False):
    return dict(model_type="falcon", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                vocab_size=vocab, ffn_hidden_size=4 * hidden, multi_query=True, parallel_attn=True,
                new_decoder_architecture=False, bias=bias, layer_norm_epsilon=1e-5)


VARIANTS = {
    # Falcon-7B's attention in small: heads of 64 with one shared key and value head, so the
    # fused projection is 2 + 2 heads wide and RoPE's halves are 32 values inside a stick.
    "falcon-tiny": _config(128, 2, 2, 1024),
    # Three query heads: the fused projection is 320 wide (5 sticks), hidden 192; FalconConfig's
    # bias option on, so every FalconLinear adds its bias after the matmul.
    "falcon-h192": _config(192, 1, 3, 1024, bias=True),
}


def build(name, config):
    model = FalconForCausalLM(config)
    heads = config["num_attention_heads"]
    card = causal_lm_card(model, name, FAMILY,
                          "Falcon-style decoder (fused multi-query query_key_value, FalconLinear, parallel attention "
                          "and MLP, rotary embeddings)",
                          config, 1, config["hidden_size"] // heads)
    return model, card, "trace", config["hidden_size"]
