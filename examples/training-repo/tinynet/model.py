"""TinyNet: conv -> GELU -> global pool -> linear. Small enough to export in a second."""

from __future__ import annotations

import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.head = nn.Linear(8, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.gelu(self.conv(x))
        return self.head(y.mean(dim=(2, 3)))


def example_input(batch: int = 1) -> torch.Tensor:
    return torch.randn(batch, 3, 32, 32)
