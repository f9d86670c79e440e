"""A tiny image classifier standing in for a training repository's model package."""

from tinynet.model import TinyNet

__all__ = ["TinyNet"]
