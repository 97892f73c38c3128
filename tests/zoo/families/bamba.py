"""Bamba-style hybrid decoder (BambaForCausalLM): Mamba2 mixer layers (softplus, exp, cumsum,
constant_pad_nd, a chunked SSD scan) interleaved with attention layers. The mixer also writes
its cache the way a functionalized cache update does: slice_scatter for the prefill, roll and
select_scatter for the next step, copy_ for the SSM state. These are the operators the 2025
device stack could not lower."""
import torch
from torch import nn

from common import mask_input, rename_classes, token_input
from families.llama import LlamaAttention, LlamaMLP, LlamaRMSNorm

FAMILY = "bamba"


def pad_tensor_by_size(input_tensor, pad_size):
    pad_shape = (0, 0, 0, 0, 0, pad_size, 0, 0) if len(input_tensor.shape) == 4 else (0, 0, 0, pad_size, 0, 0)
    return nn.functional.pad(input_tensor, pad_shape, mode="constant", value=0)


def reshape_into_chunks(input_tensor, pad_size, chunk_size):
    input_tensor = pad_tensor_by_size(input_tensor, pad_size)
    if len(input_tensor.shape) == 3:
        return input_tensor.reshape(input_tensor.shape[0], -1, chunk_size, input_tensor.shape[2])
    return input_tensor.reshape(input_tensor.shape[0], -1, chunk_size, input_tensor.shape[2], input_tensor.shape[3])


def segment_sum(input_tensor):
    chunk_size = input_tensor.size(-1)
    input_tensor = input_tensor[..., None].expand(*input_tensor.size(), chunk_size)
    mask = torch.tril(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=-1)
    input_tensor = input_tensor.masked_fill(~mask, 0)
    tensor_segsum = torch.cumsum(input_tensor, dim=-2)
    mask = torch.tril(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=0)
    return tensor_segsum.masked_fill(~mask, -torch.inf)


class BambaRMSNormGated(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states, gate):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        hidden_states = hidden_states * nn.functional.silu(gate.to(torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class BambaMixer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config["hidden_size"]
        self.num_heads = config["mamba_n_heads"]
        self.head_dim = config["mamba_d_head"]
        self.ssm_state_size = config["mamba_d_state"]
        self.conv_kernel_size = config["mamba_d_conv"]
        self.intermediate_size = self.num_heads * self.head_dim
        self.n_groups = config["mamba_n_groups"]
        self.chunk_size = config["mamba_chunk_size"]
        self.conv_dim = self.intermediate_size + 2 * self.n_groups * self.ssm_state_size
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, kernel_size=self.conv_kernel_size,
                                groups=self.conv_dim, padding=self.conv_kernel_size - 1, bias=True)
        projection_size = self.intermediate_size + self.conv_dim + self.num_heads
        self.in_proj = nn.Linear(self.hidden_size, projection_size, bias=False)
        self.act = nn.SiLU()
        self.dt_bias = nn.Parameter(torch.ones(self.num_heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.num_heads + 1, dtype=torch.float32)))
        self.norm = BambaRMSNormGated(self.intermediate_size)
        self.D = nn.Parameter(torch.ones(self.num_heads))
        self.out_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)

    def forward(self, input_states):
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        projected_states = self.in_proj(input_states)
        gate, hidden_states_B_C, dt = projected_states.split([self.intermediate_size, self.conv_dim, self.num_heads], dim=-1)

        # The cache a decode step would continue from.
        hidden_states_B_C_transposed = hidden_states_B_C.transpose(1, 2)
        conv_state = torch.zeros(batch_size, self.conv_dim, self.conv_kernel_size, dtype=dtype)
        tail = hidden_states_B_C_transposed[..., -(self.conv_kernel_size - 1):]
        conv_state = torch.slice_scatter(conv_state, tail, dim=2, start=0, end=self.conv_kernel_size - 1, step=1)
        conv_state = conv_state.roll(shifts=-1, dims=-1)
        conv_state = torch.select_scatter(conv_state, hidden_states_B_C_transposed[..., -1], dim=-1, index=-1)

        hidden_states_B_C = self.act(self.conv1d(hidden_states_B_C_transposed)[..., :seq_len].transpose(1, 2))
        groups_time_state_size = self.n_groups * self.ssm_state_size
        hidden_states, B, C = torch.split(hidden_states_B_C, [self.intermediate_size, groups_time_state_size, groups_time_state_size], dim=-1)

        A = -torch.exp(self.A_log.float())
        dt = nn.functional.softplus(dt + self.dt_bias)
        hidden_states = hidden_states.reshape(batch_size, seq_len, -1, self.head_dim).float()
        B = B.reshape(batch_size, seq_len, -1, self.ssm_state_size).float()
        C = C.reshape(batch_size, seq_len, -1, self.ssm_state_size).float()
        B = B.repeat_interleave(self.num_heads // self.n_groups, dim=2, output_size=self.num_heads)
        C = C.repeat_interleave(self.num_heads // self.n_groups, dim=2, output_size=self.num_heads)
        pad_size = (self.chunk_size - seq_len % self.chunk_size) % self.chunk_size
        D_residual = self.D[..., None] * pad_tensor_by_size(hidden_states, pad_size)

        hidden_states = hidden_states * dt[..., None]
        A = A.to(hidden_states.dtype) * dt
        hidden_states, A, B, C = [reshape_into_chunks(t, pad_size, self.chunk_size) for t in (hidden_states, A, B, C)]

        A = A.permute(0, 3, 1, 2)
        A_cumsum = torch.cumsum(A, dim=-1)
        L = torch.exp(segment_sum(A))
        G = (C[:, :, :, None, :, :] * B[:, :, None, :, :, :]).sum(dim=-1)
        M = (G[..., None] * L.permute(0, 2, 3, 4, 1)[..., None]).sum(dim=-1)
        Y_diag = (M[..., None] * hidden_states[:, :, None]).sum(dim=3)

        decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
        B_decay = B * decay_states.permute(0, -2, -1, 1)[..., None]
        states = (B_decay[..., None, :] * hidden_states[..., None]).sum(dim=2)
        previous_states = torch.zeros_like(states[:, :1])
        states = torch.cat([previous_states, states], dim=1)
        decay_chunk = torch.exp(segment_sum(nn.functional.pad(A_cumsum[:, :, :, -1], (1, 0))))
        decay_chunk = decay_chunk.transpose(1, 3)
        new_states = (decay_chunk[..., None, None] * states[:, :, None, ...]).sum(dim=1)
        states, ssm_state = new_states[:, :-1], new_states[:, -1]

        state_decay_out = torch.exp(A_cumsum)
        C_times_states = C[..., None, :] * states[:, :, None, ...]
        Y_off = C_times_states.sum(-1) * state_decay_out.permute(0, 2, 3, 1)[..., None]
        y = Y_diag + Y_off
        y = y.reshape(batch_size, -1, self.num_heads, self.head_dim)
        y = y + D_residual
        if pad_size > 0:
            y = y[:, :seq_len, :, :]
        y = y.reshape(batch_size, seq_len, -1)

        ssm_cache = torch.zeros_like(ssm_state)
        ssm_cache[:] = ssm_state  # an in-place cache write: aten::copy_

        scan_output = self.norm(y, gate)
        return self.out_proj(scan_output.to(dtype)), conv_state, ssm_cache


class BambaDecoderLayer(nn.Module):
    def __init__(self, config, layer_type):
        super().__init__()
        self.layer_type = layer_type
        self.feed_forward = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        self.pre_ff_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])
        if layer_type == "mamba":
            self.mamba = BambaMixer(config)
        else:
            self.self_attn = LlamaAttention(config)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        cache = ()
        if self.layer_type == "mamba":
            hidden_states, conv_state, ssm_state = self.mamba(hidden_states)
            cache = (conv_state, ssm_state)
        else:
            hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.feed_forward(self.pre_ff_layernorm(hidden_states))
        return residual + hidden_states, cache


class BambaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        attention = set(config["attn_layer_indices"])
        self.layers = nn.ModuleList([
            BambaDecoderLayer(config, "attention" if i in attention else "mamba")
            for i in range(config["num_hidden_layers"])
        ])
        self.final_layernorm = LlamaRMSNorm(config["hidden_size"], eps=config["rms_norm_eps"])

    def forward(self, input_ids, attention_mask):
        hidden_states = self.embed_tokens(input_ids)
        seq_len = input_ids.shape[1]
        position_ids = torch.arange(0, seq_len, dtype=torch.long).unsqueeze(0)
        causal = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))
        keep = causal[None, None] & attention_mask[:, None, None, :].to(torch.bool)
        causal_mask = torch.zeros(keep.shape, dtype=hidden_states.dtype).masked_fill(~keep, torch.finfo(hidden_states.dtype).min)
        caches = []
        for decoder_layer in self.layers:
            hidden_states, cache = decoder_layer(hidden_states, causal_mask, position_ids)
            caches.extend(cache)
        return self.final_layernorm(hidden_states), tuple(caches)


class BambaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = BambaModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)

    def forward(self, input_ids, attention_mask):
        hidden_states, caches = self.model(input_ids, attention_mask)
        return (self.lm_head(hidden_states),) + caches


def _config(hidden, layers, attn_layers, vocab, heads=8, d_head=32):
    return dict(model_type="bamba", hidden_size=hidden, num_hidden_layers=layers, attn_layer_indices=attn_layers,
                vocab_size=vocab, intermediate_size=2 * hidden, num_attention_heads=2, num_key_value_heads=1,
                head_dim=hidden // 2, rms_norm_eps=1e-5, mamba_n_heads=heads, mamba_d_head=d_head, mamba_d_state=16,
                mamba_d_conv=4, mamba_n_groups=1, mamba_chunk_size=8)


VARIANTS = {
    "bamba-tiny": _config(128, 2, [1], 1000),
    "bamba-3layer": _config(192, 3, [1], 1024, heads=6, d_head=64),
}


def build(name, config):
    model = BambaForCausalLM(config)
    rename_classes(model, "Llama", "Bamba")
    seq_len = 12  # not a whole number of scan chunks, so the scan pads (constant_pad_nd)
    mamba_layers = [i for i in range(config["num_hidden_layers"]) if i not in config["attn_layer_indices"]]
    outputs = [{"name": "logits", "kind": "logits"}]
    for i in mamba_layers:
        outputs += [{"name": f"conv_state.{i}", "kind": "other"}, {"name": f"ssm_state.{i}", "kind": "other"}]
    card = {
        "name": name,
        "family": FAMILY,
        "description": "Bamba-style hybrid Mamba2/attention decoder",
        "inputs": [token_input("input_ids", 1, seq_len, config["vocab_size"]), mask_input("attention_mask", 1, seq_len)],
        "outputs": outputs,
        "config": config,
    }
    return model, card, "trace", config["hidden_size"]
