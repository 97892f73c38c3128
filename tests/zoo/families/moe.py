"""A small mixture-of-experts decoder (MixtralForCausalLM style), exported with torch.jit.script
so the routing stays data-dependent: router softmax, topk, and a per-expert dispatch that loops
over the top-k slots (prim::Loop) and calls an expert only when tokens chose it (prim::If). Its
decode interface is two exported methods, prefill and decode_step, over a static KV cache
(docs/model-card.md "Decoding"), scripted as the forward is."""
from typing import List, Tuple

import torch
from torch import Tensor, nn
from torch.jit import Final

from common import DECODE_MAX_LENGTH, decode_card, mask_input, rename_classes, token_input
from families.llama import LlamaAttention, LlamaRMSNorm

FAMILY = "mixtral"



class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.w1 = nn.Linear(config["hidden_size"], config["intermediate_size"], bias=False)
        self.w2 = nn.Linear(config["intermediate_size"], config["hidden_size"], bias=False)
        self.w3 = nn.Linear(config["hidden_size"], config["intermediate_size"], bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.w2(self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states))


class MixtralSparseMoeBlock(nn.Module):
    top_k: Final[int]

    def __init__(self, config):
        super().__init__()
        self.hidden_dim = config["hidden_size"]
        self.num_experts = config["num_local_experts"]
        self.top_k = config["num_experts_per_tok"]
        self.gate = nn.Linear(self.hidden_dim, self.num_experts, bias=False)
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(config) for _ in range(self.num_experts)])

    def forward(self, hidden_states: Tensor) -> Tuple[Tensor, Tensor]:
        batch_size = hidden_states.size(0)
        sequence_length = hidden_states.size(1)
        hidden_states = hidden_states.view(-1, self.hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = nn.functional.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, self.hidden_dim), dtype=hidden_states.dtype)
        for k in range(self.top_k):
            expert_of_token = selected_experts[:, k]
            weight_of_token = routing_weights[:, k, None]
            for expert_idx, expert_layer in enumerate(self.experts):
                token_idx = torch.nonzero(expert_of_token == expert_idx).squeeze(-1)
                if token_idx.numel() > 0:
                    current_state = hidden_states.index_select(0, token_idx)
                    current_hidden_states = expert_layer(current_state) * weight_of_token.index_select(0, token_idx)
                    final_hidden_states = final_hidden_states.index_add(0, token_idx, current_hidden_states)
        return final_hidden_states.reshape(batch_size, sequence_length, self.hidden_dim), router_logits


class MixtralAttention(LlamaAttention):
    """LlamaAttention with a static cache for the decode methods: the tokens' keys and values
    written at their slots, attention over every slot."""

    @torch.jit.export
    def with_cache(self, hidden_states: Tensor, attention_mask: Tensor, position_ids: Tensor, past_key: Tensor,
                   past_value: Tensor, cache_position: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        bsz, q_len, _ = hidden_states.size()
        query_states, key_states, value_states = self._project(hidden_states, position_ids, bsz, q_len)
        past_key = past_key.index_copy(2, cache_position, key_states)
        past_value = past_value.index_copy(2, cache_position, value_states)
        return self._attend(query_states, past_key, past_value, attention_mask, bsz, q_len), past_key, past_value


class MixtralDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = MixtralAttention(config)
        self.block_sparse_moe = MixtralSparseMoeBlock(config)
        self.input_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        self.post_attention_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])

    def forward(self, hidden_states: Tensor, attention_mask: Tensor, position_ids: Tensor) -> Tensor:
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), attention_mask, position_ids)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states, router_logits = self.block_sparse_moe(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states

    @torch.jit.export
    def with_cache(self, hidden_states: Tensor, attention_mask: Tensor, position_ids: Tensor, past_key: Tensor,
                   past_value: Tensor, cache_position: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        residual = hidden_states
        hidden_states, past_key, past_value = self.self_attn.with_cache(
            self.input_layernorm(hidden_states), attention_mask, position_ids, past_key, past_value, cache_position)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states, router_logits = self.block_sparse_moe(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states, past_key, past_value


class MixtralModel(nn.Module):
    mask_min: Final[float]

    def __init__(self, config):
        super().__init__()
        self.mask_min = -3.4028234663852886e38  # torch.finfo(torch.float32).min, which script cannot call
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.layers = nn.ModuleList([MixtralDecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])

    def export_in(self, dtype: torch.dtype):
        self.mask_min = torch.finfo(dtype).min

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        hidden_states = self.embed_tokens(input_ids)
        seq_len = input_ids.size(1)
        position_ids = torch.arange(0, seq_len, dtype=torch.long).unsqueeze(0)
        causal = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))
        keep = causal[None, None] & attention_mask[:, None, None, :].to(torch.bool)
        causal_mask = torch.zeros(keep.shape, dtype=hidden_states.dtype).masked_fill(~keep, self.mask_min)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal_mask, position_ids)
        return self.norm(hidden_states)

    @torch.jit.export
    def with_cache(self, input_ids: Tensor, attention_mask: Tensor, cache_position: Tensor, past_keys: Tensor,
                   past_values: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        # tests/zoo/common.py's static_cache_mask and cache_position_ids, as script writes them.
        hidden_states = self.embed_tokens(input_ids)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0).index_select(1, cache_position)
        slots = torch.arange(attention_mask.size(-1), dtype=torch.long)
        keep = (slots[None, :] <= cache_position[:, None])[None, None, :, :]
        keep = keep & attention_mask[:, None, None, :].to(torch.bool)
        keep = keep | ~keep.any(dim=-1, keepdim=True)
        causal_mask = torch.zeros(keep.shape, dtype=hidden_states.dtype).masked_fill(~keep, self.mask_min)
        keys: List[Tensor] = []
        values: List[Tensor] = []
        i = 0
        for decoder_layer in self.layers:
            hidden_states, key, value = decoder_layer.with_cache(hidden_states, causal_mask, position_ids,
                                                                 past_keys[i], past_values[i], cache_position)
            keys.append(key)
            values.append(value)
            i += 1
        return self.norm(hidden_states), torch.stack(keys), torch.stack(values)


class MixtralForCausalLM(nn.Module):
    max_length: Final[int]

    def __init__(self, config, cache_shape: List[int]):
        super().__init__()
        self.model = MixtralModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        self.max_length = cache_shape[3]
        self.cache_shape = cache_shape

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.lm_head(self.model(input_ids, attention_mask))

    # The decode interface (tests/zoo/common.py's StaticCacheDecoder, as script writes it).
    @torch.jit.export
    def prefill(self, input_ids: Tensor, attention_mask: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        batch = input_ids.size(0)
        prompt = input_ids.size(1)
        slots = torch.zeros(batch, self.max_length - prompt, dtype=attention_mask.dtype)
        cache_mask = torch.cat((attention_mask, slots), dim=-1)
        cache_position = torch.arange(prompt, dtype=torch.long)
        empty = torch.zeros(self.cache_shape, dtype=self.lm_head.weight.dtype)
        return self.decode_step(input_ids, cache_mask, cache_position, empty, empty)

    @torch.jit.export
    def decode_step(self, input_ids: Tensor, attention_mask: Tensor, cache_position: Tensor, past_keys: Tensor,
                    past_values: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        hidden_states, keys, values = self.model.with_cache(input_ids, attention_mask, cache_position, past_keys,
                                                            past_values)
        return self.lm_head(hidden_states), keys, values


VARIANTS = {
    "mixtral-tiny": dict(model_type="mixtral", hidden_size=128, intermediate_size=192, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=1000,
                         num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-5),
    # One head as wide as the hidden size (1.5 sticks), so repeat_kv returns the cache from its
    # `n_rep == 1` branch; experts whose intermediate size is 2.75 sticks, each called inside its
    # token branch.
    "mixtral-h96": dict(model_type="mixtral", hidden_size=96, intermediate_size=176, num_hidden_layers=1,
                        num_attention_heads=1, num_key_value_heads=1, head_dim=96, vocab_size=1024,
                        num_local_experts=2, num_experts_per_tok=1, rms_norm_eps=1e-5),
}


def build(name, config):
    cache_shape = [config["num_hidden_layers"], 1, config["num_key_value_heads"], DECODE_MAX_LENGTH,
                   config["head_dim"]]
    model = MixtralForCausalLM(config, cache_shape)
    rename_classes(model, "Llama", "Mixtral")
    card = {
        "name": name,
        "family": FAMILY,
        "description": "Mixtral-style mixture-of-experts decoder, scripted (data-dependent routing)",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [{"name": "logits", "kind": "logits"}],
        "decode": decode_card(config["vocab_size"], cache_shape),
        "config": config,
    }
    return model, card, "script", config["hidden_size"]
