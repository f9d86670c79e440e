"""Every front end gets its model through the loader's guards (issue #20, item 2).

A model path that is a symlink to a file outside the linted folder is reported and
never read: the ONNX text parser's error would otherwise quote the file's first line (a
credentials file, say) into the report, a CI log or a SARIF upload. OL101 checks the
loaded proto, never the path again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import onnxlint
from onnxlint import testing
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.index import ModelIndex
from onnxlint.loader import load
from onnxlint.rules.checker import CheckerError
from tests.hostile import support as s

SECRET = "SECRETTOKEN42"


def _planted(tmp_path: Path, name: str = "m.onnxtxt") -> tuple[Path, Path]:
    """A folder holding ``name``, a symlink to a credentials file outside the folder."""
    folder = tmp_path / "repo"
    folder.mkdir()
    creds = tmp_path / "credentials"
    creds.write_text(f"aws_secret_access_key = {SECRET}\n")
    (folder / name).symlink_to(creds)
    return folder, folder / name


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onnxlint", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=s.CLI_TIMEOUT_S,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.mark.parametrize("name", ["m.onnxtxt", "m.onnx"])
def test_loader_refuses_a_symlink_out_of_its_folder(tmp_path: Path, name: str) -> None:
    _, link = _planted(tmp_path, name)
    loaded = load(link)
    assert loaded.fatal
    assert [(d.code, d.message_id) for d in loaded.diagnostics] == [("OL001", "outside")]
    assert SECRET not in loaded.diagnostics[0].message
    assert loaded.content_hash == ""  # never read


def test_a_symlink_inside_the_folder_is_followed(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "m.onnxtxt").write_text(s.VALID_TEXT)
    (folder / "m.onnxtxt").symlink_to(Path("real") / "m.onnxtxt")
    loaded = load(folder / "m.onnxtxt")
    assert not loaded.fatal and loaded.diagnostics == []
    assert loaded.base_dir == (folder / "real").resolve()
    # and a linted folder given as root lets a link reach a sibling folder inside it
    (folder / "sub").mkdir()
    (folder / "sub" / "m.onnxtxt").symlink_to(Path("..") / "real" / "m.onnxtxt")
    assert load(folder / "sub" / "m.onnxtxt").fatal
    assert not load(folder / "sub" / "m.onnxtxt", root=folder).fatal


@pytest.mark.parametrize("fmt", ["json", "github", "sarif"])
def test_cli_never_quotes_a_file_outside_the_folder(tmp_path: Path, fmt: str) -> None:
    folder, link = _planted(tmp_path)
    for target in (link, folder):
        run = _cli(target, "--format", fmt, "--no-progress", cwd=tmp_path)
        assert run.returncode == 2, (run.stdout, run.stderr)
        assert "OL001" in run.stdout
        assert SECRET not in run.stdout + run.stderr
        assert "Traceback" not in run.stderr


def test_api_and_pytest_helper_refuse_it(tmp_path: Path) -> None:
    _, link = _planted(tmp_path)
    for report in (onnxlint.lint(link), testing.lint_model(link)):
        assert [d.code for d in report.diagnostics] == ["OL001"]
        assert SECRET not in report.to_json()


@pytest.mark.parametrize("command", ["fix-shapes", "compile"])
def test_commands_refuse_it(tmp_path: Path, command: str) -> None:
    _, link = _planted(tmp_path)
    out = tmp_path / "out.onnx"
    args = ["--dim", "N=1"] if command == "fix-shapes" else ["--ep", "qnn"]
    run = _cli(command, link, "-o", out, *args, cwd=tmp_path)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "outside the linted folder" in run.stderr
    assert SECRET not in run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert not out.exists()


def test_checker_rule_checks_the_loaded_proto_and_touches_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OL101 once re-opened the model by path (a FIFO swapped in hung the lint), and the
    checker stats external locations, relative to the working directory for a proto."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(bytes(16))
    (folder / "m.onnx").write_bytes(s.external_data_model("w.bin", where="constant"))
    loaded = load(folder / "m.onnx")
    assert loaded.model is not None and loaded.diagnostics == []
    before = loaded.model.SerializeToString()
    seen: list[object] = []
    real_check = onnx.checker.check_model

    def spy(model: object, *args: object, **kwargs: object) -> None:
        seen.append(model)
        real_check(model, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(onnx.checker, "check_model", spy)
    os.unlink(folder / "m.onnx")
    os.mkfifo(folder / "m.onnx")  # a second open by path would block here
    monkeypatch.chdir(tmp_path)  # w.bin does not exist relative to the working directory
    ctx = LintContext(loaded=loaded, index=ModelIndex(loaded.model), config=Config(), eps=[])
    CheckerError().check_model(ctx)
    assert ctx.diagnostics == []
    assert len(seen) == 1 and isinstance(seen[0], onnx.ModelProto)
    checked = seen[0]
    assert all(t.data_location != onnx.TensorProto.EXTERNAL for t, _ in _tensors(checked))
    assert loaded.model.SerializeToString() == before  # the loaded model is not changed


def _tensors(model: onnx.ModelProto) -> list[tuple[onnx.TensorProto, str]]:
    from onnxlint.tensors import iter_tensors

    return list(iter_tensors(model))


def test_checker_still_reports_a_real_error_beside_external_data(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(bytes(16))
    model = onnx.load_model_from_string(s.external_data_model("w.bin"))
    model.graph.node[0].attribute.append(onnx.helper.make_attribute("alpha", 0.5))
    (folder / "m.onnx").write_bytes(model.SerializeToString())
    report = onnxlint.lint(folder / "m.onnx", config={"select": ["OL101"]})
    assert [d.code for d in report.diagnostics] == ["OL101"]
    assert "alpha" in report.diagnostics[0].message


@pytest.mark.parametrize("external", [False, True])
def test_an_unknown_operator_is_set_aside_with_or_without_external_data(
    tmp_path: Path, external: bool
) -> None:
    """OL204 reports an unknown operator; the checker's copy has it in a private domain.
    With external data the checker's copy is another model than the index's, and the
    nodes used to be matched by identity, so none was set aside and OL101 reported the
    operator a second time."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(bytes(16))
    model = onnx.load_model_from_string(s.external_data_model("w.bin"))
    model.graph.node[0].op_type = "NoSuchOp"
    if not external:
        onnx.load_external_data_for_model(model, str(folder))
    (folder / "m.onnx").write_bytes(model.SerializeToString())
    report = onnxlint.lint(folder / "m.onnx", config={"select": ["OL101", "OL204"]})
    assert [d.code for d in report.diagnostics] == ["OL204"]
