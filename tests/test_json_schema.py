"""The CLI's JSON output and Report.to_json() are one document, valid against the shipped
JSON Schema (rules/schema/report.schema.json, documented in docs/json-format.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import onnxlint
from onnxlint.data import load_json

from .conftest import REPO, parse, run_cli

DEMO = REPO / "examples" / "demo.onnx"


def _validator() -> jsonschema.Draft202012Validator:
    schema = load_json("schema/report.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(doc: Any) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in _validator().iter_errors(doc)]


@pytest.mark.parametrize(
    "args",
    [
        [str(DEMO)],
        [str(DEMO), "--ep", "qnn", "--report", "partitions"],
        [str(DEMO), "--ep", "openvino", "--ep", "cuda"],
        [str(REPO / "examples")],
    ],
    ids=["demo", "demo-qnn-partitions", "demo-two-eps", "folder"],
)
def test_cli_json_is_valid_against_the_schema(args: list[str]) -> None:
    proc = run_cli(*args, "--format", "json", timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert _errors(doc) == []
    assert doc["files"] and any(f["diagnostics"] for f in doc["files"])


def test_an_unreadable_file_is_valid_too(tmp_path: Path) -> None:
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    proc = run_cli(str(bad), "--format", "json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert _errors(doc) == [] and doc["summary"]["unreadable"] == 1


def test_report_to_json_is_the_cli_document(tmp_path: Path) -> None:
    report = onnxlint.lint(DEMO, eps=["qnn"])
    api = json.loads(report.to_json())
    assert _errors(api) == []
    cli = json.loads(run_cli(str(DEMO), "--ep", "qnn", "--format", "json", timeout=300).stdout)
    assert api.keys() == cli.keys() and api["files"][0].keys() == cli["files"][0].keys()
    assert [d["code"] for d in api["files"][0]["diagnostics"]] == [
        d["code"] for d in cli["files"][0]["diagnostics"]
    ]
    assert api["summary"] == cli["summary"]


def test_the_schema_rejects_what_it_does_not_describe() -> None:
    doc = json.loads(onnxlint.lint(parse(_RELU), config={}).to_json())
    doc["files"][0]["surprise"] = 1
    assert _errors(doc)


def test_the_docs_name_the_schema() -> None:
    text = (REPO / "docs" / "json-format.md").read_text("utf-8")
    assert "rules/schema/report.schema.json" in text
    assert (REPO / "rules" / "schema" / "report.schema.json").is_file()


_RELU = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[1,4] x) => (float[1,4] y) {\n [r] y = Relu(x)\n}'
