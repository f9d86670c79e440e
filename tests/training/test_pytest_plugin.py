"""The pytest plugin, driven through real pytest runs in a scratch project.

One run is a ``python -m pytest`` subprocess, so that the plugin is loaded the
way users get it (the ``pytest11`` entry point of the installed package); the
option variants run in-process with ``pytester``, which loads the same entry
point, to keep the suite fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BAD_TEXT, GOOD_TEXT

pytest_plugins = ["pytester"]

TESTS = f'''
import onnx
from onnxlint.testing import assert_deployable

GOOD = """{GOOD_TEXT}"""
BAD = """{BAD_TEXT}"""
ONLY = {{"select": ["OL105", "OL204"]}}


def test_fixture_lints_without_failing(onnxlint_report):
    report = onnxlint_report(onnx.parser.parse_model(BAD), config=ONLY)
    assert report.errors


def test_helper_uses_session_ep():
    report = assert_deployable(onnx.parser.parse_model(GOOD), config=ONLY)
    print("EPS", report.eps)


def test_helper_fails_with_findings():
    assert_deployable(onnx.parser.parse_model(BAD), ep="cpu", config=ONLY)
'''


def _pytest(folder: Path, *args: str, ini: str = "") -> subprocess.CompletedProcess[str]:
    (folder / "pytest.ini").write_text("[pytest]\n" + ini)
    (folder / "test_models.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=600,
        env=env,
        check=False,
    )


def test_summary_option_and_failure_message(tmp_path: Path) -> None:
    res = _pytest(tmp_path, "--onnxlint-ep", "cpu")
    out = res.stdout
    assert res.returncode == 1, out + res.stderr  # one test fails on purpose
    assert "1 failed, 2 passed" in out
    assert "EPS ['cpu']" in out  # --onnxlint-ep reached assert_deployable
    # the failure message is the rendered findings with the fix
    assert "error OL204 HannWindow does not exist at ai.onnx opset 13" in out
    # the onnxlint summary section lists every checked model under its test id
    section = out[out.index("= onnxlint =") :]
    lines = section.splitlines()
    assert any(
        line.startswith("test_models.py::test_fixture_lints_without_failing: model: 1 error")
        for line in lines
    )
    assert any(
        line.startswith("test_models.py::test_helper_uses_session_ep: model: no findings [cpu]")
        for line in lines
    )
    assert any("main/win (HannWindow): error OL204" in line for line in lines)
    assert any(
        line.startswith("onnxlint: 3 models checked: 2 errors, 2 warnings") for line in lines
    )


def _inprocess(pytester: pytest.Pytester, *args: str, ini: str = "") -> pytest.RunResult:
    pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile(test_models=TESTS)
    return pytester.runpytest_inprocess("-q", "-s", "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize(
    ("args", "ini", "expected"),
    [
        ((), "onnxlint_ep = openvino cpu\n", "EPS ['openvino-cpu', 'cpu']"),
        (("--onnxlint-ep", "cpu"), "onnxlint_ep = openvino\n", "EPS ['cpu']"),
        (("--onnxlint-ep", "cpu,openvino"), "", "EPS ['cpu', 'openvino-cpu']"),
    ],
)
def test_ep_from_option_or_ini(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, expected: str
) -> None:
    res = _inprocess(pytester, "-k", "session_ep", *args, ini=ini)
    assert res.ret == 0, res.stdout.str()
    assert expected in res.stdout.str()


def test_no_summary_option_and_help(pytester: pytest.Pytester) -> None:
    res = _inprocess(pytester, "-k", "session_ep", "--onnxlint-ep", "cpu", "--onnxlint-no-summary")
    assert res.ret == 0
    assert "= onnxlint =" not in res.stdout.str()
    helped = _inprocess(pytester, "--help")
    assert "--onnxlint-ep=EP" in helped.stdout.str()
    assert "onnxlint_ep" in helped.stdout.str()


def test_inner_run_does_not_leak_into_this_session(pytester: pytest.Pytester) -> None:
    from onnxlint import testing

    before = (testing.SESSION_EPS, testing.CHECKED)
    _inprocess(pytester, "--onnxlint-ep", "cpu")
    assert before == (testing.SESSION_EPS, testing.CHECKED)


@pytest.mark.parametrize(
    ("args", "ini"), [(("--onnxlint-ep", "qnx"), ""), ((), "onnxlint_ep = cpu qnx\n")]
)
def test_unknown_ep_is_a_usage_error_at_start_up(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str
) -> None:
    res = _inprocess(pytester, *args, ini=ini)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = res.stderr.str()
    assert "unknown execution provider 'qnx'" in err and "did you mean 'qnn'" in err
    assert "Traceback" not in err + res.stdout.str()
    assert "passed" not in res.stdout.str()  # no test ran


def test_progress_notes_reach_the_terminal_with_verbose(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_notes="from onnxlint import progress\n\n"
        "def test_long_work():\n    progress.note('exporting Net with dynamo at opset 18')\n"
    )
    loud = pytester.runpytest_inprocess("-v", "-p", "no:cacheprovider")
    assert "onnxlint: exporting Net with dynamo at opset 18" in loud.stdout.str()
    quiet = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    assert "exporting Net" not in quiet.stdout.str() and quiet.ret == 0
