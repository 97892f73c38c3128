"""T5 encoder (T5EncoderModel), exported with torch.jit.script so its control flow stays in the
graph: relative position buckets computed with log, min and where under `if bidirectional`,
a position bias computed by the first layer only (`if position_bias is None`), RMS-style
T5LayerNorm, a ReLU feed-forward, embeddings shared with the encoder."""
import math
from typing import Optional, Tuple

import torch
from torch import Tensor, nn
from torch.jit import Final

from common import mask_input, token_input

FAMILY = "t5"



def _relative_position_bucket(relative_position: Tensor, bidirectional: bool = True, num_buckets: int = 32,
                              max_distance: int = 128) -> Tensor:
    relative_buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets = num_buckets // 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


class T5LayerNorm(nn.Module):
    # Transformers tests `self.weight.dtype in [torch.float16, torch.bfloat16]` at run time; a
    # constant fixed at export (generate.py calls export_in) keeps the float32 graph free of that branch.
    sixteen_bit: Final[bool]

    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps
        self.sixteen_bit = False

    def export_in(self, dtype: torch.dtype):
        self.sixteen_bit = dtype in (torch.float16, torch.bfloat16)

    def forward(self, hidden_states: Tensor) -> Tensor:
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.sixteen_bit:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5Attention(nn.Module):
    has_relative_attention_bias: Final[bool]

    def __init__(self, config, has_relative_attention_bias: bool):
        super().__init__()
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = config["relative_attention_num_buckets"]
        self.relative_attention_max_distance = config["relative_attention_max_distance"]
        self.d_model = config["d_model"]
        self.key_value_proj_dim = config["d_kv"]
        self.n_heads = config["num_heads"]
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets, self.n_heads)

    def compute_bias(self, query_length: int, key_length: int) -> Tensor:
        if not self.has_relative_attention_bias:
            return torch.zeros((1, self.n_heads, query_length, key_length))
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = _relative_position_bucket(
            relative_position, True, self.relative_attention_num_buckets, self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states: Tensor, mask: Tensor, position_bias: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        batch_size = hidden_states.size(0)
        seq_length = hidden_states.size(1)
        query_states = self.q(hidden_states).view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        key_states = self.k(hidden_states).view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        value_states = self.v(hidden_states).view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            position_bias = self.compute_bias(seq_length, seq_length) + mask
        scores = scores + position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        return self.o(attn_output), position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, config, has_relative_attention_bias: bool):
        super().__init__()
        self.SelfAttention = T5Attention(config, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(config["d_model"], eps=config["layer_norm_epsilon"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states: Tensor, mask: Tensor, position_bias: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        attention_output, position_bias = self.SelfAttention(self.layer_norm(hidden_states), mask, position_bias)
        return hidden_states + self.dropout(attention_output), position_bias


class T5DenseActDense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wi = nn.Linear(config["d_model"], config["d_ff"], bias=False)
        self.wo = nn.Linear(config["d_ff"], config["d_model"], bias=False)
        self.dropout = nn.Dropout(0.1)
        self.act = nn.ReLU()

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.wo(self.dropout(self.act(self.wi(hidden_states))))


class T5LayerFF(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.DenseReluDense = T5DenseActDense(config)
        self.layer_norm = T5LayerNorm(config["d_model"], eps=config["layer_norm_epsilon"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states: Tensor) -> Tensor:
        return hidden_states + self.dropout(self.DenseReluDense(self.layer_norm(hidden_states)))


class T5Block(nn.Module):
    def __init__(self, config, has_relative_attention_bias: bool):
        super().__init__()
        self.layer = nn.ModuleList([T5LayerSelfAttention(config, has_relative_attention_bias), T5LayerFF(config)])

    def forward(self, hidden_states: Tensor, mask: Tensor, position_bias: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        hidden_states, position_bias = self.layer[0](hidden_states, mask, position_bias)
        return self.layer[1](hidden_states), position_bias


class T5Stack(nn.Module):
    sixteen_bit: Final[bool]
    mask_min: Final[float]

    def __init__(self, config, embed_tokens):
        super().__init__()
        self.sixteen_bit = False
        self.mask_min = -3.4028234663852886e38  # torch.finfo(torch.float32).min, which script cannot call
        self.embed_tokens = embed_tokens
        self.block = nn.ModuleList([T5Block(config, i == 0) for i in range(config["num_layers"])])
        self.final_layer_norm = T5LayerNorm(config["d_model"], eps=config["layer_norm_epsilon"])
        self.dropout = nn.Dropout(0.1)

    def export_in(self, dtype: torch.dtype):
        self.sixteen_bit = dtype != torch.float32
        self.mask_min = torch.finfo(dtype).min

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        hidden_states = self.dropout(self.embed_tokens(input_ids))
        # In the model's dtype, as Transformers' get_extended_attention_mask makes it.
        if self.sixteen_bit:
            extended_attention_mask = (1.0 - attention_mask[:, None, None, :].to(hidden_states.dtype)) * self.mask_min
        else:
            extended_attention_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * self.mask_min
        position_bias: Optional[Tensor] = None
        for layer_module in self.block:
            hidden_states, position_bias = layer_module(hidden_states, extended_attention_mask, position_bias)
        return self.dropout(self.final_layer_norm(hidden_states))


class T5EncoderModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.shared = nn.Embedding(config["vocab_size"], config["d_model"])
        self.encoder = T5Stack(config, self.shared)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.encoder(input_ids, attention_mask)


VARIANTS = {
    "t5-encoder-tiny": dict(model_type="t5", vocab_size=1000, d_model=64, d_kv=32, num_heads=2, d_ff=128, num_layers=2,
                            relative_attention_num_buckets=32, relative_attention_max_distance=128, layer_norm_epsilon=1e-6),
    "t5-encoder-dkv64": dict(model_type="t5", vocab_size=1000, d_model=128, d_kv=64, num_heads=2, d_ff=256, num_layers=3,
                             relative_attention_num_buckets=32, relative_attention_max_distance=128, layer_norm_epsilon=1e-6),
    # A feed-forward size of 3.1 sticks, between a scripted dropout's branches (wi, relu, dropout, wo),
    # and one head of 1.5 sticks: its split views and its merge view end in the same width.
    "t5-encoder-hd96-ff200": dict(model_type="t5", vocab_size=1000, d_model=64, d_kv=96, num_heads=1, d_ff=200, num_layers=1,
                             relative_attention_num_buckets=32, relative_attention_max_distance=128, layer_norm_epsilon=1e-6),
}


def build(name, config):
    model = T5EncoderModel(config)
    card = {
        "name": name,
        "family": FAMILY,
        "description": "T5-style encoder (relative position buckets), scripted",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [{"name": "last_hidden_state", "kind": "hidden_states"}],
        "config": config,
    }
    return model, card, "script", config["d_model"]
