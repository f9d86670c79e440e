"""onnxlint.testing.assert_deployable: the assertion message is the rendered findings."""

from __future__ import annotations

from pathlib import Path

import pytest

import onnxlint
from onnxlint import testing
from onnxlint.report import LintError

from .conftest import BAD_TEXT, GOOD_TEXT, WARN_TEXT, parse, write_model

#: rules with known findings in these models; other families must not change the outcome
ONLY = {"select": ["OL105", "OL204"]}


@pytest.mark.parametrize(
    ("text", "fail_on", "fails"),
    [
        (GOOD_TEXT, "error", False),
        (GOOD_TEXT, "hint", False),
        (WARN_TEXT, "error", False),
        (WARN_TEXT, "warning", True),
        (BAD_TEXT, "error", True),
        (BAD_TEXT, "warning", True),
    ],
)
def test_fail_on_levels(text: str, fail_on: str, fails: bool) -> None:
    model = parse(text)
    if fails:
        with pytest.raises(AssertionError):
            testing.assert_deployable(model, ep="cpu", fail_on=fail_on, config=ONLY)
    else:
        report = testing.assert_deployable(model, ep="cpu", fail_on=fail_on, config=ONLY)
        assert report.eps == ["cpu"]


def test_message_names_node_reason_and_fix(tmp_path: Path) -> None:
    path = write_model(tmp_path, "bad.onnxtxt", BAD_TEXT)
    with pytest.raises(LintError) as info:
        testing.assert_deployable(path, ep="qnn", config=ONLY)
    message = str(info.value)
    lines = message.splitlines()
    assert lines[0].startswith(f"{path} is not deployable on ")
    assert "fail_on=error" in lines[0]
    # node, code, reason and fix, as render_plain writes them
    assert any("main/win (HannWindow): error OL204" in line for line in lines)
    assert any("introduced in opset 17" in line for line in lines)
    assert any(line.startswith("    fix: re-export with opset_version=17") for line in lines)
    # below the threshold: the warning is not in the message
    assert "OL105" not in message


def test_accepts_path_bytes_proto_and_report(tmp_path: Path) -> None:
    path = write_model(tmp_path, "good.onnx", GOOD_TEXT)
    for model in (path, str(path), path.read_bytes(), parse(GOOD_TEXT)):
        assert testing.assert_deployable(model, ep="cpu", config=ONLY).fatal is False
    report = onnxlint.lint(parse(BAD_TEXT), eps=["cpu"], config=ONLY)
    with pytest.raises(AssertionError, match="OL204"):
        testing.assert_deployable(report)


def test_unloadable_model_fails_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="not deployable"):
        testing.assert_deployable(tmp_path / "missing.onnx", ep="cpu")


def test_default_ep_is_qnn_unless_the_session_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testing, "SESSION_EPS", [])
    # profiles resolve "qnn" to the QNN HTP profile
    assert testing.assert_deployable(parse(GOOD_TEXT), config=ONLY).eps[0].startswith("qnn")
    monkeypatch.setattr(testing, "SESSION_EPS", ["openvino", "cpu"])
    report = testing.assert_deployable(parse(GOOD_TEXT), config=ONLY)
    assert len(report.eps) == 2
    # an explicit ep always wins over the session option
    assert testing.assert_deployable(parse(GOOD_TEXT), ep="cpu", config=ONLY).eps == ["cpu"]


def test_config_is_discovered_from_the_model_folder(tmp_path: Path) -> None:
    (tmp_path / "onnxlint.toml").write_text('ignore = ["OL204", "OL101"]\n')
    path = write_model(tmp_path, "bad.onnxtxt", BAD_TEXT)
    testing.assert_deployable(path, ep="cpu")  # the repo's config silences the error


def test_checks_are_recorded_for_the_session_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testing, "CHECKED", [])
    testing.assert_deployable(parse(GOOD_TEXT), ep="cpu", config=ONLY)
    assert len(testing.CHECKED) == 1
    assert testing.CHECKED[0].test.endswith(
        "test_assert_deployable.py::test_checks_are_recorded_for_the_session_summary"
    )


def test_bad_fail_on_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown severity"):
        testing.assert_deployable(parse(GOOD_TEXT), ep="cpu", fail_on="fatal")


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Confirmation results are cached on disk: keep them out of the user's cache."""
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.slow
def test_confirm_creates_a_real_session_on_cpu(private_cache: Path) -> None:
    report = testing.assert_deployable(
        parse(GOOD_TEXT), ep="cpu", confirm=True, config={"select": ["OL105", "OL204", "OL9"]}
    )
    # the confirmation stage ran: its summary finding is in the report
    assert "OL905" in {d.code for d in report.diagnostics}


@pytest.mark.slow
def test_confirm_reports_a_failing_session(private_cache: Path) -> None:
    # only the confirmation rules: the real session notices that ORT does not load opset 30
    too_new = GOOD_TEXT.replace('"" : 17', '"" : 30')
    with pytest.raises(AssertionError, match="OL903"):
        testing.assert_deployable(
            parse(too_new), ep="cpu", confirm=True, config={"select": ["OL9"]}
        )
    # without confirm the same selection finds nothing
    testing.assert_deployable(parse(too_new), ep="cpu", config={"select": ["OL9"]})


@pytest.mark.slow
def test_confirm_relints_a_report_from_its_file(tmp_path: Path, private_cache: Path) -> None:
    path = write_model(tmp_path, "good.onnx", GOOD_TEXT)
    report = onnxlint.lint(path, eps=["cpu"], config=ONLY)
    assert "OL905" not in {d.code for d in report.diagnostics}
    confirmed = testing.assert_deployable(
        report, confirm=True, config={"select": ["OL105", "OL204", "OL9"]}
    )
    assert "OL905" in {d.code for d in confirmed.diagnostics}
    assert confirmed.path == report.path
