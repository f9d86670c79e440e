"""The CLI end to end, through a subprocess: exit codes, formats, selection, config, subcommands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import REPO, light_models, run_cli

CLEAN = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n [r] y = Relu(x)\n}'
WARN = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n [r] y = Relu(x)\n}'


@pytest.fixture
def models(tmp_path: Path) -> Path:
    (tmp_path / "clean.onnxtxt").write_text(CLEAN)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "warn.onnxtxt").write_text(WARN)
    return tmp_path


@pytest.mark.parametrize("path", light_models(), ids=lambda p: p.stem)
def test_light_models_lint_without_crash(path: Path) -> None:
    proc = run_cli(str(path), "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["files"][0]["fatal"] is False
    assert proc.returncode == (1 if doc["summary"]["error"] else 0)


def test_table_output_and_exit_codes(models: Path) -> None:
    proc = run_cli(str(models / "clean.onnxtxt"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no findings" in proc.stdout and "Checked 1 model" in proc.stdout
    proc = run_cli(str(models / "sub" / "warn.onnxtxt"))
    assert proc.returncode == 0  # a warning is below the default --fail-on error
    assert "OL105" in proc.stdout
    proc = run_cli(str(models / "sub" / "warn.onnxtxt"), "--fail-on", "warning")
    assert proc.returncode == 1


def test_folder_is_searched_recursively(models: Path) -> None:
    proc = run_cli(str(models), "--format", "json")
    doc = json.loads(proc.stdout)
    assert sorted(Path(f["path"]).name for f in doc["files"]) == ["clean.onnxtxt", "warn.onnxtxt"]


def test_select_and_ignore(models: Path) -> None:
    warn = str(models / "sub" / "warn.onnxtxt")
    assert "OL105" not in run_cli(warn, "--ignore", "OL105").stdout
    assert "OL105" not in run_cli(warn, "--ignore", "structure").stdout
    assert "OL105" not in run_cli(warn, "--select", "opset").stdout
    assert (
        "OL105" in run_cli(warn, "--ignore", "OL1", "--select", "OL105").stdout
    )  # more specific wins
    proc = run_cli(warn, "--severity", "OL105=error")
    assert proc.returncode == 1 and "error" in proc.stdout


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01garbage")
    proc = run_cli(str(bad))
    assert proc.returncode == 2
    assert "OL002" in proc.stdout and "Traceback" not in proc.stderr
    assert bad.read_bytes() == b"\x00\x01garbage"


def test_missing_path_exits_2(tmp_path: Path) -> None:
    proc = run_cli(str(tmp_path / "nothing.onnx"))
    assert proc.returncode == 2 and "OL001" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ep", "no-such-ep"], "no-such-ep"),
        (["--format", "xml"], None),
        (["--severity", "OL105"], "CODE="),
    ],
)
def test_usage_errors_exit_2(models: Path, args: list[str], needle: str | None) -> None:
    proc = run_cli(str(models / "clean.onnxtxt"), *args)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    if needle:
        assert needle in proc.stderr


def test_config_file_is_discovered_and_validated(models: Path) -> None:
    (models / "pyproject.toml").write_text('[tool.onnxlint]\nignore = ["OL105"]\n')
    assert "OL105" not in run_cli(str(models / "sub" / "warn.onnxtxt")).stdout
    assert "OL105" in run_cli(str(models / "sub" / "warn.onnxtxt"), "--isolated").stdout
    (models / "sub" / "onnxlint.toml").write_text(
        'ignore = ["OL105"]\nfail-on = "sometimes"\nbogus = 1\n'
    )
    proc = run_cli(str(models / "sub" / "warn.onnxtxt"))
    assert proc.returncode == 2
    assert "fail-on" in proc.stderr and "bogus" in proc.stderr


def test_rule_options_are_validated(models: Path) -> None:
    (models / "onnxlint.toml").write_text("[rules.OL105]\nnot_an_option = true\n")
    proc = run_cli(str(models / "clean.onnxtxt"))
    assert proc.returncode == 2 and "rules.OL105" in proc.stderr


def test_per_file_and_inline_ignores(models: Path, tmp_path: Path) -> None:
    (models / "onnxlint.toml").write_text('[per-file-ignores]\n"sub/*" = ["OL105"]\n')
    assert "OL105" not in run_cli(str(models / "sub" / "warn.onnxtxt")).stdout
    inline = WARN.replace(
        "<ir_version: 8,", '<ir_version: 8, metadata_props: ["onnxlint:ignore": "OL105"],'
    )
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "inline.onnxtxt").write_text(inline)
    proc = run_cli(str(other / "inline.onnxtxt"), "--isolated")
    assert proc.returncode == 0 and "OL105" not in proc.stdout


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "table"])
def test_formats_to_file(models: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"report.{fmt}"
    proc = run_cli(str(models / "sub" / "warn.onnxtxt"), "--format", fmt, "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    text = out.read_text()
    assert "OL105" in text
    if fmt in ("json", "sarif"):
        json.loads(text)
    if fmt == "github":
        assert text.startswith("::warning file=")


def test_rules_and_rule_subcommands() -> None:
    proc = run_cli("rules")
    assert proc.returncode == 0 and "OL101" in proc.stdout and "checker-error" in proc.stdout
    proc = run_cli("rule", "OL204")
    assert proc.returncode == 0
    for section in ("### What it does", "### Why it matters", "### Example", "### Fix"):
        assert section in proc.stdout
    assert run_cli("rule", "unknown-operator").stdout == proc.stdout
    assert run_cli("rule", "OL999").returncode == 2


def test_demo_model_shows_every_core_family() -> None:
    proc = run_cli(str(REPO / "examples" / "demo.onnx"), "--format", "json")
    doc = json.loads(proc.stdout)
    categories = {d["category"] for d in doc["files"][0]["diagnostics"]}
    assert {"structure", "opset"} <= categories


def test_python_m_and_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("onnxlint ")
