"""OPT decoders (OPTForCausalLM, as Transformers' modeling_opt writes them): learned positions
offset by 2 and counted from the attention mask with cumsum, q_proj/k_proj/v_proj with biases and
an output projection called `out_proj`, queries scaled before the product, a ReLU MLP whose fc1
and fc2 sit in the decoder layer itself (no MLP module) and run on the tokens flattened to
[tokens, hidden], pre-LayerNorm layers, and an lm_head tied to the token embedding."""
import torch
from torch import nn

from common import DECODE_MAX_LENGTH, StaticCacheDecoder, cache_position_ids, causal_lm_card, static_cache_mask
from families.llama import LlamaModel

FAMILY = "opt"


class OPTLearnedPositionalEmbedding(nn.Embedding):
    """Positions count the tokens the mask keeps; OPT's table starts 2 rows in."""

    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, attention_mask, position_ids=None):
        if position_ids is None:
            position_ids = torch.cumsum(attention_mask, dim=1)
            position_ids = (position_ids * attention_mask - 1).long()
        return super().forward(position_ids + self.offset)


class OPTAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config["hidden_size"]
        self.num_heads = config["num_attention_heads"]
        self.head_dim = self.embed_dim // self.num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=True)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=True)
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=True)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=True)

    def forward(self, hidden_states, attention_mask, past_key=None, past_value=None, cache_position=None):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        query_states = query_states.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        if past_key is not None:
            key_states = past_key = past_key.index_copy(2, cache_position, key_states)
            value_states = past_value = past_value.index_copy(2, cache_position, value_states)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, tgt_len, -1)
        attn_output = self.out_proj(attn_output)
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class OPTDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = config["hidden_size"]
        self.self_attn = OPTAttention(config)
        self.dropout = nn.Dropout(0.1)
        self.activation_fn = nn.ReLU()
        self.self_attn_layer_norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, config["ffn_dim"], bias=True)
        self.fc2 = nn.Linear(config["ffn_dim"], hidden, bias=True)
        self.final_layer_norm = nn.LayerNorm(hidden)

    def forward(self, hidden_states, attention_mask, past_key=None, past_value=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        if past_key is None:
            hidden_states = self.self_attn(hidden_states, attention_mask)
        else:
            hidden_states, past_key, past_value = self.self_attn(hidden_states, attention_mask, past_key, past_value,
                                                                 cache_position)
        hidden_states = residual + self.dropout(hidden_states)
        # The feed-forward runs on the tokens flattened to [tokens, hidden].
        hidden_states_shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_states.size(-1))
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.fc2(self.activation_fn(self.fc1(hidden_states)))
        hidden_states = (residual + self.dropout(hidden_states)).view(hidden_states_shape)
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class OPTDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"], padding_idx=1)
        self.embed_positions = OPTLearnedPositionalEmbedding(config["max_position_embeddings"], config["hidden_size"])
        self.final_layer_norm = nn.LayerNorm(config["hidden_size"])
        self.layers = nn.ModuleList([OPTDecoderLayer(config) for _ in range(config["num_hidden_layers"])])

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        inputs_embeds = self.embed_tokens(input_ids)
        if past_keys is None:
            hidden_states = inputs_embeds + self.embed_positions(attention_mask)
            causal_mask = self._causal_mask(attention_mask, inputs_embeds.dtype)
            for decoder_layer in self.layers:
                hidden_states = decoder_layer(hidden_states, causal_mask)
            return self.final_layer_norm(hidden_states)
        # With a static cache: `attention_mask` covers the cache's slots.
        position_ids = cache_position_ids(attention_mask, cache_position)
        hidden_states = inputs_embeds + self.embed_positions(attention_mask, position_ids)
        causal_mask = static_cache_mask(attention_mask, cache_position, inputs_embeds.dtype)
        keys, values = [], []
        for i, decoder_layer in enumerate(self.layers):
            hidden_states, key, value = decoder_layer(hidden_states, causal_mask, past_keys[i], past_values[i],
                                                      cache_position)
            keys.append(key)
            values.append(value)
        return self.final_layer_norm(hidden_states), torch.stack(keys), torch.stack(values)


class OPTModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.decoder = OPTDecoder(config)

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        return self.decoder(input_ids, attention_mask, cache_position, past_keys, past_values)


class OPTForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = OPTModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        self.lm_head.weight = self.model.decoder.embed_tokens.weight

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.model(input_ids, attention_mask))

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.model(input_ids, attention_mask, cache_position, past_keys, past_values)
        return self.lm_head(hidden_states), keys, values


def _config(hidden, layers, heads, vocab, ffn_dim):
    return dict(model_type="opt", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                vocab_size=vocab, ffn_dim=ffn_dim, max_position_embeddings=DECODE_MAX_LENGTH)


VARIANTS = {
    # OPT-125m's shape in small: heads of 64, a feed-forward of 4 x hidden.
    "opt-tiny": _config(128, 2, 2, 1000, 512),
    # Three heads of 32 and a hidden size of 1.5 sticks: heads, hidden size and vocabulary padded.
    "opt-h96": _config(96, 1, 3, 1000, 384),
}


def build(name, config):
    model = OPTForCausalLM(config)
    heads = config["num_attention_heads"]
    card = causal_lm_card(model, name, FAMILY,
                          "OPT-style decoder (learned positions from the mask, out_proj, ReLU feed-forward in the layer)",
                          config, heads, config["hidden_size"] // heads)
    return model, card, "trace", config["hidden_size"]
