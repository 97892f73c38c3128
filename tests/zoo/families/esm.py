"""ESM-2 protein encoders (EsmModel, as Transformers' modeling_esm writes them): rotary position
embeddings in an encoder, rotate_half written with `chunk` (not slices), the queries scaled before
they turn, cos and sin tables built from the sequence length (`torch.outer` of the positions and
inv_freq) and sliced to it, pre-LayerNorm layers (each sublayer's norm inside it, the residual
added by its output module), token-dropout rescaling of the embeddings, the padding zeroed by the
mask, and a final emb_layer_norm_after."""
import torch
from torch import nn

from common import mask_input, token_input
from families.bert import BertIntermediate, BertSelfAttention

FAMILY = "esm"


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(x, cos, sin):
    cos = cos[:, :, : x.shape[-2], :]
    sin = sin[:, :, : x.shape[-2], :]
    return (x * cos) + (rotate_half(x) * sin)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq)

    def _update_cos_sin_tables(self, x, seq_dimension=2):
        # Transformers caches the tables per length; a trace computes them once either way.
        t = torch.arange(x.shape[seq_dimension], device=x.device).type_as(self.inv_freq)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1).to(x.device)
        return emb.cos()[None, None, :, :], emb.sin()[None, None, :, :]

    def forward(self, q, k):
        cos, sin = self._update_cos_sin_tables(k, seq_dimension=-2)
        return (apply_rotary_pos_emb(q, cos, sin).to(dtype=q.dtype),
                apply_rotary_pos_emb(k, cos, sin).to(dtype=k.dtype))


class EsmEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config["vocab_size"], config["hidden_size"],
                                            padding_idx=config["pad_token_id"])
        self.dropout = nn.Dropout(0.0)
        self.mask_token_id = config["mask_token_id"]

    def forward(self, input_ids, attention_mask):
        embeddings = self.word_embeddings(input_ids)
        # token_dropout: masked tokens are zeroed and the rest rescaled as in training.
        embeddings = embeddings.masked_fill((input_ids == self.mask_token_id).unsqueeze(-1), 0.0)
        mask_ratio_train = 0.15 * 0.8
        src_lengths = attention_mask.sum(-1)
        mask_ratio_observed = (input_ids == self.mask_token_id).sum(-1).float() / src_lengths
        embeddings = (embeddings * (1 - mask_ratio_train) / (1 - mask_ratio_observed)[:, None, None]).to(
            embeddings.dtype)
        embeddings = (embeddings * attention_mask.unsqueeze(-1)).to(embeddings.dtype)
        return self.dropout(embeddings)


class EsmSelfAttention(BertSelfAttention):
    """BERT's projections and head split; the queries scaled, then turned with the keys."""

    def __init__(self, config):
        super().__init__(config)
        self.rotary_embeddings = RotaryEmbedding(dim=self.attention_head_size)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = query_layer * self.attention_head_size ** -0.5
        query_layer, key_layer = self.rotary_embeddings(query_layer, key_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs.to(value_layer.dtype), value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class EsmSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["hidden_size"], config["hidden_size"])
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        return self.dropout(self.dense(hidden_states)) + input_tensor


class EsmAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = EsmSelfAttention(config)
        self.output = EsmSelfOutput(config)
        self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

    def forward(self, hidden_states, attention_mask):
        hidden_states_ln = self.LayerNorm(hidden_states)
        return self.output(self.self(hidden_states_ln, attention_mask), hidden_states)


class EsmOutput(EsmSelfOutput):
    def __init__(self, config):
        super().__init__(config)
        self.dense = nn.Linear(config["intermediate_size"], config["hidden_size"])


class EsmLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = EsmAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = EsmOutput(config)
        self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        layernorm_output = self.LayerNorm(attention_output)
        return self.output(self.intermediate(layernorm_output), attention_output)


class EsmEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([EsmLayer(config) for _ in range(config["num_hidden_layers"])])
        self.emb_layer_norm_after = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

    def forward(self, hidden_states, attention_mask):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return self.emb_layer_norm_after(hidden_states)


class EsmModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = EsmEmbeddings(config)
        self.encoder = EsmEncoder(config)

    def forward(self, input_ids, attention_mask):
        dtype = self.embeddings.word_embeddings.weight.dtype  # the model's (get_extended_attention_mask)
        extended_attention_mask = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        embedding_output = self.embeddings(input_ids, attention_mask)
        return self.encoder(embedding_output, extended_attention_mask)


def _config(hidden, layers, heads, intermediate):
    # ESM-2's alphabet: 33 tokens, <pad> 1, <mask> 32.
    return dict(model_type="esm", vocab_size=33, hidden_size=hidden, num_hidden_layers=layers,
                num_attention_heads=heads, intermediate_size=intermediate, layer_norm_eps=1e-5, pad_token_id=1,
                mask_token_id=32, position_embedding_type="rotary")


VARIANTS = {
    # ESM-2's heads of 64 (esm2_t33_650M: 20 of them) in small: rotate_half's chunk cuts each head
    # inside a stick.
    "esm2-tiny": _config(128, 2, 2, 512),
}


def build(name, config):
    model = EsmModel(config)
    card = {
        "name": name,
        "family": FAMILY,
        "description": "ESM-2-style protein encoder (rotary attention with rotate_half by chunk, pre-LayerNorm)",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [{"name": "last_hidden_state", "kind": "hidden_states"}],
        "config": config,
    }
    return model, card, "trace", config["hidden_size"]
