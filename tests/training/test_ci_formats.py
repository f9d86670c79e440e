"""The CI recipes' output formats, checked exactly.

SARIF is validated against the SARIF 2.1.0 JSON Schema shipped in
``tests/data`` (no network at test time), plus what GitHub code scanning needs
on top of the schema; the GitHub annotation lines are compared verbatim.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from onnxlint.diagnostics import Category, Diagnostic, Fix, Location, Severity
from onnxlint.render import render
from onnxlint.report import Report

from .conftest import REPO, run_cli

SCHEMA = REPO / "tests" / "data" / "sarif-2.1.0.schema.json"
SEL = ("--select", "OL105,OL204")


@cache
def _validator() -> Any:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _errors(doc: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator().iter_errors(doc)
    ]


def _report() -> Report:
    """Synthetic findings whose text exercises every escape GitHub needs."""
    node = Location(graph="main", node_name="ln", node_index=0, op_type="LayerNormalization")
    return Report(
        path="models/a,b:c.onnx",
        eps=["qnn-htp"],
        diagnostics=[
            Diagnostic(
                code="OL204",
                rule="unknown-operator",
                category=Category.OPSET,
                severity=Severity.ERROR,
                message="LayerNormalization needs opset 17\nsee docs: 100% sure",
                location=node,
                fix=Fix(title="re-export with opset_version=17"),
                path="models/a,b:c.onnx",
            ),
            Diagnostic(
                code="OL105",
                rule="unused-initializer",
                category=Category.STRUCTURE,
                severity=Severity.WARNING,
                message="initializer 'w' is never used",
                location=Location(tensor="w"),
                path="models/a,b:c.onnx",
            ),
            Diagnostic(
                code="OL103",
                rule="unnamed-nodes",
                category=Category.STRUCTURE,
                severity=Severity.INFO,
                message="2 nodes have no name",
                location=Location(),
                ep="qnn-htp",
                path="models/a,b:c.onnx",
            ),
        ],
    )


def test_github_annotations_exact() -> None:
    assert render([_report()], "github").splitlines() == [
        "::error file=models/a%2Cb%3Ac.onnx,title=OL204 unknown-operator::"
        "main/ln (LayerNormalization): LayerNormalization needs opset 17%0Asee docs: 100%25 sure"
        " (fix: re-export with opset_version=17)",
        "::warning file=models/a%2Cb%3Ac.onnx,title=OL105 unused-initializer::"
        "tensor 'w': initializer 'w' is never used",
        "::notice file=models/a%2Cb%3Ac.onnx,title=OL103 unnamed-nodes::"
        "model [qnn-htp]: 2 nodes have no name",
    ]


def test_github_annotations_from_the_cli(zoo: Path) -> None:
    res = run_cli("models", *SEL, "--format", "github", cwd=zoo)
    assert res.returncode == 1
    # most serious first (GitHub shows 10 of each type), then in path order
    assert res.stdout.splitlines() == [
        "::error file=models/bad.onnxtxt,title=OL204 unknown-operator::"
        "main/win (HannWindow): HannWindow does not exist at ai.onnx opset 13; "
        "it was introduced in opset 17: re-export with opset_version=17 "
        "(fix: re-export with opset_version=17)",
        "::warning file=models/bad.onnxtxt,title=OL105 unused-initializer::"
        "tensor 'unused_w': initializer 'unused_w' is never used (2 elements)",
        "::warning file=models/warn.onnx,title=OL105 unused-initializer::"
        "tensor 'unused_w': initializer 'unused_w' is never used (2 elements)",
    ]


def test_github_no_findings_prints_nothing(zoo: Path) -> None:
    res = run_cli("models/good.onnxtxt", *SEL, "--format", "github", cwd=zoo)
    assert (res.returncode, res.stdout) == (0, "")


def test_schema_file_is_the_sarif_2_1_0_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]
    # the validator really rejects what the standard forbids
    assert _errors({"version": "2.1.0", "runs": [{"tool": {}}]})
    assert _errors({"version": "2.0.0", "runs": []})


@pytest.mark.parametrize(
    "reports",
    [
        pytest.param(lambda zoo: None, id="cli-zoo"),
        pytest.param(lambda zoo: [_report()], id="synthetic"),
        pytest.param(lambda zoo: [Report(path="empty.onnx")], id="no-findings"),
    ],
)
def test_sarif_validates_against_the_schema(zoo: Path, reports: Any) -> None:
    given = reports(zoo)
    if given is None:
        res = run_cli("models", *SEL, "--format", "sarif", cwd=zoo)
        assert res.returncode == 1, res.stderr
        doc = json.loads(res.stdout)
    else:
        doc = json.loads(render(given, "sarif"))
    assert _errors(doc) == []
    _check_code_scanning(doc)


def _check_code_scanning(doc: dict[str, Any]) -> None:
    """What GitHub code scanning needs beyond the schema."""
    assert doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "onnxlint"
    for result in run["results"]:
        # ruleIndex points at the descriptor of the same rule
        if "ruleIndex" in result:
            assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        loc = result["locations"][0]
        phys = loc["physicalLocation"]
        # repository-relative file path and a region: code scanning places alerts by line
        assert not phys["artifactLocation"]["uri"].startswith("/")
        assert phys["region"]["startLine"] >= 1
        assert result["partialFingerprints"]["onnxlint/v1"]
        assert result["message"]["text"]


def test_sarif_fingerprint_is_the_baseline_key(zoo: Path) -> None:
    res = run_cli("models/bad.onnxtxt", *SEL, "--format", "sarif", cwd=zoo)
    prints = {
        r["partialFingerprints"]["onnxlint/v1"]
        for r in json.loads(res.stdout)["runs"][0]["results"]
    }
    assert "models/bad.onnxtxt|OL204|main/win||" in prints
