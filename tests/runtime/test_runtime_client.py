"""The worker protocol and the client's isolation: crashes, hangs, OOM, missing runners.

These use the CPU EP of the current interpreter and the worker's fault hook, so
they run everywhere in a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
from runtime_helpers import relu_model

from onnxlint.runtime import SessionRequest, optimize_model, run_sessions
from onnxlint.runtime.discovery import discover, discover_all
from onnxlint.runtime.processes import WORKER_PATH
from onnxlint.runtime.results import (
    STATUS_CRASH,
    STATUS_OK,
    STATUS_OOM,
    STATUS_RUNNER,
    STATUS_TIMEOUT,
)
from onnxlint.runtime.runners import EpSpec

CPU = "CPUExecutionProvider"


def _worker_lines(request: dict[str, object]) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, str(WORKER_PATH)],
        input=json.dumps(request).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def test_worker_imports_nothing_from_onnxlint() -> None:
    source = WORKER_PATH.read_text(encoding="utf-8")
    assert "onnxlint" not in "".join(
        line for line in source.splitlines() if line.lstrip().startswith(("import", "from"))
    )


def test_worker_rejects_unknown_protocol() -> None:
    [line] = _worker_lines({"protocol": 99, "items": []})
    assert line["event"] == "fatal"
    assert "unsupported protocol 99" in str(line["error"])


def test_worker_stdout_carries_only_protocol_lines(tmp_path: Path) -> None:
    model = tmp_path / "relu.onnx"
    onnx.save(relu_model(), model)
    lines = _worker_lines(
        {
            "protocol": 1,
            "ep": {"provider": CPU},
            "items": [{"id": "a", "kind": "session", "model_path": str(model)}],
        }
    )
    # Verbose ORT logging went to the per-item log file, not our stdout.
    assert [line["event"] for line in lines] == ["hello", "start", "result", "done"]
    result = lines[2]
    assert result["ok"] is True
    assert result["assignment"] == [{"name": "r0", "op_type": "Relu", "domain": "", "ep": CPU}]


def test_sigkill_mid_batch_is_reported_and_the_batch_continues() -> None:
    reqs = [
        SessionRequest(relu_model(), id="before"),
        SessionRequest(relu_model(), id="killed", fault="sigkill"),
        SessionRequest(relu_model(), id="after"),
    ]
    before, killed, after = run_sessions(reqs, "cpu", timeout_s=60)
    assert (before.status, killed.status, after.status) == (STATUS_OK, STATUS_CRASH, STATUS_OK)
    assert killed.request_id == "killed"
    assert killed.signal == signal.SIGKILL
    assert "SIGKILL" in (killed.error or "")
    assert killed.isolated_failure
    # A fresh worker took over after the crash.
    assert before.worker_pid == killed.worker_pid != after.worker_pid
    assert after.nodes_on(CPU)


def test_segfault_is_a_crash() -> None:
    [res] = run_sessions([SessionRequest(relu_model(), fault="segv")], "cpu", timeout_s=60)
    assert res.status == STATUS_CRASH
    assert res.signal == signal.SIGSEGV


def test_unexpected_exit_is_a_crash() -> None:
    [res] = run_sessions([SessionRequest(relu_model(), fault="exit")], "cpu", timeout_s=60)
    assert res.status == STATUS_CRASH
    assert res.signal is None
    assert "exited with 3" in (res.error or "")


def test_hang_past_the_timeout_is_killed_and_the_next_request_runs() -> None:
    reqs = [SessionRequest(relu_model(), id="hang", fault="hang"), SessionRequest(relu_model())]
    hung, nxt = run_sessions(reqs, "cpu", timeout_s=3)
    assert hung.status == STATUS_TIMEOUT
    assert "no result within 3 s" in (hung.error or "")
    assert nxt.status == STATUS_OK


def test_memory_cap_turns_runaway_allocation_into_oom() -> None:
    [res, nxt] = run_sessions(
        [SessionRequest(relu_model(), fault="oom"), SessionRequest(relu_model())],
        "cpu",
        timeout_s=60,
        memory_cap_mb=3072,
    )
    assert res.status == STATUS_OOM
    assert nxt.status == STATUS_OK


def _fake_runner(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-runner"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_fake_runner_that_hangs(tmp_path: Path) -> None:
    runner = _fake_runner(
        tmp_path,
        """
        import json, sys, time
        req = json.loads(sys.stdin.read())
        print(json.dumps({"event": "hello", "protocol": 1, "versions": {}}), flush=True)
        print(json.dumps({"event": "start", "index": 0, "id": "x"}), flush=True)
        time.sleep(600)
        """,
    )
    [res] = run_sessions([SessionRequest(relu_model())], "cpu", runner=runner, timeout_s=2)
    assert res.status == STATUS_TIMEOUT
    # The parent is fine and the real runner still works.
    [ok] = run_sessions([SessionRequest(relu_model())], "cpu", timeout_s=60)
    assert ok.status == STATUS_OK


def test_runner_that_never_starts_is_retried_then_reported(tmp_path: Path) -> None:
    marker = tmp_path / "starts"
    runner = _fake_runner(
        tmp_path,
        f"""
        import time
        with open({str(marker)!r}, "a") as fh:
            fh.write("x")
        time.sleep(600)
        """,
    )
    results = run_sessions(
        [SessionRequest(relu_model(), id="a"), SessionRequest(relu_model(), id="b")],
        "cpu",
        runner=runner,
        startup_timeout_s=1,
    )
    assert [r.status for r in results] == [STATUS_RUNNER, STATUS_RUNNER]
    assert "did not reach its first request within 1 s" in (results[0].error or "")
    assert marker.read_text() == "xxx"  # START_ATTEMPTS tries, not one per request


def test_missing_runner_interpreter(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-venv" / "bin" / "python")
    results = run_sessions(
        [SessionRequest(relu_model(), id="a"), SessionRequest(relu_model(), id="b")],
        "openvino",
        runner=missing,
    )
    assert [r.status for r in results] == [STATUS_RUNNER, STATUS_RUNNER]
    assert all(missing in (r.error or "") for r in results)
    assert results[0].error_kind == "runner-missing"
    [ok] = run_sessions([SessionRequest(relu_model())], "cpu", timeout_s=60)
    assert ok.status == STATUS_OK


def test_runner_that_dies_at_start_up(tmp_path: Path) -> None:
    runner = _fake_runner(tmp_path, "import sys\nsys.stderr.write('broken venv\\n')\nsys.exit(7)\n")
    [res] = run_sessions([SessionRequest(relu_model())], "cpu", runner=runner, timeout_s=10)
    assert res.status == STATUS_RUNNER
    assert "exited with 7" in (res.error or "")
    assert "broken venv" in (res.error or "")


def test_broken_plugin_ep_library_is_reported(tmp_path: Path) -> None:
    # A plugin EP package whose native library is missing: the session says why
    # the EP is absent instead of failing somewhere inside ORT.
    site = tmp_path / "site" / "onnxruntime_ep_broken"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(
        "def get_library_path():\n    return '/nonexistent/libonnxruntime_ep_broken.so'\n"
        "def get_ep_name():\n    return 'BrokenExecutionProvider'\n"
    )
    runner = _fake_runner(
        tmp_path,
        f"""
        import runpy, sys
        sys.path.insert(0, {str(site.parent)!r})
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
        """,
    )
    [res, nxt] = run_sessions(
        [SessionRequest(relu_model()), SessionRequest(relu_model())],
        EpSpec("BrokenExecutionProvider"),
        runner=runner,
        timeout_s=60,
    )
    assert res.status == "error"
    assert res.error_kind == "ep-library"
    assert "onnxruntime_ep_broken" in res.facts["plugin_errors"]
    assert "BrokenExecutionProvider is not available" in (res.error or "")
    assert nxt.error_kind == "ep-library"  # the worker carried on


def test_unavailable_ep_is_a_session_error_not_a_crash() -> None:
    [res] = run_sessions([SessionRequest(relu_model())], "migraphx", timeout_s=60)
    assert res.status == "error"
    assert res.error_kind == "ep-unavailable"
    assert "MIGraphXExecutionProvider is not available" in (res.error or "")


def test_bad_model_is_a_session_error(tmp_path: Path) -> None:
    [res] = run_sessions([SessionRequest(b"not a model")], "cpu", timeout_s=60)
    assert res.status == "error"
    assert res.error_kind == "session"
    assert res.log_tail is not None


def test_optimize_model_writes_a_cpu_only_graph(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(relu_model(), src)
    out = tmp_path / "m.opt.onnx"
    res = optimize_model(src, out)
    assert res.ok, res.error
    assert res.provider == CPU
    assert [n.op_type for n in onnx.load(out).graph.node] == ["Relu"]


def test_optimize_asks_for_no_prepacking_and_writes_the_graph_a_plain_session_writes(
    tmp_path: Path,
) -> None:
    """Prepacking (weights laid out for the CPU kernels) only costs the optimize request
    time and memory: the graph ORT writes is the same bytes with it (onnxruntime 1.32.0)."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from onnxlint.runtime.client import OPTIMIZE_CONFIG, start_optimize

    weight = numpy_helper.from_array(np.ones((64, 32), np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Transpose", ["w"], ["wt"], "fold_me"),
            helper.make_node("MatMul", ["x", "w"], ["y"], "mm"),
            helper.make_node("MatMul", ["y", "wt"], ["z"], "mm2"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 64])],
        [weight],
    )
    src = tmp_path / "m.onnx"
    # IR 9: the oldest onnxruntime this project supports (1.24) reads up to IR 11
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.save(model, src)
    assert OPTIMIZE_CONFIG == {"session.disable_prepacking": "1"}
    pending = start_optimize(src, tmp_path / "ours.onnx")
    assert pending.items[0].payload["config"] == OPTIMIZE_CONFIG
    res = pending.result()[0]
    assert res.ok, res.error
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(tmp_path / "plain.onnx")
    ort.InferenceSession(str(src), so, providers=[CPU])
    ours = onnx.load(tmp_path / "ours.onnx")
    assert [n.op_type for n in ours.graph.node] == ["MatMul", "MatMul"]  # Transpose folded
    assert ours.SerializeToString() == onnx.load(tmp_path / "plain.onnx").SerializeToString()


def test_discover_this_interpreter() -> None:
    info = discover(sys.executable)
    assert info.ok
    assert info.python == sys.executable
    assert info.has("cpu")
    assert info.onnxruntime
    assert "AzureExecutionProvider" not in info.providers()


def test_results_carry_versions_and_timing() -> None:
    [res] = run_sessions([SessionRequest(relu_model())], "cpu", timeout_s=60)
    assert res.versions["onnxruntime"]
    assert res.create_s is not None and res.create_s >= 0
    assert res.assignment_source in ("api", "log")
    assert os.getpid() != res.worker_pid


def test_discover_all_asks_each_interpreter_once(tmp_path: Path) -> None:
    infos = discover_all(
        {"openvino": str(tmp_path / "missing/python")}, eps=["cpu", "qnn", "openvino"]
    )
    assert set(infos) == {sys.executable, str(tmp_path / "missing/python")}
    assert infos[sys.executable].ok
    missing = infos[str(tmp_path / "missing/python")]
    assert not missing.ok
    assert "cannot be started" in (missing.error or "")


def test_a_plugin_package_that_is_not_installed_is_an_absent_ep_not_a_broken_one() -> None:
    """onnxruntime-qnn not installed: the EP is unavailable (OL906, with the install
    command), not a failed session (OL903)."""
    spec = EpSpec("NoSuchExecutionProvider", plugin_package="onnxruntime_nosuchep_pkg")
    [res] = run_sessions([SessionRequest(relu_model())], spec, timeout_s=60)
    assert (res.status, res.error_kind) == ("error", "ep-unavailable")
    assert res.facts["missing_package"] == "onnxruntime_nosuchep_pkg"
    assert "plugin_errors" not in res.facts
