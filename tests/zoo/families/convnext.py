"""ConvNeXt image encoder (ConvNextModel): a patchifying conv stem, stages of depthwise 7x7
convolutions whose pointwise MLP runs channels-last (permuted to NHWC, LayerNorm over channels,
two linears, a layer scale, permuted back to NCHW and added to the residual), channels-first
LayerNorms (in place over dimension 1, or permuted around nn.LayerNorm: permute_norm), strided
conv downsampling and a mean-pooled head."""
import torch
from torch import nn

from common import GELUActivation, image_encoder_card

FAMILY = "convnext"


class ConvNextLayerNorm(nn.LayerNorm):
    """LayerNorm over channels, for NHWC input (channels_last) or NCHW input (channels_first).

    Channels-first input is normalized in place over dimension 1, as the original ConvNeXt and
    Transformers up to 4.5x write it, so the stem and the downsampling convolutions stay NCHW
    while each layer's MLP runs NHWC: the residual add meets the two layouts. Transformers'
    later spelling permutes around nn.LayerNorm instead (permute_norm), which leaves everything
    after the stem channels-last in memory."""

    def __init__(self, normalized_shape, *, eps=1e-6, data_format="channels_last", permute_norm=False):
        super().__init__(normalized_shape, eps=eps)
        self.channels_first = data_format == "channels_first"
        self.permute_norm = permute_norm

    def forward(self, features):
        if not self.channels_first:
            return super().forward(features)
        if self.permute_norm:
            return super().forward(features.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        mean = features.mean(1, keepdim=True)
        variance = (features - mean).pow(2).mean(1, keepdim=True)
        features = (features - mean) / torch.sqrt(variance + self.eps)
        return self.weight[:, None, None] * features + self.bias[:, None, None]


class ConvNextEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch_embeddings = nn.Conv2d(config["num_channels"], config["hidden_sizes"][0],
                                          kernel_size=config["patch_size"], stride=config["patch_size"])
        self.layernorm = ConvNextLayerNorm(config["hidden_sizes"][0], eps=1e-6, data_format="channels_first",
                                           permute_norm=config["permute_norm"])

    def forward(self, pixel_values):
        return self.layernorm(self.patch_embeddings(pixel_values))


class ConvNextLayer(nn.Module):
    def __init__(self, config, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.layernorm = ConvNextLayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = GELUActivation()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.layer_scale_parameter = nn.Parameter(config["layer_scale_init_value"] * torch.ones(dim))

    def forward(self, features):
        residual = features
        features = self.dwconv(features)
        features = features.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        features = self.layernorm(features)
        features = self.pwconv1(features)
        features = self.act(features)
        features = self.pwconv2(features)
        features = self.layer_scale_parameter * features
        features = features.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
        return residual + features


class ConvNextStage(nn.Module):
    def __init__(self, config, in_channels, out_channels, stride, depth):
        super().__init__()
        if in_channels != out_channels or stride > 1:
            self.downsampling_layer = nn.Sequential(
                ConvNextLayerNorm(in_channels, eps=1e-6, data_format="channels_first",
                                  permute_norm=config["permute_norm"]),
                nn.Conv2d(in_channels, out_channels, kernel_size=stride, stride=stride),
            )
        else:
            self.downsampling_layer = nn.Identity()
        self.layers = nn.Sequential(*[ConvNextLayer(config, out_channels) for _ in range(depth)])

    def forward(self, features):
        return self.layers(self.downsampling_layer(features))


class ConvNextEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        sizes = config["hidden_sizes"]
        self.stages = nn.ModuleList()
        previous = sizes[0]
        for index, (size, depth) in enumerate(zip(sizes, config["depths"])):
            self.stages.append(ConvNextStage(config, previous, size, 2 if index > 0 else 1, depth))
            previous = size

    def forward(self, features):
        for stage in self.stages:
            features = stage(features)
        return features


class ConvNextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = ConvNextEmbeddings(config)
        self.encoder = ConvNextEncoder(config)
        self.layernorm = nn.LayerNorm(config["hidden_sizes"][-1], eps=config["layer_norm_eps"])

    def forward(self, pixel_values):
        last_hidden_state = self.encoder(self.embeddings(pixel_values))
        # Global average pooling: (N, C, H, W) -> (N, C).
        pooled_output = self.layernorm(last_hidden_state.mean([-2, -1]))
        return last_hidden_state, pooled_output


def _config(hidden_sizes, depths, image=32, patch=4, permute_norm=False):
    return dict(model_type="convnext", hidden_sizes=list(hidden_sizes), depths=list(depths), num_channels=3,
                patch_size=patch, image_size=image, layer_scale_init_value=1e-6, layer_norm_eps=1e-12,
                permute_norm=permute_norm)


VARIANTS = {
    "convnext-tiny": _config([64, 128], [1, 1]),
    "convnext-permuted-norm": _config([64, 128], [1, 1], permute_norm=True),
    "convnext-h96": _config([96, 192], [1, 1]),
}


def build(name, config):
    card = image_encoder_card(name, FAMILY, "ConvNeXt-style convolutional image encoder with channels-last norms", config)
    return ConvNextModel(config), card, "trace", config["hidden_sizes"][-1]
