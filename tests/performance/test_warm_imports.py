"""What a one-EP lint imports (issue 19, warm): only what it runs.

``import onnx`` is most of the floor's time, so onnxlint's own imports count against its
ratio to the floor. Checked in a fresh interpreter through ``sys.modules`` (never
timed): the subcommands' modules (the CLI imported all seven to learn their names),
tabulate (a table of plain ASCII cells is laid out by onnxlint), the TOML reader under
``--isolated``, the baseline without ``--baseline``, and the worker client and protocol
when the level-1 graph comes from the cache (its key needs only the protocol's number),
and ``onnxlint.confirm`` without a confirmation mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from onnxlint import cli
from tests.conftest import parse
from tests.performance.test_warm_cold_start import MODEL

REPO = Path(__file__).resolve().parents[2]

#: modules a lint with one EP and a filled level-1 cache has no use for
NOT_NEEDED = (
    "onnxlint.commands.compile",
    "onnxlint.commands.eps",
    "onnxlint.commands.fix_shapes",
    "onnxlint.commands.lsp",
    "onnxlint.commands.probe",
    "onnxlint.commands.rule",
    "onnxlint.commands.rules",
    "onnxlint.baseline",
    "onnxlint.runtime.client",
    "onnxlint.runtime.batch",
    # --confirm's sessions and their cache (the compiled-source check runs without them)
    "onnxlint.confirm",
    "tabulate",
    "tomllib",
    "jsonschema",
    "pygls",
)

PROBE = """
import json, sys
from onnxlint.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("\\nPROBE " + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _lint(tmp_path: Path, *args: str) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(REPO), ONNXLINT_CACHE_DIR=str(tmp_path / "cache"))
    env["ONNXLINT_NO_CACHE"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBE ")]
    assert lines, done.stderr
    result: dict[str, object] = json.loads(lines[-1][len("PROBE ") :])
    return result


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_warm_one_ep_lint_imports_only_what_it_runs(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(parse(MODEL), str(path))
    args = [str(path), "--ep", "qnn", "--isolated", "--no-progress", "--format", fmt]
    # the lint itself, not its report read back: a file stands where the report cache's
    # folder would be (tests/test_report_cache.py checks what a read-back imports)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "reports").write_text("no report cache\n")
    first = _lint(tmp_path, *args)  # fills the level-1 cache (a worker, when ORT is installed)
    warm = _lint(tmp_path, *args)
    assert warm["code"] == first["code"]
    modules = set(warm["modules"])  # type: ignore[call-overload]
    assert "onnxlint.engine" in modules  # it did lint
    assert sorted(m for m in NOT_NEEDED if m in modules) == []


def test_the_command_table_names_every_command_module() -> None:
    """``cli.COMMANDS`` (what a run dispatches on without importing the commands) is the
    set of modules under ``onnxlint.commands``, each by its ``NAME``."""
    found = {name: mod.__name__.rsplit(".", 1)[-1] for name, mod in cli._command_modules().items()}
    assert found == cli.COMMANDS


def test_the_help_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = out.split("commands:\n", 1)[1]
    for name, mod in cli._command_modules().items():
        assert f"  {name:<12} {mod.HELP}" in listed


def test_a_subcommand_imports_only_its_own_module(tmp_path: Path) -> None:
    got = _lint(tmp_path, "rule", "OL101")
    modules = set(got["modules"])  # type: ignore[call-overload]
    assert got["code"] == 0
    assert "onnxlint.commands.rule" in modules
    assert sorted(m for m in modules if m.startswith("onnxlint.commands.")) == [
        "onnxlint.commands.rule"
    ]
