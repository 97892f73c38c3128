"""ViT image encoder (ViTModel): conv2d patch embedding, a class token and learned position
embeddings, pre-LayerNorm encoder layers with GELU, a tanh pooler."""
import math

import torch
from torch import nn

from common import GELUActivation, image_encoder_card

FAMILY = "vit"


class ViTPatchEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        image_size, patch_size = config["image_size"], config["patch_size"]
        self.num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Conv2d(config["num_channels"], config["hidden_size"], kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values):
        return self.projection(pixel_values).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, config["hidden_size"]) * 0.02)
        self.patch_embeddings = ViTPatchEmbeddings(config)
        self.position_embeddings = nn.Parameter(torch.randn(1, self.patch_embeddings.num_patches + 1, config["hidden_size"]) * 0.02)
        self.dropout = nn.Dropout(0.0)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        embeddings = self.patch_embeddings(pixel_values)
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        return self.dropout(embeddings + self.position_embeddings)


class ViTSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config["num_attention_heads"]
        self.attention_head_size = config["hidden_size"] // self.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config["hidden_size"], self.all_head_size)
        self.key = nn.Linear(config["hidden_size"], self.all_head_size)
        self.value = nn.Linear(config["hidden_size"], self.all_head_size)
        self.dropout = nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        attention_probs = self.dropout(nn.functional.softmax(attention_scores, dim=-1))
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))


class ViTSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["hidden_size"], config["hidden_size"])
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        return self.dropout(self.dense(hidden_states))


class ViTAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = ViTSelfAttention(config)
        self.output = ViTSelfOutput(config)

    def forward(self, hidden_states):
        return self.output(self.attention(hidden_states))


class ViTIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["hidden_size"], config["intermediate_size"])
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class ViTOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["intermediate_size"], config["hidden_size"])
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        return self.dropout(self.dense(hidden_states)) + input_tensor


class ViTLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = ViTAttention(config)
        self.intermediate = ViTIntermediate(config)
        self.output = ViTOutput(config)
        self.layernorm_before = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.layernorm_after = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

    def forward(self, hidden_states):
        hidden_states = self.attention(self.layernorm_before(hidden_states)) + hidden_states
        layer_output = self.intermediate(self.layernorm_after(hidden_states))
        return self.output(layer_output, hidden_states)


class ViTEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(config) for _ in range(config["num_hidden_layers"])])

    def forward(self, hidden_states):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states)
        return hidden_states


class ViTPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config["hidden_size"], config["hidden_size"])
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class ViTModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = ViTEmbeddings(config)
        self.encoder = ViTEncoder(config)
        self.layernorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.pooler = ViTPooler(config)

    def forward(self, pixel_values):
        sequence_output = self.layernorm(self.encoder(self.embeddings(pixel_values)))
        return sequence_output, self.pooler(sequence_output)


def _config(hidden, layers, heads, image=32, patch=8):
    return dict(model_type="vit", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=4 * hidden, image_size=image, patch_size=patch, num_channels=3, layer_norm_eps=1e-12)


VARIANTS = {
    "vit-tiny": _config(64, 2, 2),
    "vit-h96": _config(96, 1, 3, image=24, patch=6),
}


def build(name, config):
    card = image_encoder_card(name, FAMILY, "ViT-style image encoder", config)
    return ViTModel(config), card, "trace", config["hidden_size"]
