"""Confirmed beats predicted: a prediction a real session contradicts is downgraded and
marked in every output, by one implementation in the report layer."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from onnxlint.confirmed import apply_confirmation, real_eps, real_placements
from onnxlint.diagnostics import DISPROVED, Category, Diagnostic, Location, Severity
from onnxlint.render import render
from onnxlint.report import Report

QNN = "QNNExecutionProvider"


def _loc(name: str, index: int) -> Location:
    return Location(graph="main", node_name=name, node_index=index, op_type="Cast", label=name)


def _diag(
    code: str, where: Location, ep: str = "qnn-htp", related: tuple[Location, ...] = ()
) -> Diagnostic:
    return Diagnostic(
        code=code,
        rule="ep-dtype-unsupported",
        category=Category.EP_SUPPORT,
        severity=Severity.WARNING,
        message=f"{code} at {where.node_name}",
        location=where,
        ep=ep,
        related=related,
        path="m.onnx",
    )


def _report(
    diags: list[Diagnostic], mismatches: dict[str, list[str]], level: str = "disabled"
) -> Report:
    conf = {
        "ep": QNN,
        "profile_id": "qnn-htp",
        "levels": [{"level": level, "mismatches": mismatches}],
    }
    return Report(path="m.onnx", diagnostics=diags, stats={"confirmation": [conf]})


def test_a_claimed_refusal_and_its_island_are_disproved() -> None:
    cast, add, relu = _loc("cast", 1), _loc("add", 2), _loc("relu", 3)
    report = _report(
        [
            _diag("OL503", cast),  # "QNN refuses the Cast": the session ran it on QNN
            _diag("OL602", cast, related=(cast,)),  # the CPU island that refusal made
            _diag("OL504", add),  # refused, and the session agreed (no mismatch)
            _diag("OL504", relu, ep="openvino-cpu"),  # another EP: its own confirmation
        ],
        {"main/cast": ["CPUExecutionProvider", QNN], "main/relu": ["CPUExecutionProvider", QNN]},
    )
    assert apply_confirmation(report) == 2
    got = {(d.code, d.location.node_name): d for d in report.diagnostics}
    for key in (("OL503", "cast"), ("OL602", "cast")):
        d = got[key]
        assert d.severity == Severity.HINT
        assert d.disproved == {"ep": "qnn-htp", "nodes": {"main/cast": QNN}}
        assert d.disproved_text() == f"{DISPROVED} (a real session ran it on {QNN})"
    assert got[("OL504", "add")].disproved is None
    assert got[("OL504", "add")].severity == Severity.WARNING
    assert got[("OL504", "relu")].disproved is None
    assert report.stats["disproved"] == 2


def test_an_island_stands_while_any_of_its_nodes_stayed_on_cpu() -> None:
    a, b = _loc("a", 1), _loc("b", 2)
    report = _report([_diag("OL602", a, related=(a, b))], {"main/a": ["CPUExecutionProvider", QNN]})
    assert apply_confirmation(report) == 0
    assert report.diagnostics[0].severity == Severity.WARNING


def test_only_the_exported_graph_level_counts() -> None:
    cast = _loc("cast", 1)
    report = _report([_diag("OL503", cast)], {"main/cast": ["CPUExecutionProvider", QNN]}, "basic")
    assert apply_confirmation(report) == 0
    assert real_placements(report) == {QNN: {}, "qnn-htp": {}}


def test_real_eps_is_what_the_editor_shows() -> None:
    from onnxlint.lsp.workspace import confirmed_eps

    report = _report([], {"main/cast": ["CPUExecutionProvider", QNN]})
    assert real_eps(report) == confirmed_eps(report) == {"main/cast": QNN}
    assert real_eps(Report(path=None, stats={"confirmation": ["junk", {"levels": None}]})) == {}


@pytest.fixture
def disproved_report() -> Report:
    cast = _loc("cast", 1)
    report = _report([_diag("OL503", cast)], {"main/cast": ["CPUExecutionProvider", QNN]})
    apply_confirmation(report)
    return report


@pytest.mark.parametrize("fmt", ["table", "concise", "github", "sarif"])
def test_every_format_marks_it(disproved_report: Report, fmt: str) -> None:
    assert DISPROVED in render([disproved_report], fmt, min_severity=Severity.HINT)


def test_hidden_by_default_in_the_terminal(disproved_report: Report) -> None:
    text = render([disproved_report], "table", min_severity=Severity.INFO)
    assert "OL503" not in text and "1 not shown" in text


def test_json_and_sarif_carry_the_field(disproved_report: Report) -> None:
    doc = json.loads(render([disproved_report], "json"))
    assert doc["files"][0]["diagnostics"][0]["disproved"]["nodes"] == {"main/cast": QNN}
    assert doc["files"][0]["diagnostics"][0]["severity"] == "hint"
    sarif = json.loads(render([disproved_report], "sarif", min_severity=Severity.HINT))
    result = sarif["runs"][0]["results"][0]
    assert result["properties"]["disproved"]["ep"] == "qnn-htp" and result["level"] == "note"
    schema = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.schema.json").read_text())
    jsonschema.Draft7Validator(schema).validate(sarif)
