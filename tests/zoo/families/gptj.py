"""GPT-J decoders (GPTJForCausalLM, as Transformers' modeling_gptj writes them; CodeGen's rotation
too): interleaved rotary embeddings (rotate_every_two: the even and odd values of each pair turn
together, taken with strided slices and put back with stack and flatten) over the first
rotary_dim values of each head, read from one precomputed [positions, rotary_dim] table of sin
then cos (a buffer gathered by position and split in two, each half repeat_interleave'd), separate
q_proj, k_proj, v_proj and out_proj without biases, attention and MLP in parallel on one layer
norm's output (fc_in, fc_out with gelu_new) and an untied lm_head with a bias."""
import torch
from torch import nn

from common import StaticCacheDecoder, causal_lm_card
from families.llama import LlamaModel, run_decoder

FAMILY = "gptj"


def create_sinusoidal_positions(num_pos, dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)  # in einsum notation: rearrange(x, '... d j -> ... (d j)')


def apply_rotary_pos_emb(tensor, sin, cos):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class GPTJAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config["n_embd"]
        self.num_attention_heads = config["n_head"]
        self.head_dim = self.embed_dim // self.num_attention_heads
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32))
        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.rotary_dim = config["rotary_dim"]
        self.register_buffer("embed_positions", create_sinusoidal_positions(config["n_positions"], self.rotary_dim),
                             persistent=False)

    def _split_heads(self, tensor, num_attention_heads, attn_head_size, rotary):
        new_shape = tensor.size()[:-1] + (num_attention_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        if rotary:
            return tensor
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value, attention_mask):
        # Keep the attention weights computation in fp32 to avoid overflow issues
        query = query.to(torch.float32)
        key = key.to(torch.float32)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / self.scale_attn
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states, attention_mask, position_ids, past_key=None, past_value=None,
                cache_position=None):
        query = self._split_heads(self.q_proj(hidden_states), self.num_attention_heads, self.head_dim, True)
        key = self._split_heads(self.k_proj(hidden_states), self.num_attention_heads, self.head_dim, True)
        value = self._split_heads(self.v_proj(hidden_states), self.num_attention_heads, self.head_dim, False)
        # Transformers' traced path: the table repeated per batch and gathered at the positions.
        embed_positions = self.embed_positions.repeat(position_ids.shape[0], 1, 1)
        repeated_position_ids = position_ids.unsqueeze(-1).repeat(1, 1, embed_positions.shape[-1])
        sincos = torch.gather(embed_positions, 1, repeated_position_ids)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        # Every GPT-J and CodeGen checkpoint sets rotary_dim (without it, Transformers' table is as
        # wide as the model and fits one head only).
        k_rot = key[:, :, :, : self.rotary_dim]
        k_pass = key[:, :, :, self.rotary_dim:]
        q_rot = query[:, :, :, : self.rotary_dim]
        q_pass = query[:, :, :, self.rotary_dim:]
        k_rot = apply_rotary_pos_emb(k_rot, sin, cos)
        q_rot = apply_rotary_pos_emb(q_rot, sin, cos)
        key = torch.cat([k_rot, k_pass], dim=-1)
        query = torch.cat([q_rot, q_pass], dim=-1)
        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)
        if past_key is not None:
            key = past_key = past_key.index_copy(2, cache_position, key)
            value = past_value = past_value.index_copy(2, cache_position, value)
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        attn_output = self.out_proj(attn_output)
        if past_key is None:
            return attn_output
        return attn_output, past_key, past_value


class GPTJMLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.fc_in = nn.Linear(config["n_embd"], intermediate_size)
        self.fc_out = nn.Linear(intermediate_size, config["n_embd"])
        self.act = nn.GELU(approximate="tanh")  # gelu_new

    def forward(self, hidden_states):
        return self.fc_out(self.act(self.fc_in(hidden_states)))


class GPTJBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config["n_embd"], eps=config["layer_norm_epsilon"])
        self.attn = GPTJAttention(config)
        inner_dim = config["n_inner"] if config.get("n_inner") is not None else 4 * config["n_embd"]
        self.mlp = GPTJMLP(inner_dim, config)

    def forward(self, hidden_states, attention_mask, position_ids, past_key=None, past_value=None,
                cache_position=None):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        if past_key is None:
            attn_output = self.attn(hidden_states, attention_mask, position_ids)
        else:
            attn_output, past_key, past_value = self.attn(hidden_states, attention_mask, position_ids, past_key,
                                                          past_value, cache_position)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = attn_output + feed_forward_hidden_states + residual
        if past_key is None:
            return hidden_states
        return hidden_states, past_key, past_value


class GPTJModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config["vocab_size"], config["n_embd"])
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([GPTJBlock(config) for _ in range(config["n_layer"])])
        self.ln_f = nn.LayerNorm(config["n_embd"], eps=config["layer_norm_epsilon"])

    _causal_mask = LlamaModel._causal_mask

    def forward(self, input_ids, attention_mask, cache_position=None, past_keys=None, past_values=None):
        return run_decoder(self.h, self.ln_f, self._causal_mask, input_ids, self.drop(self.wte(input_ids)),
                           attention_mask, cache_position, past_keys, past_values)


class GPTJForCausalLM(StaticCacheDecoder, nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = GPTJModel(config)
        self.lm_head = nn.Linear(config["n_embd"], config["vocab_size"])

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.transformer(input_ids, attention_mask))

    def decode_step(self, input_ids, attention_mask, cache_position, past_keys, past_values):
        hidden_states, keys, values = self.transformer(input_ids, attention_mask, cache_position, past_keys,
                                                       past_values)
        return self.lm_head(hidden_states), keys, values


def _config(n_embd, n_layer, n_head, vocab_size, rotary_dim, n_inner=None):
    # num_hidden_layers and hidden_size: the names the rest of the zoo (and the card) read.
    return dict(model_type="gptj", n_embd=n_embd, n_layer=n_layer, n_head=n_head, vocab_size=vocab_size,
                rotary_dim=rotary_dim, n_inner=n_inner, n_positions=128, layer_norm_epsilon=1e-5,
                num_hidden_layers=n_layer, hidden_size=n_embd)


VARIANTS = {
    # GPT-J-6B's quarter rotated, in one head of 80 as wide as the model: the pairs' first values
    # move to one stick and their second ones to another, the hidden size is padded too, and the
    # decode cache's head looks like the hidden size.
    "gptj-tiny": _config(80, 2, 1, 1000, 20),
    # One head of 256 with half of it rotated: once the pairs are apart each half fills two
    # sticks, and nothing needs padding.
    "gptj-rd128": _config(256, 2, 1, 1000, 128),
}


def build(name, config):
    model = GPTJForCausalLM(config)
    heads = config["n_head"]
    card = causal_lm_card(model, name, FAMILY,
                          "GPT-J-style decoder (interleaved partial rotary from a sin/cos table, parallel attention)",
                          config, heads, config["n_embd"] // heads)
    return model, card, "trace", config["n_embd"]
