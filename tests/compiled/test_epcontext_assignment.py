"""EPContext nodes belong to the EP that compiled them: no 'runs nowhere' or 'accelerator unused'."""

from __future__ import annotations

import pytest

import onnxlint

from .helpers import epcontext_model


@pytest.mark.parametrize(
    ("source", "ep", "expect_unrun"),
    [
        ("QNNExecutionProvider", "qnn", False),
        ("QNN", "qnn", False),
        ("OpenVINOExecutionProvider", "qnn", True),  # compiled for another EP: nothing runs it
    ],
)
def test_epcontext_is_claimed_by_its_source_ep(source: str, ep: str, expect_unrun: bool) -> None:
    model = epcontext_model([(1, b"blob", 1)], source=source)
    report = onnxlint.lint(model, eps=[ep], config={"select": ["OL508", "OL604", "OL501", "OL505"]})
    codes = {d.code for d in report.diagnostics}
    assert ("OL508" in codes) is expect_unrun, onnxlint.render(report)
    assert "OL604" not in codes or expect_unrun
    if not expect_unrun:
        assert codes == set(), onnxlint.render(report)
