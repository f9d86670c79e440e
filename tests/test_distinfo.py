"""Distribution versions read from dist-info folder names agree with importlib.metadata."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

from onnxlint import distinfo


@pytest.mark.parametrize("name", ["onnx", "onnxruntime", "protobuf", "numpy", "ml_dtypes"])
def test_versions_match_importlib_metadata(name: str) -> None:
    assert distinfo.version(name) == metadata.version(name)


def test_names_are_compared_normalized() -> None:
    assert distinfo.normalized("Onnxruntime-QNN") == distinfo.normalized("onnxruntime_qnn")
    assert distinfo.version("ML-Dtypes") == metadata.version("ml_dtypes")


def test_missing_distribution_is_none() -> None:
    assert distinfo.version("onnxlint-no-such-distribution") is None


def test_first_path_entry_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "demo_pkg-1.0.dist-info").mkdir(parents=True)
    (second / "demo_pkg-2.0.dist-info").mkdir(parents=True)
    (second / "not-a-dist").mkdir()
    monkeypatch.setattr(sys, "path", [str(first), str(second), str(tmp_path / "missing")])
    assert distinfo.installed_versions() == {"demo_pkg": "1.0"}
