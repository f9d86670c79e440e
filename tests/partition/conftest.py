"""Helpers for the partition tests: lint context for a model, hand-built models."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import onnx
import pytest

from onnxlint.analyses.partition import Partitions
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.engine import resolve_eps
from onnxlint.index import ModelIndex
from onnxlint.loader import load

from ..conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import partition_models

__all__ = ["context", "partition_models", "partitions"]


def context(model: onnx.ModelProto | str, eps: Sequence[str], **config: Any) -> LintContext:
    if isinstance(model, str):
        model = onnx.parser.parse_model(model)
    cfg = Config(**config)
    loaded = load(model.SerializeToString(), cfg.limits)
    assert loaded.model is not None
    return LintContext(
        loaded=loaded, index=ModelIndex(loaded.model), config=cfg, eps=resolve_eps(list(eps), cfg)
    )


def partitions(model: onnx.ModelProto | str, eps: Sequence[str], **config: Any) -> Partitions:
    return context(model, eps, **config).analysis(Partitions)


@pytest.fixture
def qnn_available() -> None:
    try:
        import onnxruntime_qnn  # noqa: F401
    except ImportError:
        pytest.skip("onnxruntime-qnn is not installed")
