"""MPNet (MPNetModel): RoBERTa-style embeddings plus a relative attention bias shared by all
layers, bucketed with log and where as in T5, and a tanh pooler; the sentence embedding is
the mean of the token states."""
import math

import torch
from torch import nn

from common import GELUActivation, mask_input, token_input
from families.xlm_roberta import create_position_ids_from_input_ids

FAMILY = "mpnet"


class MPNetEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.padding_idx = 1
        self.word_embeddings = nn.Embedding(config["vocab_size"], config["hidden_size"], padding_idx=self.padding_idx)
        self.position_embeddings = nn.Embedding(config["max_position_embeddings"], config["hidden_size"], padding_idx=self.padding_idx)
        self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MPNetSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config["num_attention_heads"]
        self.attention_head_size = config["hidden_size"] // self.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.q = nn.Linear(config["hidden_size"], self.all_head_size)
        self.k = nn.Linear(config["hidden_size"], self.all_head_size)
        self.v = nn.Linear(config["hidden_size"], self.all_head_size)
        self.o = nn.Linear(config["hidden_size"], config["hidden_size"])
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(*new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask, position_bias):
        q = self.transpose_for_scores(self.q(hidden_states))
        k = self.transpose_for_scores(self.k(hidden_states))
        v = self.transpose_for_scores(self.v(hidden_states))
        attention_scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + position_bias + attention_mask
        attention_probs = self.dropout(nn.functional.softmax(attention_scores, dim=-1))
        c = torch.matmul(attention_probs, v).permute(0, 2, 1, 3).contiguous()
        c = c.view(*c.size()[:-2], self.all_head_size)
        return self.o(c)


class MPNetAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = MPNetSelfAttention(config)
        self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, attention_mask, position_bias):
        self_outputs = self.attn(hidden_states, attention_mask, position_bias)
        return self.LayerNorm(self.dropout(self_outputs) + hidden_states)


class MPNetIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["hidden_size"], config["intermediate_size"])
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class MPNetOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["intermediate_size"], config["hidden_size"])
        self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class MPNetLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = MPNetAttention(config)
        self.intermediate = MPNetIntermediate(config)
        self.output = MPNetOutput(config)

    def forward(self, hidden_states, attention_mask, position_bias):
        attention_output = self.attention(hidden_states, attention_mask, position_bias)
        return self.output(self.intermediate(attention_output), attention_output)


class MPNetEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_heads = config["num_attention_heads"]
        self.layer = nn.ModuleList([MPNetLayer(config) for _ in range(config["num_hidden_layers"])])
        self.relative_attention_bias = nn.Embedding(config["relative_attention_num_buckets"], self.n_heads)

    @staticmethod
    def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
        ret = 0
        n = -relative_position
        num_buckets //= 2
        ret += (n < 0).to(torch.long) * num_buckets
        n = torch.abs(n)
        max_exact = num_buckets // 2
        is_small = n < max_exact
        val_if_large = max_exact + (
            torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).to(torch.long)
        val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
        ret += torch.where(is_small, n, val_if_large)
        return ret

    def compute_position_bias(self, x, num_buckets=32):
        bsz, qlen, klen = x.size(0), x.size(1), x.size(1)
        context_position = torch.arange(qlen, dtype=torch.long)[:, None]
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        rp_bucket = self.relative_position_bucket(relative_position, num_buckets=num_buckets)
        values = self.relative_attention_bias(rp_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values.expand((bsz, -1, qlen, klen)).contiguous()

    def forward(self, hidden_states, attention_mask):
        position_bias = self.compute_position_bias(hidden_states)
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask, position_bias)
        return hidden_states


class MPNetPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["hidden_size"], config["hidden_size"])
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class MPNetModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = MPNetEmbeddings(config)
        self.encoder = MPNetEncoder(config)
        self.pooler = MPNetPooler(config)

    def forward(self, input_ids, attention_mask):
        dtype = self.embeddings.word_embeddings.weight.dtype  # the model's, as Transformers makes it
        extended = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        sequence_output = self.encoder(self.embeddings(input_ids), extended)
        pooled_output = self.pooler(sequence_output)
        # Mean pooling over the tokens the mask keeps: the sentence-transformers embedding.
        weights = attention_mask.unsqueeze(-1).to(sequence_output.dtype)
        sentence_embedding = (sequence_output * weights).sum(1) / torch.clamp(weights.sum(1), min=1e-9)
        return sequence_output, pooled_output, sentence_embedding


VARIANTS = {
    "mpnet-tiny": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
                       max_position_embeddings=80, relative_attention_num_buckets=32, layer_norm_eps=1e-5),
    "mpnet-hd64": dict(vocab_size=1000, hidden_size=128, num_hidden_layers=1, num_attention_heads=2, intermediate_size=512,
                       max_position_embeddings=80, relative_attention_num_buckets=32, layer_norm_eps=1e-5),
    # 3 heads of 32 under MPNet's own names (attn.q, attn.k, attn.v, attn.o): the heads are padded
    # by structure, then the hidden size.
    "mpnet-h96": dict(vocab_size=1000, hidden_size=96, num_hidden_layers=1, num_attention_heads=3, intermediate_size=384,
                      max_position_embeddings=80, relative_attention_num_buckets=32, layer_norm_eps=1e-5),
}


def build(name, config):
    model = MPNetModel(config)
    card = {
        "name": name,
        "family": FAMILY,
        "description": "MPNet-style sentence embedding model with relative attention bias",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [
            {"name": "last_hidden_state", "kind": "hidden_states"},
            {"name": "pooler_output", "kind": "embeddings"},
            {"name": "sentence_embedding", "kind": "embeddings"},
        ],
        "config": dict(config, model_type="mpnet"),
    }
    return model, card, "trace", config["hidden_size"]
