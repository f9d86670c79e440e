"""``--confirm`` with real ONNX Runtime sessions: CPU, QNN HTP (simulator), OpenVINO (CPU).

Small models only: each test creates a handful of sessions in isolated workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from onnxlint.config import Config
from onnxlint.engine import lint
from onnxlint.report import Report

from ..compiled.helpers import tiny_conv
from .ep_support import OPENVINO_PYTHON, require_ep

pytestmark = pytest.mark.slow


def _confirm(
    model: Path, ep: str, cache_dir: Path, **extra: object
) -> tuple[Report, dict[str, object]]:
    dims = extra.pop("dims", {})
    confirm = {"mode": "run", "cache-dir": str(cache_dir), **extra}
    runners = {"openvino": str(OPENVINO_PYTHON)} if ep == "openvino" else {}
    config = Config(confirm=confirm, runners=runners, assume_dims=dims)  # type: ignore[arg-type]
    report = lint(model, eps=[ep], config=config, path_label=str(model))
    return report, {d["level"]: d for c in report.stats["confirmation"] for d in c["levels"]}


def _codes(report: Report) -> list[tuple[str, str]]:
    return sorted(
        (d.code, d.message_id) for d in report.diagnostics if d.category.value == "confirmation"
    )


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny_conv(), str(path))
    return path


def test_cpu_confirm_and_cache(model_file: Path, tmp_path: Path) -> None:
    require_ep("cpu")
    cache = tmp_path / "cache"
    report, levels = _confirm(model_file, "cpu", cache)
    assert _codes(report) == [("OL905", "default"), ("OL905", "default")]
    assert set(levels) == {"disabled", "default"}
    assert all(lv["agreement"] == 1.0 and not lv["cached"] for lv in levels.values())
    assert all(lv["create_s"] is not None for lv in levels.values())
    entries = list(cache.glob("*.json"))
    assert len(entries) == 1
    # hit: no session, same answer
    _, again = _confirm(model_file, "cpu", cache)
    assert all(lv["cached"] for lv in again.values())
    # --no-cache: fresh sessions, and the entry is left alone
    before = entries[0].read_bytes()
    _, fresh = _confirm(model_file, "cpu", cache, cache=False)
    assert not any(lv["cached"] for lv in fresh.values())
    assert entries[0].read_bytes() == before
    # a truncated entry is discarded, reported, and replaced by a fresh result
    entries[0].write_bytes(before[: len(before) // 3])
    report, redone = _confirm(model_file, "cpu", cache)
    assert ("OL907", "default") in _codes(report)
    assert not any(lv["cached"] for lv in redone.values())
    json.loads(entries[0].read_text())  # rewritten whole


def _dynamic(path: Path) -> Path:
    model = tiny_conv()
    for vi in (model.graph.input[0], model.graph.output[0]):
        vi.type.tensor_type.shape.dim[0].dim_param = "N"
    onnx.save(model, str(path))
    return path


@pytest.mark.ort_qnn
def test_qnn_confirm_node_for_node(model_file: Path, tmp_path: Path) -> None:
    require_ep("qnn")
    report, levels = _confirm(model_file, "qnn", tmp_path / "cache", cache=False)
    assert _codes(report) == [("OL905", "default"), ("OL905", "default")]
    disabled = levels["disabled"]
    assert disabled["agreement"] == 1.0 and disabled["compared"] == 2
    assert disabled["actual_partitions"] == {"QNNExecutionProvider": 1}
    # the layout transform's Transposes are recognised as inserted, not as model nodes
    assert disabled["inserted"].get("Transpose", 0) >= 1
    assert disabled["versions"].get("qnn_sdk")


@pytest.mark.ort_qnn
def test_qnn_refusal_reason_reaches_the_diagnostic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile that wrongly claims dynamic-shape nodes: the real QNN says why not."""
    require_ep("qnn")
    from onnxlint.confirm import diff

    real_predict = diff.predict

    def overclaiming(ctx, profile, level):  # type: ignore[no-untyped-def]
        pred = real_predict(ctx, profile, level)
        assert pred is not None
        pred.node_ep = dict.fromkeys(pred.node_ep, profile.ep)
        return pred

    monkeypatch.setattr(diff, "predict", overclaiming)
    report, levels = _confirm(_dynamic(tmp_path / "dyn.onnx"), "qnn", tmp_path / "c", cache=False)
    refused = [d for d in report.diagnostics if d.code == "OL901" and d.graph_level == "exported"]
    assert {d.location.node_name for d in refused} == {"conv0", "relu0"}
    assert all(d.message_id == "refused" and "Cannot get shape" in d.message for d in refused)
    assert levels["disabled"]["agreement"] == 0.0
    assert ("OL904", "default") in _codes(report)  # QNN ended up with no node at all


@pytest.mark.ort_qnn
def test_qnn_free_dims_from_assume_dims(tmp_path: Path) -> None:
    require_ep("qnn")
    path = _dynamic(tmp_path / "dyn.onnx")
    _, levels = _confirm(path, "qnn", tmp_path / "c", cache=False, dims={"N": 1})
    assert levels["disabled"]["actual_nodes"].get("QNNExecutionProvider", 0) >= 2


@pytest.mark.ort_openvino
def test_openvino_confirm_with_configured_runner(model_file: Path, tmp_path: Path) -> None:
    require_ep("openvino")
    report, levels = _confirm(model_file, "openvino", tmp_path / "c", cache=False)
    assert not [c for c, _ in _codes(report) if c in ("OL903", "OL906")]
    assert levels["disabled"]["status"] == "ok"
    assert levels["disabled"]["versions"]["onnxruntime"] != ""
    assert levels["disabled"]["compared"] == 2


def test_cpu_confirm_of_an_onnx_text_model(tmp_path: Path) -> None:
    """ORT cannot read ONNX text: the worker gets a binary copy."""
    require_ep("cpu")
    path = tmp_path / "relu.onnxtxt"
    path.write_text(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (float[1,4] x) => (float[1,4] y) {\n    [r] y = Relu(x)\n}\n"
    )
    report, levels = _confirm(path, "cpu", tmp_path / "c", cache=False, levels=["disabled"])
    assert levels["disabled"]["status"] == "ok" and levels["disabled"]["agreement"] == 1.0
    assert not [c for c, _ in _codes(report) if c == "OL903"]
