"""Models a user might bring that the zoo's families do not cover: traced without a model
card, so Stickler must take their inputs from --input."""
import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet layout, two blocks deep."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(16, 16), BasicBlock(16, 16))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def write_foreign(out_dir):
    """Returns index entries: the file, the --input flags to use, and module calls."""
    from common import record_module_calls

    torch.manual_seed(7)
    model = ResNet().eval()
    example = torch.rand(1, 3, 32, 32, dtype=torch.float64).float()
    calls = record_module_calls(model, (example,))
    traced = torch.jit.trace(model, example)
    path = f"{out_dir}/resnet-nocard.pt"
    torch.jit.save(traced, path)
    return [{
        "name": "resnet-nocard",
        "file": "foreign/resnet-nocard.pt",
        "inputs": ["x:1x3x32x32:float32"],
        "module_calls": calls,
        "expected_paths": ["layer1.0.conv1", "layer2.0.downsample.0", "layer2.1.bn2", "fc"],
    }]
