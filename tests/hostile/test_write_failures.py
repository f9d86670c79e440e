"""Write failures are one line naming the path and the reason, exit 2, no temp file left,
the input untouched (issue #20, items 6 and 8).

Real failures where the machine allows them: a tiny tmpfs (ENOSPC) and a read-only
remount (EROFS), each in a private mount namespace (``unshare -m``) so nothing leaks
into the host's mounts; a folder named like the output everywhere. The same failures
are also simulated in-process, so they run where mounting is not allowed.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from onnxlint import fsutil
from onnxlint.probe.report import ProbeReport, write_report
from tests.hostile import support as s


def _dynamic_model(path: Path, weights: int = 0) -> None:
    """Relu on a [N,4] input; ``weights`` float32 initializer values make the file big."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    inits = [helper.make_tensor("w", TensorProto.FLOAT, [weights], bytes(4 * weights), raw=True)]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path.write_bytes(model.SerializeToString())


def _temp_files(folder: Path) -> list[str]:
    return sorted(
        p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or "onnxlint" in p.name
    )


def _check_one_line(run: subprocess.CompletedProcess[str], path: Path, reason: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stdout, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert str(path) in lines[0] and reason in lines[0], lines[0]


def _onnxlint(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "onnxlint", *map(str, args)]


def _fix_shapes(src: Path, out: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _onnxlint("fix-shapes", src, "-o", out, "--dim", "N=1", "--no-lint", "--force"),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=s.CLI_TIMEOUT_S,
        check=False,
    )


def test_output_that_is_a_folder(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    _dynamic_model(src)
    (tmp_path / "out.onnx").mkdir()
    before = s.snapshot(tmp_path)
    run = _fix_shapes(src, tmp_path / "out.onnx", tmp_path)
    _check_one_line(run, tmp_path / "out.onnx", "directory")
    assert s.snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("errno_", "reason"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
)
def test_simulated_write_failures_in_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    errno_: int,
    reason: str,
) -> None:
    """fix-shapes in-process with the write failing inside the atomic writer."""
    from onnxlint.cli import main

    src = tmp_path / "m.onnx"
    _dynamic_model(src)
    before = s.snapshot(tmp_path)
    real_fsync = os.fsync

    def fail(fd: int) -> None:
        real_fsync(fd)
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(fsutil.os, "fsync", fail)
    code = main(["fix-shapes", str(src), "-o", str(tmp_path / "out.onnx"), "--dim", "N=1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert f"cannot write {tmp_path / 'out.onnx'}: {reason}" in err
    assert s.snapshot(tmp_path) == before  # no output, no temp file, input untouched


def test_compile_into_an_unwritable_folder_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compile`` stages next to the output with mkdtemp, which a read-only folder refuses."""
    import tempfile

    from onnxlint.cli import main

    src = tmp_path / "m.onnx"
    _dynamic_model(src)
    before = s.snapshot(tmp_path)

    def refuse(*args: object, **kwargs: object) -> str:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    code = main(["compile", str(src), "--ep", "qnn", "-o", str(tmp_path / "ctx.onnx")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert f"cannot write {tmp_path / 'ctx.onnx'}: Read-only file system" in err
    assert s.snapshot(tmp_path) == before


_UNSHARE = shutil.which("unshare")


def _can_mount() -> bool:
    if _UNSHARE is None or sys.platform != "linux":
        return False
    probe = subprocess.run(
        [_UNSHARE, "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs none /mnt"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(
    not _can_mount(), reason="needs unshare -m and permission to mount a tmpfs"
)


def _in_mount(tmp_path: Path, setup: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in a private mount namespace after the shell ``setup``."""
    script = setup + ' && exec "$@"'
    return subprocess.run(
        [
            _UNSHARE or "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            *command,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=s.CLI_TIMEOUT_S,
        check=False,
    )


@needs_mount
def test_fix_shapes_onto_a_full_disk(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    _dynamic_model(src, weights=64 * 1024)  # 256 KiB of weights, a 64 KiB disk
    disk = tmp_path / "disk"
    disk.mkdir()
    out = disk / "out.onnx"
    before = s.snapshot(tmp_path)
    run = _in_mount(
        tmp_path,
        f"mount -t tmpfs -o size=64k none {disk}",
        _onnxlint("fix-shapes", src, "-o", out, "--dim", "N=1", "--no-lint"),
    )
    _check_one_line(run, out, "No space left on device")
    assert s.snapshot(tmp_path) == before  # the tmpfs went with the namespace; src intact


@needs_mount
@pytest.mark.parametrize("command", ["fix-shapes", "compile"])
def test_writes_into_a_read_only_folder(tmp_path: Path, command: str) -> None:
    src = tmp_path / "m.onnx"
    _dynamic_model(src)
    ro = tmp_path / "ro"
    ro.mkdir()
    out = ro / "out.onnx"
    args = ["--dim", "N=1", "--no-lint"] if command == "fix-shapes" else ["--ep", "qnn"]
    before = s.snapshot(tmp_path)
    run = _in_mount(
        tmp_path,
        f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro}",
        _onnxlint(command, src, "-o", out, *args),
    )
    _check_one_line(run, out, "Read-only file system")
    assert s.snapshot(tmp_path) == before


# -- probe -o ------------------------------------------------------------------------------
def _report() -> ProbeReport:
    return ProbeReport(
        ep="cpu",
        provider="CPUExecutionProvider",
        options={},
        date="2026-12-01",
        versions={"onnxruntime": "0"},
        optimization="disabled",
    )


def test_probe_report_never_writes_through_a_planted_temp_link(tmp_path: Path) -> None:
    """``probe -o OUT`` wrote ``OUT.tmp`` and followed a symlink planted under that name."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    out = tmp_path / "cpu.json"
    (tmp_path / "cpu.json.tmp").symlink_to(victim)
    write_report(_report(), out)
    assert victim.read_text() == "the user's file\n"
    assert (tmp_path / "cpu.json.tmp").is_symlink()
    data = out.read_text()
    assert '"ep":"cpu"' in data
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cpu.json.")] == []


def test_probe_output_checked_before_probing(tmp_path: Path) -> None:
    (tmp_path / "out.json").mkdir()
    run = subprocess.run(
        _onnxlint("probe", "--ep", "cpu", "-o", tmp_path / "out.json"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=s.CLI_TIMEOUT_S,
        check=False,
    )
    _check_one_line(run, tmp_path / "out.json", "directory")


def test_write_error_is_one_line() -> None:
    msg = fsutil.write_error(Path("a/b.onnx"), OSError(errno.ENOSPC, "No space left on device"))
    assert msg == "cannot write a/b.onnx: No space left on device"
    assert fsutil.write_error("x", OSError("multi\nline")) == "cannot write x: multi line"
