"""CI formats at scale: SARIF that validates with format checks on, repository-relative and
percent-encoded URIs, GitHub's result limits; GitHub annotations capped per type, sorted by
severity, with the full list in the step summary."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from onnxlint import cli
from onnxlint.diagnostics import Category, Diagnostic, Location, Severity
from onnxlint.render import render
from onnxlint.render.github import render_step_summary
from onnxlint.render.sarif import MAX_RESULTS, SHOWN_RESULTS, result_count_problem, to_sarif
from onnxlint.report import Report

SCHEMA = Path(__file__).parent / "data" / "sarif-2.1.0.schema.json"
WARN = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n [r] y = Relu(x)\n}"
)
#: RFC 3986 URI-reference characters: unreserved, reserved, and %XX escapes only
_URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


@cache
def _validator(formats: bool) -> Any:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER if formats else None)


def _uris(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        found = [v for k, v in doc.items() if k in ("uri", "helpUri", "informationUri")]
        return found + [u for v in doc.values() for u in _uris(v)]
    if isinstance(doc, list):
        return [u for v in doc for u in _uris(v)]
    return []


def _diag(sev: Severity, code: str = "OL105", n: int = 0, path: str = "m.onnx") -> Diagnostic:
    return Diagnostic(
        code=code,
        rule="unused-initializer",
        category=Category.STRUCTURE,
        severity=sev,
        message=f"finding {n}",
        location=Location(tensor=f"w{n}"),
        path=path,
    )


def _reports(n_models: int, per_level: int, folder: str = "zoo dir/#1") -> list[Report]:
    out = []
    for m in range(n_models):
        path = f"{folder}/model {m}.onnx"
        diags = [_diag(s, n=k, path=path) for s in Severity for k in range(per_level)]
        out.append(Report(path=path, diagnostics=diags))
    return out


def test_uris_are_percent_encoded_and_repository_relative(tmp_path: Path) -> None:
    inside = str(tmp_path / "zoo dir" / "#1" / "model 0.onnx")
    outside = "/elsewhere/ä b.onnx"
    reports = [
        Report(path=p, diagnostics=[_diag(Severity.ERROR, path=p)]) for p in (inside, outside)
    ]
    doc = to_sarif(reports, root=tmp_path)
    run = doc["runs"][0]
    locs = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert locs[0] == {"uri": "zoo%20dir/%231/model%200.onnx", "uriBaseId": "%SRCROOT%"}
    assert locs[1] == {"uri": "file:///elsewhere/%C3%A4%20b.onnx"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    for uri in _uris(doc):
        assert _URI_CHARS.match(uri), uri
    assert list(_validator(False).iter_errors(doc)) == []


def test_sarif_validates_with_format_checks_on(tmp_path: Path) -> None:
    pytest.importorskip(
        "rfc3986_validator",
        reason="jsonschema checks uri formats only with jsonschema[format-nongpl]",
    )
    doc = to_sarif(_reports(3, 1, folder=str(tmp_path / "a b#c")), root=tmp_path)
    assert [e.message for e in _validator(True).iter_errors(doc)] == []
    # the checker is really on: an unencoded URI fails it
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = (
        "a b#c#d"
    )
    assert list(_validator(True).iter_errors(doc))


def test_a_100_model_folder_stays_under_githubs_limits_by_default() -> None:
    # 100 models, 50 findings per level each: 20,000 results in all, 10,000 of them hints
    reports = _reports(100, 50)
    every = to_sarif(reports)["runs"][0]["results"]
    default = to_sarif(reports, min_severity=Severity.INFO)["runs"][0]["results"]
    assert len(every) == 20_000 and len(default) == 15_000
    assert all(r["properties"]["severity"] != "hint" for r in default)
    assert (
        list(_validator(False).iter_errors(to_sarif(reports[:2], min_severity=Severity.INFO))) == []
    )
    assert "properties" not in to_sarif(reports[:1])["runs"][0]  # partitions are opt-in


@pytest.mark.parametrize(
    ("n", "level"),
    [
        (SHOWN_RESULTS, None),
        (SHOWN_RESULTS + 1, "warning"),
        (MAX_RESULTS, "warning"),
        (MAX_RESULTS + 1, "error"),
    ],
)
def test_result_count_limits(n: int, level: str | None) -> None:
    problem = result_count_problem(n)
    assert (problem[0] if problem else None) == level


def test_cli_refuses_a_sarif_github_would_reject(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.render import sarif

    (tmp_path / "m.onnxtxt").write_text(WARN)
    out = tmp_path / "out.sarif"
    monkeypatch.setattr(sarif, "MAX_RESULTS", 0)
    code = cli.main(
        [str(tmp_path / "m.onnxtxt"), "--isolated", "--format", "sarif", "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE and "GitHub rejects uploads above 0" in err and not out.exists()
    monkeypatch.setattr(sarif, "MAX_RESULTS", 10)
    monkeypatch.setattr(sarif, "SHOWN_RESULTS", 0)
    code = cli.main(
        [str(tmp_path / "m.onnxtxt"), "--isolated", "--format", "sarif", "-o", str(out)]
    )
    assert code == 0 and "warning: 1 SARIF results: GitHub shows only 0" in capsys.readouterr().err
    assert json.loads(out.read_text())["runs"][0]["results"]


def test_github_annotations_are_sorted_and_capped_per_type() -> None:
    lines = render(_reports(2, 12), "github", min_severity=Severity.INFO).splitlines()
    levels = [line.split(" ", 1)[0] for line in lines if line.startswith("::")]
    assert levels == ["::error"] * 10 + ["::warning"] * 10 + ["::notice"] * 10
    assert lines[-1] == (
        "onnxlint: 42 more findings not annotated (GitHub shows 10 of each type per step): "
        "14 errors, 14 warnings, 14 infos; the step summary lists them all"
    )


def test_step_summary_lists_everything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    for k in range(12):
        (tmp_path / f"m{k:02}.onnxtxt").write_text(WARN)
    code = cli.main([str(tmp_path), "--isolated", "--format", "github"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("::warning") == 10 and "2 more findings" in out
    text = summary.read_text()
    assert text.startswith("earlier step\n## onnxlint\n")  # appended, not replaced
    assert text.count("| warning | OL105 |") == 12
    assert "Checked 12 models: 0 errors, 12 warnings" in text
    table = render_step_summary(
        [Report(path="a|b.onnx", diagnostics=[_diag(Severity.ERROR, path="a|b.onnx")])]
    )
    assert "a\\|b.onnx" in table
