"""Cohere decoders (CohereForCausalLM, as Transformers' modeling_cohere writes Command-R): interleaved
rotary embeddings over whole heads, spelled unlike GPT-J's (rotate_half takes x[..., ::2] and
x[..., 1::2] and stacks them back; the frequencies, 1-D inv_freq through cos and sin, are
repeat_interleave'd before cos and sin), q_proj ... o_proj, a mean-centred LayerNorm without bias
computed in float32, attention and a SiLU-gated MLP in parallel on one norm's output, and tied
embeddings whose logits are scaled by logit_scale."""
import torch
from torch import nn

from common import StaticCacheDecoder, causal_lm_card
from families.llama import LlamaAttentionWithCache, LlamaMLP, LlamaModel, LlamaRotaryEmbedding, run_decoder

FAMILY = "cohere"


class CohereLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


class CohereRotaryEmbedding(LlamaRotaryEmbedding):
    """Llama's frequencies; the angles interleaved instead of concatenated."""

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.repeat_interleave(freqs, 2, dim=-1)  # diff from Llama: we interleave() instead of cat()
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x):
    # Split and rotate. Note that this function is different from e.g. Llama.
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    rot_x = torch.stack([-x2, x1], dim=-1).flatten(-2)
    return rot_x


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    dtype = q.dtype
    q = q.float()
    k = k.float()
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed.to(dtype=dtype), k_embed.to(dtype=dtype)


class CohereAttention(LlamaAttentionWithCache):
    """Llama's projections and cache, Cohere's rotation."""

    def __init__(self, config):
        super().__init__(config)
        self.rotary_emb = CohereRotaryEmbedding(self.head_dim, base=config["rope_theta"])

    def _project(self, hidden_states, position_ids, bsz: int, q_len: int):
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        return query_states, key_states, value_states


class CohereMLP(LlamaMLP):
    pass


class CohereDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = CohereAttention(config)
        self.mlp = CohereMLP(config)
        self.input_layernorm = CohereLayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

    def forward(self, hidden_states, attention_mask, position_ids, past_key=None, past_value=None,
                cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if past_key is None:
            hidden_states_attention = self.self_attn(hidden_states, attention_mask, position_ids)
        else:
            hidden_states_attention, past_key, past_value = self.self_attn(
                hidden_states, attention_mask, position_ids, past_key, past_value, cache_position)
        hidden_states_mlp = self.mlp(hidden_states)
        hidden_states = residual + hidden_states_attention + hidden_states_mlp
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class CohereModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.layers = nn.ModuleList([CohereDecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.norm = CohereLayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        return run_decoder(self.layers, self.norm, self._causal_mask, input_ids, self.embed_tokens(input_ids),
                           attention_mask, cache_position, past_keys, past_values)


class CohereForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = CohereModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight  # tie_word_embeddings
        self.logit_scale = config["logit_scale"]

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.model(input_ids, attention_mask)) * self.logit_scale

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.model(input_ids, attention_mask, cache_position, past_keys, past_values)
        return self.lm_head(hidden_states) * self.logit_scale, keys, values


def _config(hidden, layers, heads, kv_heads, vocab, intermediate):
    return dict(model_type="cohere", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=kv_heads, head_dim=hidden // heads, vocab_size=vocab,
                intermediate_size=intermediate, layer_norm_eps=1e-5, logit_scale=0.0625, rope_theta=10000.0)


VARIANTS = {
    # Heads of 64, every value turning: once the pairs are apart, each half of 32 is padded to a
    # stick (Command-R's heads of 128 need the pairs apart only).
    "cohere-tiny": _config(128, 2, 2, 1, 1024, 384),
}


def build(name, config):
    model = CohereForCausalLM(config)
    card = causal_lm_card(model, name, FAMILY,
                          "Cohere-style decoder (interleaved rotary from repeat_interleave'd frequencies, parallel "
                          "attention and gated MLP, tied scaled logits)",
                          config, config["num_key_value_heads"], config["head_dim"])
    return model, card, "trace", config["hidden_size"]
