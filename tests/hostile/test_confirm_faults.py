"""``--confirm`` when its worker misbehaves mid-session (issue #20, "fuzz the confirm path").

The CLI runs real sessions through a runner interpreter that the configuration names
(``[runners] cpu = ...``). Here that runner is a small wrapper around this interpreter
that passes the worker its request with the worker's own fault hook set on every item,
so the worker crashes (SIGSEGV, SIGKILL, a plain exit), hangs or stops itself (SIGSTOP)
after it has said hello and started a session: the parent sees what it would see from a
real EP crash. For each: the report has OL903 saying why, the exit code is 1, no process
of the run is left (found by a marker in their environment, so a worker in its own
session is found too), and nothing is left in ``$TMPDIR``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from onnx import TensorProto, helper

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "memfd_create"),
    reason="process scan through /proc and memfd_create: Linux",
)

#: the session timeout the configuration sets (a hung or stopped worker costs this much)
TIMEOUT_S = 4

#: the runner: this interpreter, with ``fault`` set on every item of the worker's request
WRAPPER = """\
#!{python}
import json, os, sys

real = {python!r}
args = sys.argv[1:]
if "-c" in args:  # the runner's identity probe: answer as the real interpreter would
    os.execv(real, [real, *args])
request = json.loads(sys.stdin.buffer.read())
for item in request.get("items", []):
    item["fault"] = {fault!r}
fd = os.memfd_create("request")
os.write(fd, json.dumps(request).encode())
os.lseek(fd, 0, os.SEEK_SET)
os.dup2(fd, 0)
os.execv(real, [real, *args])
"""

#: fault -> words OL903's message must hold
FAULTS = {
    "segv": "killed by signal SIGSEGV",
    "sigkill": "killed by signal SIGKILL",
    "exit": "exited with 3",
    "hang": f"no result within {TIMEOUT_S} s; worker killed",
    "sigstop": f"no result within {TIMEOUT_S} s; worker killed",
}


def _model(path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the run and whatever it started)."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _wait_gone(marker: str, patience_s: float = 30.0) -> list[int]:
    end = time.monotonic() + patience_s
    while (left := processes_with(marker)) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def faulty_project(tmp_path: Path, fault: str) -> tuple[Path, Path]:
    """A folder with a model and an onnxlint.toml whose cpu runner injects ``fault``."""
    project = tmp_path / "project"
    project.mkdir()
    _model(project / "m.onnx")
    runner = tmp_path / "python-faulty"  # "python" in the name: called with -I like one
    runner.write_text(WRAPPER.format(python=sys.executable, fault=fault))
    runner.chmod(0o755)
    (project / "onnxlint.toml").write_text(
        f'[runners]\ncpu = "{runner}"\n\n[confirm]\ntimeout-s = {TIMEOUT_S}\n'
    )
    return project, project / "m.onnx"


def run_confirm(
    project: Path, model: Path, tmp_path: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], str, Path]:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    marker = f"ONNXLINT_TEST_RUN={uuid.uuid4().hex}"
    key, value = marker.split("=")
    proc = subprocess.run(
        [sys.executable, "-m", "onnxlint", str(model), "--ep", "cpu", "--confirm", "--no-cache",
         "--format", "json", "--no-progress", *extra],
        capture_output=True, text=True, cwd=project, timeout=300, check=False,
        env={**os.environ, "TMPDIR": str(tmpdir), key: value},
    )  # fmt: skip
    return proc, marker, tmpdir


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_worker_failing_mid_session_is_ol903_and_leaves_nothing(
    tmp_path: Path, fault: str
) -> None:
    project, model = faulty_project(tmp_path, fault)
    before = model.read_bytes()
    proc, marker, tmpdir = run_confirm(project, model, tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    (report,) = json.loads(proc.stdout)["files"]
    failed = [d for d in report["diagnostics"] if d["code"] == "OL903"]
    assert failed, report["diagnostics"]
    assert all(FAULTS[fault] in d["message"] for d in failed), [d["message"] for d in failed]
    assert _wait_gone(marker) == [], f"processes of the run outlived it ({fault})"
    assert _left(tmpdir) == []
    assert model.read_bytes() == before


def test_sigterm_while_a_stopped_worker_is_waited_for_leaves_nothing(tmp_path: Path) -> None:
    """onnxlint ended by SIGTERM while its worker is stopped (SIGSTOP): the stopped
    worker is killed too, the temp folders (one holds a copy of the model) removed."""
    project, model = faulty_project(tmp_path, "sigstop")
    (project / "onnxlint.toml").write_text(
        (project / "onnxlint.toml")
        .read_text()
        .replace(f"timeout-s = {TIMEOUT_S}", "timeout-s = 600")
    )
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    marker = f"ONNXLINT_TEST_RUN={uuid.uuid4().hex}"
    key, value = marker.split("=")
    proc = subprocess.Popen(
        [sys.executable, "-m", "onnxlint", str(model), "--ep", "cpu", "--confirm", "--no-cache",
         "--format", "json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=project,
        env={**os.environ, "TMPDIR": str(tmpdir), key: value},
    )  # fmt: skip
    try:
        end = time.monotonic() + 120
        stopped: list[int] = []
        while not stopped and time.monotonic() < end and proc.poll() is None:
            stopped = [p for p in processes_with(marker) if _state(p) == "T"]
            time.sleep(0.1)
        assert stopped, "the worker never stopped itself"
        assert any(n.startswith("onnxlint-models-") for n in os.listdir(tmpdir))
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM
    assert _wait_gone(marker) == [], "a stopped worker outlived onnxlint"
    assert _left(tmpdir) == []


def _left(tmpdir: Path) -> list[str]:
    """What the run left in ``$TMPDIR``, but ORT's own ``.ses``: onnxruntime 1.32 writes
    that telemetry session file into ``$TMPDIR`` whenever it is imported (docs/SECURITY.md)."""
    return sorted(p.name for p in tmpdir.iterdir() if p.name != ".ses")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"
