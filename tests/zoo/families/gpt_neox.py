"""GPT-NeoX decoders (GPTNeoXForCausalLM, as Transformers' modeling_gpt_neox writes them; Pythia's
architecture): one fused query_key_value projection whose output is viewed per head as
[q | k | v] (heads x 3 x head_size) and chunked three ways, rotary embeddings over the first
rotary_pct of each head (the cut read from the tables' width), a parallel residual (attention and
MLP on two layer norms of the same input), an output projection called `dense`, a GELU MLP
(dense_h_to_4h, dense_4h_to_h) and an untied logits projection called `embed_out`."""
import torch
from torch import nn

from common import StaticCacheDecoder, causal_lm_card
from families.llama import LlamaModel, LlamaRotaryEmbedding, rotate_half, run_decoder

FAMILY = "gpt_neox"


def apply_rotary_pos_emb(q, k, cos, sin):
    """Rotates the first cos.shape[-1] values of each head; the rest pass through."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half(k_rot) * sin)
    return torch.cat([q_embed, q_pass], dim=-1), torch.cat([k_embed, k_pass], dim=-1)


class GPTNeoXAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.head_size = config["hidden_size"] // config["num_attention_heads"]
        self.scaling = self.head_size ** -0.5
        self.query_key_value = nn.Linear(config["hidden_size"], 3 * config["hidden_size"], bias=True)
        self.dense = nn.Linear(config["hidden_size"], config["hidden_size"], bias=True)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key=None, past_value=None,
                cache_position=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, 3 * self.head_size)
        qkv = self.query_key_value(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key is not None:
            key_states = past_key = past_key.index_copy(2, cache_position, key_states)
            value_states = past_value = past_value.index_copy(2, cache_position, value_states)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(*input_shape, -1).contiguous()
        attn_output = self.dense(attn_output)
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class GPTNeoXMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(config["hidden_size"], config["intermediate_size"])
        self.dense_4h_to_h = nn.Linear(config["intermediate_size"], config["hidden_size"])
        self.act = nn.GELU()

    def forward(self, hidden_states):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(hidden_states)))


class GPTNeoXLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.post_attention_layernorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.post_attention_dropout = nn.Dropout(0.0)
        self.post_mlp_dropout = nn.Dropout(0.0)
        self.attention = GPTNeoXAttention(config)
        self.mlp = GPTNeoXMLP(config)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key=None, past_value=None,
                cache_position=None):
        normed = self.input_layernorm(hidden_states)
        if past_key is None:
            attn_output = self.attention(normed, attention_mask, position_embeddings)
        else:
            attn_output, past_key, past_value = self.attention(normed, attention_mask, position_embeddings,
                                                               past_key, past_value, cache_position)
        attn_output = self.post_attention_dropout(attn_output)
        # use_parallel_residual: x = x + attn(ln1(x)) + mlp(ln2(x))
        mlp_output = self.post_mlp_dropout(self.mlp(self.post_attention_layernorm(hidden_states)))
        hidden_states = mlp_output + attn_output + hidden_states
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class GPTNeoXModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_in = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.emb_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList([GPTNeoXLayer(config) for _ in range(config["num_hidden_layers"])])
        self.final_layer_norm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        head_size = config["hidden_size"] // config["num_attention_heads"]
        self.rotary_emb = LlamaRotaryEmbedding(int(head_size * config["rotary_pct"]),
                                               base=config.get("rotary_emb_base", 10000.0))

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        hidden_states = self.emb_dropout(self.embed_in(input_ids))
        return run_decoder(self.layers, self.final_layer_norm, self._causal_mask, input_ids, hidden_states, attention_mask, cache_position,
                           past_keys, past_values, rotary_emb=self.rotary_emb)


class GPTNeoXForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gpt_neox = GPTNeoXModel(config)
        self.embed_out = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)

    @property
    def lm_head(self):  # StaticCacheDecoder reads the logits projection's dtype from lm_head
        return self.embed_out

    def forward(self, input_ids, attention_mask):
        return self.embed_out(self.gpt_neox(input_ids, attention_mask))

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.gpt_neox(input_ids, attention_mask, cache_position, past_keys, past_values)
        return self.embed_out(hidden_states), keys, values


def _config(hidden, layers, heads, vocab, intermediate, rotary_pct):
    return dict(model_type="gpt_neox", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                vocab_size=vocab, intermediate_size=intermediate, rotary_pct=rotary_pct, layer_norm_eps=1e-5)


VARIANTS = {
    # Pythia's shape in small: heads of 64, a quarter of each rotated (16 values, halves of 8).
    "pythia-tiny": _config(128, 2, 2, 1000, 512, 0.25),
}


def build(name, config):
    model = GPTNeoXForCausalLM(config)
    heads = config["num_attention_heads"]
    card = causal_lm_card(model, name, FAMILY,
                          "GPT-NeoX-style decoder (fused per-head query_key_value, partial rotary, parallel residual)",
                          config, heads, config["hidden_size"] // heads)
    return model, card, "trace", config["hidden_size"]
