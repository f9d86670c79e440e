"""The ORT limits follow the runtime: the installed ORT is asked, the table serves the rest."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

import onnxlint
from onnxlint import ort_versions
from onnxlint.data import load_json


def _identity(opset: int, ir: int) -> onnx.ModelProto:
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
    graph = oh.make_graph([oh.make_node("Identity", ["x"], ["y"], name="n")], "g", [x], [y])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = ir
    return model


def _loads(model: onnx.ModelProto) -> bool:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def test_the_installed_ort_has_a_row_in_the_table() -> None:
    """A new ORT release needs its row (measured) before onnxlint claims to support it."""
    installed = ort_versions.installed_ort_version()
    assert installed, "onnxruntime is a dependency"
    mm = ".".join(installed.split(".")[:2])
    rows = {r["ort"]: r for r in load_json("ort_versions.json")["releases"]}
    assert mm in rows, f"rules/ort_versions.json has no row for the installed ORT {installed}"
    asked = ort_versions.installed_limits()
    assert asked is not None
    keys = ("max_opset", "ml_opset", "max_ir")
    row = {k: rows[mm][k] for k in keys}
    assert row == {k: asked[k] for k in keys}, "the row disagrees with the installed ORT"


def test_installed_limits_are_what_ort_really_loads() -> None:
    rel = ort_versions.release()
    assert rel.source == "installed" and rel.exact and rel.assumed_from is None
    assert _loads(_identity(rel.max_opset, 8)) and not _loads(_identity(rel.max_opset + 1, 8))
    assert _loads(_identity(13, rel.max_ir)) and not _loads(_identity(13, rel.max_ir + 1))


def test_a_model_the_installed_ort_loads_gets_no_opset_or_ir_error() -> None:
    rel = ort_versions.release()
    model = _identity(rel.max_opset, rel.max_ir)
    assert _loads(model)
    report = onnxlint.lint(model, config={"select": ["OL201", "OL202"]})
    assert report.diagnostics == []
    too_new = _identity(rel.max_opset + 1, rel.max_ir)
    (d,) = onnxlint.lint(too_new, config={"select": ["OL201"]}).diagnostics
    assert d.message_id == "default" and f"supports up to {rel.max_opset}" in d.message


def test_the_same_minor_as_installed_is_asked_too() -> None:
    installed = ort_versions.installed_ort_version()
    assert installed
    mm = ".".join(installed.split(".")[:2])
    assert ort_versions.release(mm).source == "installed"


def test_other_targets_come_from_the_table() -> None:
    rel = ort_versions.release("1.20")
    assert (rel.source, rel.max_opset, rel.max_ir, rel.assumed_from) == ("measured", 21, 10, None)
    newest = load_json("ort_versions.json")["releases"][-1]["ort"]
    assert ort_versions.release("99.1").assumed_from == newest


def test_the_answer_is_cached_per_ort_build_and_a_corrupt_entry_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.runtime.identity import ort_identity

    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ort_versions, "_memo", {})
    first = ort_versions.installed_limits()
    (entry,) = (tmp_path / "ort-limits").glob("*.json")
    record = json.loads(entry.read_text("utf-8"))
    assert record["limits"] == first and record["ort"] == ort_identity()

    calls: list[str | None] = []
    real = ort_versions.limits_of
    monkeypatch.setattr(
        ort_versions, "limits_of", lambda runner=None: calls.append(runner) or real()
    )
    monkeypatch.setattr(ort_versions, "_memo", {})
    assert ort_versions.installed_limits() == first and calls == []  # from disk

    entry.write_text("{not json", "utf-8")
    monkeypatch.setattr(ort_versions, "_memo", {})
    assert ort_versions.installed_limits() == first and calls == [None]  # measured again
    assert json.loads(entry.read_text("utf-8"))["limits"] == first

    monkeypatch.setattr(ort_versions, "_memo", {})
    entry.unlink()
    assert ort_versions.installed_limits(cache=False) == first and not entry.exists()


def test_the_cpu_profile_opset_limit_follows_the_installed_ort() -> None:
    """The profile's ``ort-max-opset`` limit is a fact of the ORT release, so for an EP
    built into the installed ORT it is that ORT's limit, not the generator's."""
    from onnxlint.profiles import load_profile

    rel = ort_versions.release()
    limit = load_profile("cpu").opsets["ai.onnx"]
    assert limit.max == rel.max_opset and "(installed)" in (limit.reason or "")
    model = _identity(rel.max_opset, 8)
    report = onnxlint.lint(model, eps=["cpu"])
    assert not [d for d in report.diagnostics if d.code.startswith("OL5")]
