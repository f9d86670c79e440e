"""Nothing lost: every write onnxlint makes is atomic, and an interrupted write leaves
the original file untouched.

Interruptions: the data producer fails mid-write (disk full), fsync fails, and the
writing process is killed with SIGKILL between writing the temp file and renaming it.
"""

from __future__ import annotations

import ast
import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onnxlint import fsutil
from tests.hostile import support as s

ORIGINAL = b"the user's file: must survive any interrupted write\n" * 100


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}."))


class _DiskFullAfter(io.RawIOBase):
    """A file object that accepts ``budget`` bytes, then fails like a full disk."""

    def __init__(self, real: Any, budget: int) -> None:
        self.real, self.budget = real, budget

    def write(self, data: Any) -> int:
        chunk = bytes(data)[: self.budget]
        self.real.write(chunk)
        self.budget -= len(chunk)
        if len(chunk) < len(data):
            raise OSError(28, "No space left on device")
        return len(chunk)

    def flush(self) -> None:
        self.real.flush()

    def fileno(self) -> int:
        return int(self.real.fileno())

    def __exit__(self, *exc: object) -> None:
        self.real.close()


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(
        fsutil.os, "fdopen", lambda fd, *a, **k: _DiskFullAfter(real_fdopen(fd, *a, **k), 100)
    )


def _fsync_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fsutil.os, "fsync", fail)


def _rename_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(src: Any, dst: Any) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(fsutil.os, "replace", fail)


@pytest.mark.parametrize("fault", [_disk_full, _fsync_fails, _rename_fails])
@pytest.mark.parametrize("writer", ["bytes", "text"])
def test_failed_write_leaves_original_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: Any, writer: str
) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(ORIGINAL)
    fault(monkeypatch)
    with pytest.raises(OSError):
        if writer == "bytes":
            fsutil.atomic_write_bytes(target, b"new content " * 1000)
        else:
            fsutil.atomic_write_text(target, "new content " * 1000)
    assert target.read_bytes() == ORIGINAL
    assert _leftovers(tmp_path, "report.json") == []


def test_successful_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(ORIGINAL)
    fsutil.atomic_write_bytes(target, b"short")
    assert target.read_bytes() == b"short"
    assert _leftovers(tmp_path, "report.json") == []


# SIGKILL itself after the temp file is fully written, before the rename: the worst moment
_KILL_BEFORE_RENAME = """
import os, signal, sys
from pathlib import Path
from onnxlint import fsutil
real_fsync = os.fsync
def fsync_then_die(fd):
    real_fsync(fd)
    os.kill(os.getpid(), signal.SIGKILL)
fsutil.os.fsync = fsync_then_die
{body}
"""


@pytest.mark.parametrize(
    "body",
    [
        "fsutil.atomic_write_bytes(Path(sys.argv[1]), b'x' * 10_000_000)",
        # the CLI's --output path, killed the same way
        "from onnxlint.cli import main; main([sys.argv[2], '--format', 'json', '-o', sys.argv[1]])",
    ],
    ids=["fsutil", "cli-output"],
)
def test_killed_writer_leaves_original(tmp_path: Path, body: str) -> None:
    from onnxlint.ort_versions import installed_limits

    # the installed ORT's limits are cached first (an atomic write of their own), so the
    # CLI's first write, the one killed, is its --output
    installed_limits()
    target = tmp_path / "report.json"
    target.write_bytes(ORIGINAL)
    mtime = target.stat().st_mtime_ns
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILL_BEFORE_RENAME.format(body=body),
            str(target),
            str(s.REPO / "examples" / "demo.onnx"),
        ],
        cwd=s.REPO,
        capture_output=True,
        timeout=120,
        check=False,
        # no cache writes (the symbolic-inference answers are one): the first write is --output
        env={**os.environ, "ONNXLINT_NO_CACHE": "1"},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert target.read_bytes() == ORIGINAL
    assert target.stat().st_mtime_ns == mtime
    # the complete temp file is left behind (a later run may clean it); never a torn original
    assert len(_leftovers(tmp_path, "report.json")) == 1


def test_unwritable_output_is_a_usage_error(tmp_path: Path) -> None:
    run = s.run_cli(
        s.REPO / "examples" / "demo.onnx", "-o", tmp_path / "missing" / "out.json", cwd=tmp_path
    )
    assert "Traceback" not in run.stderr
    assert run.returncode == 2


# -- every write in the package goes through fsutil ----------------------------------------
#: writes that are not atomic replacements of a user-visible file, with the reason
ALLOWED_DIRECT_WRITES = {
    # fresh files in a private tempfile.mkdtemp() folder, handed to an ORT worker
    "compiled.py": "temp model for the compatibility worker, in a private mkdtemp folder",
    "runtime/client.py": "temp models for session workers, in a private mkdtemp folder",
    "analyses/level1/__init__.py": "the model handed to the level-1 worker, in a private mkdtemp",
    "fsutil.py": "the atomic writer itself",
}

_WRITE_METHODS = {"write_bytes", "write_text"}


def _direct_writes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
        if name in _WRITE_METHODS or (
            name == "save" and isinstance(fn, ast.Attribute) and ast.unparse(fn.value) == "onnx"
        ):
            found.append(f"{name}() at line {node.lineno}")
        elif name == "open":
            modes = [a for a in node.args[1:2]] + [
                k.value for k in node.keywords if k.arg == "mode"
            ]
            for mode in modes:
                if isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+"):
                    found.append(f"open(mode={mode.value!r}) at line {node.lineno}")
    return found


def test_every_write_in_the_package_is_atomic() -> None:
    package = s.REPO / "onnxlint"
    offenders = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in ALLOWED_DIRECT_WRITES:
            continue
        writes = _direct_writes(path)
        if writes:
            offenders[rel] = writes
    assert offenders == {}, (
        f"write through onnxlint.fsutil.atomic_write_* (or add a reasoned allowance): {offenders}"
    )
