"""Baselines: --write-baseline records findings, --baseline reports only new ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnxlint.baseline import Baseline, BaselineError
from onnxlint.diagnostics import Category, Diagnostic, Location, Severity
from onnxlint.report import Report

from .conftest import BAD_TEXT, GOOD_TEXT, run_cli, write_model

#: two rules with known findings in the zoo: new rule families must not move these counts
SEL = ("--select", "OL105,OL204")


def test_write_then_baseline_hides_known_findings(zoo: Path) -> None:
    wrote = run_cli("models", *SEL, "--write-baseline", ".onnxlint-baseline.json", cwd=zoo)
    assert wrote.returncode == 0, wrote.stderr  # today's findings are accepted
    assert "recorded 3 findings" in wrote.stderr
    doc = json.loads((zoo / ".onnxlint-baseline.json").read_text())
    assert doc["kind"] == "onnxlint-baseline"
    keys = {f["key"] for f in doc["findings"]}
    # model path (relative to the baseline) + code + stable node location, no line numbers
    assert "models/bad.onnxtxt|OL204|main/win||" in keys
    assert "models/bad.onnxtxt|OL105|main|unused_w|" in keys

    again = run_cli("models", *SEL, "--baseline", ".onnxlint-baseline.json", cwd=zoo)
    assert again.returncode == 0, again.stdout
    assert "3 known findings hidden" in again.stderr
    assert "OL204" not in again.stdout


def test_new_finding_is_reported_and_fails(zoo: Path) -> None:
    run_cli("models", *SEL, "--write-baseline", "base.json", cwd=zoo)
    write_model(zoo / "models", "new.onnxtxt", BAD_TEXT)  # a new model with the same problems
    res = run_cli("models", *SEL, "--baseline", "base.json", "--format", "json", cwd=zoo)
    assert res.returncode == 1
    files = {f["path"]: f for f in json.loads(res.stdout)["files"]}
    new = [d["code"] for d in files["models/new.onnxtxt"]["diagnostics"]]
    assert sorted(new) == ["OL105", "OL204"]
    assert files["models/bad.onnxtxt"]["diagnostics"] == []


def test_baseline_works_from_another_working_directory(zoo: Path) -> None:
    run_cli("models", *SEL, "--write-baseline", "base.json", cwd=zoo)
    res = run_cli("bad.onnxtxt", *SEL, "--baseline", "../base.json", cwd=zoo / "models")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 known findings hidden" in res.stderr


def test_fixed_findings_are_reported_as_stale(zoo: Path) -> None:
    run_cli("models", *SEL, "--write-baseline", "base.json", cwd=zoo)
    write_model(zoo / "models", "warn.onnx", GOOD_TEXT)  # its only finding was fixed
    res = run_cli("models", *SEL, "--baseline", "base.json", cwd=zoo)
    assert "1 baseline entry matched nothing" in res.stderr


def _diag(node: str | None, index: int | None, code: str = "OL204") -> Diagnostic:
    return Diagnostic(
        code=code,
        rule="unknown-operator",
        category=Category.OPSET,
        severity=Severity.ERROR,
        message=f"problem at {node}",
        location=Location(graph="main", node_name=node, node_index=index, op_type="Conv"),
        path="zoo/m.onnx",
    )


@pytest.mark.parametrize(
    ("recorded", "now", "new"),
    [
        # the node moved (re-export renumbered nodes): same stable location, still known
        ([("conv1", 3)], [("conv1", 7)], 0),
        # another node has the same problem: new
        ([("conv1", 3)], [("conv1", 3), ("conv2", 4)], 1),
        # counted: two findings recorded on a node, three now -> one new
        ([("conv1", 3), ("conv1", 3)], [("conv1", 3), ("conv1", 3), ("conv1", 3)], 1),
        # unnamed nodes are keyed by OpType_index
        ([(None, 2)], [(None, 2)], 0),
        ([(None, 2)], [(None, 5)], 1),
    ],
)
def test_matching_is_by_stable_location_and_counted(
    tmp_path: Path, recorded: list, now: list, new: int
) -> None:
    base = Baseline.from_reports(
        [Report(path="zoo/m.onnx", diagnostics=[_diag(n, i) for n, i in recorded])], root=Path(".")
    )
    base.write(tmp_path / "b.json")
    loaded = Baseline.load(tmp_path / "b.json")
    loaded.root = Path(".")
    result = loaded.filter([Report(path="zoo/m.onnx", diagnostics=[_diag(n, i) for n, i in now])])
    assert len(result.reports[0].diagnostics) == new
    assert result.hidden == len(now) - new
    assert result.reports[0].stats["baselined"] == len(now) - new


def test_unloadable_model_is_never_hidden(tmp_path: Path) -> None:
    (tmp_path / "broken.onnx").write_bytes(b"\x00not a model")
    first = run_cli("broken.onnx", "--write-baseline", "b.json", cwd=tmp_path)
    assert first.returncode == 2
    res = run_cli("broken.onnx", "--baseline", "b.json", cwd=tmp_path)
    assert res.returncode == 2
    assert "OL0" in res.stdout


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "does not exist"),
        ("{not json", "unreadable"),
        ('{"findings": []}', "not an onnxlint baseline"),
        ('{"kind": "onnxlint-baseline", "version": 99, "findings": []}', "version 99"),
        ('{"kind": "onnxlint-baseline", "version": 1, "findings": {}}', "must be a list"),
        ('{"kind": "onnxlint-baseline", "version": 1, "findings": [{"count": 1}]}', "findings[0]"),
        (
            '{"kind": "onnxlint-baseline", "version": 1, "findings": [{"key": "k", "count": 0}]}',
            "positive",
        ),
    ],
)
def test_bad_baseline_is_a_usage_error_without_traceback(
    zoo: Path, content: str | None, needle: str
) -> None:
    if content is not None:
        (zoo / "b.json").write_text(content)
    res = run_cli("models", *SEL, "--baseline", "b.json", cwd=zoo, subprocess_run=True)
    assert res.returncode == 2
    assert needle in res.stderr
    assert "Traceback" not in res.stderr
    with pytest.raises(BaselineError, match=needle.replace("[", r"\[")):
        Baseline.load(zoo / "b.json")


def test_baseline_options_are_exclusive(zoo: Path) -> None:
    res = run_cli("models", *SEL, "--baseline", "a.json", "--write-baseline", "b.json", cwd=zoo)
    assert res.returncode == 2
    assert not (zoo / "b.json").exists()


def test_write_baseline_replaces_atomically_and_leaves_no_temp_files(zoo: Path) -> None:
    target = zoo / "b.json"
    target.write_text("old")
    res = run_cli("models", *SEL, "--write-baseline", "b.json", cwd=zoo)
    assert res.returncode == 0
    assert json.loads(target.read_text())["version"] == 1
    assert sorted(p.name for p in zoo.iterdir()) == ["b.json", "models"]


def test_unwritable_baseline_is_a_usage_error(zoo: Path) -> None:
    res = run_cli("models", *SEL, "--write-baseline", "no/such/dir/b.json", cwd=zoo)
    assert res.returncode == 2
    assert "cannot write baseline" in res.stderr
    assert "Traceback" not in res.stderr
