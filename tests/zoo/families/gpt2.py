"""GPT-2 (GPT2LMHeadModel): Conv1D layers computed with addmm, NewGELUActivation with
torch.pow(x, 3.0), a causal mask sliced from a registered tril buffer, a tied lm_head; and the
decode interface, a static KV cache written at each token's slot (the forward is traced without
it, op for op as before)."""
import torch
from torch import nn

from common import (DECODE_PROMPT, DECODE_PROMPT_TOKENS, NewGELUActivation, StaticCacheDecoder, cache_position_ids,
                    decode_card, static_cache_mask, token_input)

FAMILY = "gpt2"


class Conv1D(nn.Module):
    """A linear layer with transposed weights, as in transformers.pytorch_utils.Conv1D."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        max_positions = config["n_positions"]
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(1, 1, max_positions, max_positions),
            persistent=False,
        )
        self.embed_dim = config["n_embd"]
        self.num_heads = config["n_head"]
        self.head_dim = self.embed_dim // self.num_heads
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (num_heads * attn_head_size,))

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        if attention_mask is None:
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
            mask_value = torch.full([], torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype)
            attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        else:
            # Over a static cache: the additive mask of the slots each token sees.
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states, attention_mask=None, past_key=None, past_value=None, cache_position=None):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        if past_key is not None:
            # The tokens' keys and values at their slots, as Transformers' StaticCache writes them.
            key = past_key = past_key.index_copy(2, cache_position, key)
            value = past_value = past_value.index_copy(2, cache_position, value)
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.resid_dropout(self.c_proj(attn_output))
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config["n_embd"])
        self.c_proj = Conv1D(config["n_embd"], intermediate_size)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        return self.dropout(hidden_states)


class GPT2Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden_size = config["n_embd"]
        self.ln_1 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.mlp = GPT2MLP(4 * hidden_size, config)

    def forward(self, hidden_states, attention_mask=None, past_key=None, past_value=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        if past_key is None:
            hidden_states = self.attn(hidden_states) + residual
        else:
            hidden_states, past_key, past_value = self.attn(hidden_states, attention_mask, past_key, past_value,
                                                            cache_position)
            hidden_states = hidden_states + residual
        residual = hidden_states
        hidden_states = self.mlp(self.ln_2(hidden_states))
        if past_key is None:
            return residual + hidden_states
        return residual + hidden_states, past_key, past_value


class GPT2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config["n_embd"]
        self.wte = nn.Embedding(config["vocab_size"], self.embed_dim)
        self.wpe = nn.Embedding(config["n_positions"], self.embed_dim)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(config) for _ in range(config["n_layer"])])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=1e-5)

    def forward(self, input_ids, attention_mask=None, cache_position=None, past_keys=None, past_values=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        if past_keys is None:
            position_ids = torch.arange(0, input_shape[-1], dtype=torch.long).unsqueeze(0)
        else:
            position_ids = cache_position_ids(attention_mask, cache_position)
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        hidden_states = self.drop(hidden_states)
        if past_keys is None:
            for block in self.h:
                hidden_states = block(hidden_states)
            return self.ln_f(hidden_states)
        # With a static cache: `attention_mask` covers the cache's slots.
        cache_mask = static_cache_mask(attention_mask, cache_position, hidden_states.dtype)
        keys, values = [], []
        for i, block in enumerate(self.h):
            hidden_states, key, value = block(hidden_states, cache_mask, past_keys[i], past_values[i], cache_position)
            keys.append(key)
            values.append(value)
        return self.ln_f(hidden_states), torch.stack(keys), torch.stack(values)


class GPT2LMHeadModel(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config["n_embd"], config["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as in HF

    def forward(self, input_ids):
        hidden_states = self.transformer(input_ids)
        return self.lm_head(hidden_states)

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.transformer(input_ids, attention_mask, cache_position, past_keys,
                                                       past_values)
        return self.lm_head(hidden_states), keys, values


VARIANTS = {
    "gpt2-tiny": dict(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=2),
    "gpt2-odd-vocab": dict(vocab_size=1001, n_positions=64, n_embd=128, n_layer=1, n_head=2),
    "gpt2-h80": dict(vocab_size=997, n_positions=64, n_embd=80, n_layer=3, n_head=1),
    # Two heads of 80: together they fill sticks at 96 each, but a decode cache is read back one
    # head at a time.
    "gpt2-h160": dict(vocab_size=1000, n_positions=64, n_embd=160, n_layer=1, n_head=2),
}


def build(name, config):
    model = GPT2LMHeadModel(config)
    # Positions count the tokens kept (the prompt's 16, then one per step) and the learned
    # position table has n_positions rows: the cache leaves room for the steps it allows.
    max_length = DECODE_PROMPT + config["n_positions"] - DECODE_PROMPT_TOKENS
    heads = config["n_head"]
    model.max_length = max_length
    model.cache_shape = [config["n_layer"], 1, heads, max_length, config["n_embd"] // heads]
    card = {
        "name": name,
        "family": FAMILY,
        "description": "GPT-2 style causal LM",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"])],
        "outputs": [{"name": "logits", "kind": "logits"}],
        "decode": decode_card(config["vocab_size"], model.cache_shape, max_length),
        "config": dict(config, model_type="gpt2"),
    }
    return model, card, "trace", config["n_embd"]
