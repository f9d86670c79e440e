"""onnxlint.torch.check_export against the real exporters (torch CPU wheel).

Marked ``torch``; skipped with the reason when torch is absent. CI runs these
through ``.ci/torch-tests.sh``, which installs the CPU wheel (never CUDA).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from .conftest import torch_or_skip

torch: Any = torch_or_skip()

import onnxlint.torch as olt  # noqa: E402  (after the skip: the module is useless without torch)
from onnxlint.testing import assert_deployable  # noqa: E402

pytestmark = pytest.mark.torch

needs_dynamo = pytest.mark.skipif(
    not olt.dynamo_available(), reason="the dynamo exporter needs onnxscript (not installed)"
)


class TinyNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: Any) -> Any:
        return torch.nn.functional.gelu(self.fc(x))


class DataDependent(torch.nn.Module):
    """A branch on a tensor value: torch.export refuses it, TorchScript tracing bakes it in."""

    def forward(self, x: Any) -> Any:
        if x.sum() > 0:
            return x * 2
        return x - 1


def _files(folder: Path) -> set[str]:
    """Files left in ``folder``, but ORT's own ``.ses`` (onnxruntime 1.32 writes it into
    ``$TMPDIR`` on import, whoever imports it: docs/SECURITY.md)."""
    return {
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != ".ses"
    }


@pytest.fixture
def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work and temp folder in one empty place, to prove that nothing is written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    "dynamo",
    [pytest.param(False, id="torchscript"), pytest.param(True, id="dynamo", marks=needs_dynamo)],
)
def test_exports_in_memory_and_lints(watched: Path, dynamo: bool) -> None:
    model = TinyNet().eval()
    report = olt.check_export(model, (torch.randn(2, 4),), ep="cpu", opset=18, dynamo=dynamo)
    assert report.exporter == ("dynamo" if dynamo else "torchscript")
    assert report.opset == 18
    assert report.model is not None
    assert report.model.opset_import[0].version == 18
    assert report.errors == []
    # nothing left behind, not even in the temp folder (torch may create empty cache folders)
    assert _files(watched) == set()


@pytest.mark.parametrize(
    "dynamo",
    [pytest.param(False, id="torchscript"), pytest.param(True, id="dynamo", marks=needs_dynamo)],
)
def test_dynamic_shapes_reach_the_model(dynamo: bool) -> None:
    report = olt.check_export(
        TinyNet().eval(),
        (torch.randn(2, 4),),
        ep="cpu",
        opset=18,
        dynamo=dynamo,
        dynamic_shapes={"x": {0: "batch"}},
    )
    assert report.model is not None
    dims = report.model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 4]


def test_searches_torchscript_opsets_and_recommends(watched: Path) -> None:
    # ORT 1.14 loads up to opset 18: the exporter default (20) would not load there
    report = olt.check_export(
        TinyNet().eval(),
        (torch.randn(2, 4),),
        ep="cpu",
        dynamo=False,
        config={"target-ort": "1.14"},
    )
    assert report.default_opset == 20
    assert [t.opset for t in report.trials] == list(range(11, 21))
    by_opset = {t.opset: t for t in report.trials}
    assert by_opset[20].errors >= 1 and by_opset[18].errors == 0
    assert report.opset == 18
    assert report.recommendation().startswith("export with opset_version=18 (torchscript exporter)")
    assert "the exporter default opset 20 leaves" in report.recommendation()
    assert _files(watched) == set()


@needs_dynamo
def test_auto_falls_back_to_torchscript_when_torch_export_fails() -> None:
    report = olt.check_export(DataDependent(), (torch.ones(3),), ep="cpu", opset=17)
    assert report.exporter == "torchscript"


@needs_dynamo
def test_dynamo_only_reports_why_it_failed() -> None:
    with pytest.raises(olt.ExportFailed, match="dynamo opset 18"):
        olt.check_export(DataDependent(), (torch.ones(3),), ep="cpu", opset=18, dynamo=True)


def test_report_feeds_assert_deployable() -> None:
    report = olt.check_export(
        TinyNet().eval(), (torch.randn(2, 4),), ep="cpu", opset=17, dynamo=False
    )
    assert assert_deployable(report, fail_on="error") is report


@pytest.mark.slow
def test_confirm_uses_the_in_memory_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    report = olt.check_export(
        TinyNet().eval(), (torch.randn(2, 4),), ep="cpu", opset=17, dynamo=False
    )
    confirmed = assert_deployable(report, confirm=True)
    # re-linted from report.model with real sessions: the confirmation summary is there
    assert "OL905" in {d.code for d in confirmed.diagnostics}
    assert confirmed.path == report.path


def test_never_a_cuda_build() -> None:
    assert torch.version.cuda is None, "CI must install the CPU wheel only"
    assert not torch.cuda.is_available()
