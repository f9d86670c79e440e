"""The Python API: lint paths, bytes and ModelProto; Report helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import onnxlint
from onnxlint.diagnostics import Severity

from .conftest import parse

BAD = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n [a] y = Add(x, ghost)\n}'


@pytest.mark.parametrize("kind", ["proto", "bytes", "path"])
def test_lint_accepts_every_source(tmp_path: Path, kind: str) -> None:
    model = parse(BAD)
    source: object = model
    if kind == "bytes":
        source = model.SerializeToString()
    elif kind == "path":
        source = tmp_path / "m.onnx"
        source.write_bytes(model.SerializeToString())  # type: ignore[union-attr]
    report = onnxlint.lint(source, config={"select": ["OL104"]})
    assert [d.code for d in report.errors] == ["OL104"]
    assert report.summary().endswith("1 error")


def test_report_serialisations_and_raise() -> None:
    report = onnxlint.lint(parse(BAD), config={"select": ["OL104"]})
    doc = json.loads(report.to_json())
    assert doc["files"][0]["diagnostics"][0]["location"]["node_path"] == "main/a"
    assert onnxlint.to_sarif(report)["runs"][0]["results"][0]["ruleId"] == "OL104"
    with pytest.raises(onnxlint.LintError) as err:
        report.raise_for_errors()
    assert "main/a" in str(err.value) and "ghost" in str(err.value)


def test_raise_for_errors_respects_threshold() -> None:
    warn = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n [r] y = Relu(x)\n}'
    report = onnxlint.lint(parse(warn), config={"select": ["OL105"]})
    report.raise_for_errors()  # only a warning
    with pytest.raises(AssertionError):
        report.raise_for_errors(Severity.WARNING)


def test_lint_never_mutates_the_input_proto() -> None:
    model = parse(BAD)
    before = model.SerializeToString()
    onnxlint.lint(model, config={})
    assert model.SerializeToString() == before


def test_json_report_carries_stats() -> None:
    doc = json.loads(onnxlint.lint(parse(BAD), config={}).to_json())
    assert doc["files"][0]["stats"]["nodes"] == 1


def test_atomic_write_keeps_permissions(tmp_path: Path) -> None:
    import os
    import stat

    from onnxlint.fsutil import atomic_write_text

    new = tmp_path / "new.txt"
    old_umask = os.umask(0o022)
    try:
        atomic_write_text(new, "x")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    existing = tmp_path / "existing.txt"
    existing.write_text("a")
    existing.chmod(0o640)
    atomic_write_text(existing, "b")
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640 and existing.read_text() == "b"
