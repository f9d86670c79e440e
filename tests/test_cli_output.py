"""ruff-grade output: the check subcommand, display threshold, quiet, statistics, concise,
terminal width, exit-zero, show-settings, colour switches, broken pipes, progress notes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from onnxlint import cli
from onnxlint.cli import output as cli_output

from .conftest import REPO

WARN = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n [r] y = Relu(x)\n}"
)
CLEAN = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n [r] y = Relu(x)\n}'
TORCH = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[batch, 3] x) => (float[batch, 3] y) {\n"
    ' ["/model/encoder/layer.0/attention/output/dense/MatMul_with_a_long_name"] a = Relu(x)\n'
    ' ["/model/encoder/layer.0/attention/output/LayerNorm/Sigmoid"] b = Sigmoid(a)\n'
    ' ["/model/encoder/layer.0/attention/output/Identity"] y = Identity(b)\n'
    "}"
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "warn.onnxtxt").write_text(WARN)
    (tmp_path / "clean.onnxtxt").write_text(CLEAN)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_subcommand_is_the_bare_lint(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    bare = _run(capsys, str(folder), "--isolated")
    assert _run(capsys, "check", str(folder), "--isolated") == bare
    assert _run(capsys, "lint", str(folder), "--isolated") == bare
    assert "OL105" in bare[1]


def test_a_command_name_beats_a_path_of_that_name(
    capsys: pytest.CaptureFixture[str], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "rules").mkdir()
    (folder / "rules" / "m.onnxtxt").write_text(WARN)
    monkeypatch.chdir(folder)
    code, out, err = _run(capsys, "rules")
    assert code == 0 and "OL105" in out and "unused-initializer" in out  # the rule list
    assert "onnxlint check rules" in err and "onnxlint ./rules" in err
    for argv in (["./rules"], ["check", "rules"]):
        code, out, _ = _run(capsys, *argv, "--isolated")
        assert "rules/m.onnxtxt" in out and "Checked 1 model" in out, argv


def test_hints_are_counted_not_listed_by_default(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    warn = str(folder / "warn.onnxtxt")
    code, out, _ = _run(capsys, warn, "--isolated", "--severity", "OL105=hint")
    assert "OL105" not in out
    assert "no findings at or above info" in out
    assert "1 hint (1 not shown: --min-severity hint shows them)" in out
    _, out, _ = _run(
        capsys, warn, "--isolated", "--severity", "OL105=hint", "--min-severity", "hint"
    )
    assert "OL105" in out and "not shown" not in out
    # the machine formats keep everything unless asked
    _, out, _ = _run(capsys, warn, "--isolated", "--severity", "OL105=hint", "--format", "json")
    assert [d["code"] for d in json.loads(out)["files"][0]["diagnostics"]] == ["OL105"]
    # a threshold is display only: the gate still sees every finding
    code, out, _ = _run(
        capsys, warn, "--isolated", "--min-severity", "error", "--fail-on", "warning"
    )
    assert code == cli.EXIT_FINDINGS and "OL105" not in out


def test_quiet_prints_only_findings(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _, out, err = _run(capsys, str(folder), "--isolated", "-q")
    assert "OL105" in out and "warn.onnxtxt" in out
    assert "clean.onnxtxt" not in out and "Checked" not in out and err == ""


def test_statistics(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    (folder / "warn2.onnxtxt").write_text(WARN)
    _, out, _ = _run(capsys, str(folder), "--isolated", "--statistics")
    lines = out.splitlines()
    assert lines[0].split() == ["2", "OL105", "warning", "unused-initializer"]
    assert lines[-1].startswith("Checked 3 models: 0 errors, 2 warnings")


def test_concise_is_one_line_per_finding(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _, out, _ = _run(
        capsys, str(folder / "warn.onnxtxt"), "--isolated", "--output-format", "concise"
    )
    lines = out.splitlines()
    assert lines[0].startswith(f"{folder / 'warn.onnxtxt'}: tensor 'w': OL105 warning ")
    assert len(lines) == 2 and lines[1].startswith("Checked 1 model")


def test_exit_zero(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    warn = str(folder / "warn.onnxtxt")
    assert _run(capsys, warn, "--isolated", "--fail-on", "warning")[0] == cli.EXIT_FINDINGS
    assert _run(capsys, warn, "--isolated", "--fail-on", "warning", "--exit-zero")[0] == 0
    bad = folder / "bad.onnx"
    bad.write_bytes(b"\x00garbage")
    assert _run(capsys, str(bad), "--exit-zero")[0] == cli.EXIT_USAGE  # unusable is not a finding


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_table_fits_the_terminal_and_keeps_names_whole(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    columns: int,
) -> None:
    (tmp_path / "torch.onnxtxt").write_text(TORCH)
    monkeypatch.chdir(tmp_path)  # a short path: a long one is a token that cannot wrap
    monkeypatch.setenv("COLUMNS", str(columns))
    _, out, _ = _run(capsys, "torch.onnxtxt", "--isolated", "--ep", "qnn", "--select", "OL5,OL1")
    table = [line for line in out.splitlines() if line.startswith(("OL", " ", "-"))]
    assert table and all(len(line) <= columns for line in table), out
    words = " ".join(out.split())
    # a long name may wrap only after a '/': every component of it stays whole
    for part in (
        "model",
        "encoder",
        "layer.0",
        "attention",
        "MatMul_with_a_long_name",
        "LayerNorm",
    ):
        assert part in words
    assert "qnn-htp" in out  # never cut at its hyphen


def test_show_settings_says_where_each_value_came_from(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    (folder / "onnxlint.toml").write_text('ignore = ["OL103"]\nfail-on = "warning"\n')
    code, out, _ = _run(
        capsys, "--show-settings", str(folder / "warn.onnxtxt"), "--ep", "qnn", "--select", "OL1"
    )
    assert code == 0
    assert f"config file: {folder / 'onnxlint.toml'} (found above the model)" in out
    assert "select = ['OL1']  [command line]" in out
    assert f"ignore = ['OL103']  [{folder / 'onnxlint.toml'}]" in out
    assert "severity = {}  [default]" in out
    assert "EPs: qnn-htp  [command line]" in out and "source qnn-measured:" in out
    assert "target ONNX Runtime:" in out and "versions: onnxlint " in out
    assert "OL105" not in out  # nothing was linted


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": ""}, False, False),  # empty means unset
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
    ],
)
def test_colour_switches(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool, expected: bool
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert cli_output.use_color(_Tty() if tty else io.StringIO()) is expected


def test_force_color_colours_a_pipe(
    capsys: pytest.CaptureFixture[str], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, out, _ = _run(capsys, str(folder / "warn.onnxtxt"), "--isolated")
    assert "\033[33mwarning\033[0m" in out


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("argv", [["rules"], ["rule", "OL105"], ["eps"], ["<model>", "--isolated"]])
def test_a_closed_pipe_ends_every_command_quietly(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    folder: Path,
    argv: list[str],
) -> None:
    argv = [str(folder / "warn.onnxtxt") if a == "<model>" else a for a in argv]
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(argv) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_closed_pipe_in_a_real_process() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "onnxlint", "rules"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO / "docs",
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head` that has already left
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "Exception ignored" not in err and "Broken" not in err


def test_progress_notes_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from onnxlint import progress

    progress.set_listener(cli_output.progress_line)
    try:
        progress.note("confirming m.onnx on qnn-htp: 2 sessions (disabled, basic)")
        with progress.listening(lambda m: (_ for _ in ()).throw(RuntimeError(m))):
            progress.note("a failing listener never breaks the work")
    finally:
        progress.set_listener(None)
    progress.note("nobody listens: nothing is printed")
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "onnxlint: confirming m.onnx on qnn-htp: 2 sessions (disabled, basic)\n"


def test_a_remedy_repeated_row_after_row_is_written_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # two dynamic graph inputs, an EP that does not need static shapes: two OL301 rows
    # with one and the same fix command
    text = (
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (float[batch,4] a, float[batch,4] b) => (float[batch,4] y) {\n"
        " [add] y = Add(a, b)\n}"
    )
    (tmp_path / "two.onnxtxt").write_text(text)
    cli.main([str(tmp_path / "two.onnxtxt"), "--isolated", "--ep", "cpu", "--no-progress"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("OL301")]
    assert len(rows) == 2, out
    assert out.count("fix: run `onnxlint fix-shapes") == 1, out
    assert out.count("fix: as above") == 1, out
    assert out.index("fix: run `onnxlint fix-shapes") < out.index("fix: as above")
