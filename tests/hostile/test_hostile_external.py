"""External-data references that point where they must not, and custom-op libraries.

Every forbidden target is a FIFO with no writer: opening it for reading blocks, so a
linter that opened one would hang and the subprocess timeout fails the test. Each case
goes through the CLI (exit code, diagnostic, no traceback, folder unchanged).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hostile import support as s


@dataclass(frozen=True)
class Ref:
    id: str
    #: given the model folder and a FIFO outside it, returns the location to write
    location: Callable[[Path, Path], str]
    code: str
    where: str = "initializer"
    says: str = ""


def _link(name: str, target: Callable[[Path, Path], str | Path]) -> Callable[[Path, Path], str]:
    def make(folder: Path, outside: Path) -> str:
        (folder / name).symlink_to(target(folder, outside))
        return name

    return make


def _fifo_inside(folder: Path, outside: Path) -> str:
    os.mkfifo(folder / "weights.bin")
    return "weights.bin"


def _short_file(folder: Path, outside: Path) -> str:
    (folder / "weights.bin").write_bytes(b"\0" * 4)
    return "weights.bin"


def _loop(folder: Path, outside: Path) -> str:
    (folder / "a.bin").symlink_to("b.bin")
    (folder / "b.bin").symlink_to("a.bin")
    return "a.bin"


REFS = [
    Ref("absolute", lambda f, o: str(o), "OL011", says="absolute path"),
    Ref("absolute-etc-passwd", lambda f, o: "/etc/passwd", "OL011"),
    Ref("dotdot", lambda f, o: f"../{o.name}", "OL011", says="'..'"),
    Ref("dotdot-nested", lambda f, o: f"sub/../../{o.name}", "OL011"),
    Ref("windows-dotdot", lambda f, o: f"..\\{o.name}", "OL011"),
    Ref("windows-drive", lambda f, o: "C:\\Windows\\win.ini", "OL011"),
    Ref("unc-path", lambda f, o: "\\\\server\\share\\w.bin", "OL011"),
    Ref("nul-byte", lambda f, o: "weights.bin\x00.txt", "OL011"),
    Ref("symlink-outside", _link("w.bin", lambda f, o: o), "OL011", says="symlink"),
    Ref("symlink-dev-zero", _link("w.bin", lambda f, o: "/dev/zero"), "OL011"),
    Ref("symlink-dev-stdin", _link("w.bin", lambda f, o: "/dev/stdin"), "OL011"),
    Ref("fifo-inside", _fifo_inside, "OL011", says="not a regular file"),
    Ref("folder-inside", lambda f, o: (f / "d").mkdir() or "d", "OL011"),
    Ref("symlink-loop", _loop, "OL010"),
    Ref("missing", lambda f, o: "nope.bin", "OL010"),
    Ref("too-short", _short_file, "OL012"),
    Ref("in-subgraph", lambda f, o: str(o), "OL011", where="subgraph"),
    Ref("in-constant", lambda f, o: f"../{o.name}", "OL011", where="constant"),
]


@pytest.mark.parametrize("ref", REFS, ids=[r.id for r in REFS])
def test_external_data_reference(tmp_path: Path, ref: Ref) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    outside = tmp_path / "secret.bin"
    os.mkfifo(outside)
    location = ref.location(folder, outside)
    (folder / "m.onnx").write_bytes(s.external_data_model(location, where=ref.where))
    before = s.snapshot(tmp_path)
    run = s.run_cli(folder / "m.onnx", "--fail-on", "hint", cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
    assert ref.code in run.codes, run.codes
    assert "OL099" not in run.codes, run.stdout
    if ref.says:
        assert ref.says in run.stdout
    assert s.snapshot(tmp_path) == before


_MARKER_LIB = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void loaded(void) {
    const char *path = getenv("ONNXLINT_TEST_MARKER");
    FILE *f = fopen(path ? path : "/dev/null", "w");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
int RegisterCustomOps(void *options, const void *api) { return 0; }
"""


@pytest.mark.skipif(
    shutil.which("cc") is None, reason="needs a C compiler to build the marker library"
)
def test_custom_op_library_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model naming a custom-op library next to it: onnxlint reports the custom domain
    and never loads the library (its constructor would write the marker file)."""
    folder = tmp_path / "model"
    folder.mkdir()
    src = tmp_path / "marker.c"
    src.write_text(_MARKER_LIB)
    lib = folder / "libevil.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=120)
    marker = tmp_path / "loaded.txt"
    monkeypatch.setenv("ONNXLINT_TEST_MARKER", str(marker))
    (folder / "m.onnx").write_bytes(s.custom_domain_model("evil").SerializeToString())
    before = s.snapshot(folder)
    for fmt_args in ((), ("--ep", "cpu")):
        run = s.run_cli(folder / "m.onnx", *fmt_args, "--fail-on", "hint", cwd=folder)
        assert "Traceback" not in run.stderr, run.stderr
        assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
        assert "OL203" in run.codes, run.codes
    assert not marker.exists(), "onnxlint loaded a custom-op library nobody passed"
    assert s.snapshot(folder) == before


@pytest.mark.parametrize(
    "ref",
    [r for r in REFS if r.id in ("absolute", "dotdot", "symlink-outside", "fifo-inside")],
    ids=lambda r: r.id,
)
def test_confirm_never_runs_a_session_on_a_forbidden_reference(tmp_path: Path, ref: Ref) -> None:
    """``--confirm`` would hand the model to ONNX Runtime, which reads external data: the
    loader's OL011 must stop it before any session (a FIFO would block the worker)."""
    folder = tmp_path / "model"
    folder.mkdir()
    outside = tmp_path / "secret.bin"
    os.mkfifo(outside)
    location = ref.location(folder, outside)
    (folder / "m.onnx").write_bytes(s.external_data_model(location))
    before = s.snapshot(tmp_path)
    run = s.run_cli(folder / "m.onnx", "--confirm", "--no-cache", "--ep", "cpu", cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
    assert "OL011" in run.codes
    assert s.snapshot(tmp_path) == before


@pytest.mark.parametrize("where", ["initializer", "subgraph", "constant"])
@pytest.mark.parametrize("ep", ["cpu", "qnn"])
def test_ep_analyses_never_open_a_forbidden_reference(tmp_path: Path, where: str, ep: str) -> None:
    """With an EP, the assignment analysis builds ORT's level-1 graph in-process; a tensor
    whose data lives in a FIFO (in the model folder and in the working folder, where ORT
    would resolve a model loaded from bytes) must not be opened by it either."""
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(folder / "weights.bin")
    os.mkfifo(tmp_path / "weights.bin")
    (folder / "m.onnx").write_bytes(s.external_data_model("weights.bin", where=where))
    before = s.snapshot(tmp_path)
    run = s.run_cli(folder / "m.onnx", "--ep", ep, "--fail-on", "hint", cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
    assert "OL011" in run.codes and "OL099" not in run.codes, run.codes
    assert s.snapshot(tmp_path) == before
