"""The what-ifs run only when a finding has a remedy they predict (issue 19): an EP's
refusal caused by dynamic dims. Otherwise ``onnxlint.what_if`` (and the cause grouping
it imports) is neither imported nor called; the report's what-ifs are empty either way.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from onnxlint import engine, what_if
from tests.conftest import parse
from tests.performance.test_stages import MODEL as DYNAMIC

STATIC = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 4] x) => (float[1, 4] y) {
    y = Relu(x)
}
"""


@pytest.mark.parametrize("text, calls", [(STATIC, 0), (DYNAMIC, 1)], ids=["static", "dynamic"])
def test_the_what_ifs_are_asked_only_with_a_remedy_to_predict(
    text: str, calls: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []
    real = what_if.what_ifs

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(what_if, "what_ifs", counted)
    report = engine.lint(parse(text), eps=["qnn"], partition_summary=True)
    assert report.partitions  # the summary the what-ifs would read was built
    assert len(made) == calls
    assert bool(report.what_ifs) == bool(calls)


def test_a_static_lint_does_not_import_the_what_if_module() -> None:
    code = (
        "import sys, onnx; from onnxlint import engine; "
        f"engine.lint(onnx.parser.parse_model({STATIC!r}), eps=['qnn'], partition_summary=True); "
        "print('onnxlint.what_if' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


def test_eps_refused_for_the_same_dims_share_one_pinned_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shape fix (ORT's symbolic inference: seconds on a 10k-node model) runs once per
    set of pinned dims, not once per EP; each EP's what-if still comes from its own lint."""
    from onnxlint import profiles
    from onnxlint.fixes import shapes as fixes

    made: list[dict[str, int]] = []
    real = fixes.fix_shapes

    def counted(model: Any, dims: dict[str, int], *args: Any, **kwargs: Any) -> Any:
        made.append(dict(dims))
        return real(model, dims, *args, **kwargs)

    monkeypatch.setattr(fixes, "fix_shapes", counted)
    eps = [p.id for p in profiles.list_profiles()]
    report = engine.lint(parse(DYNAMIC), eps=eps, partition_summary=True)
    asked = [w for w in report.what_ifs if w.error is None]
    assert len(asked) >= 2  # several EPs refuse the same dynamic dim
    pins = {tuple(sorted(w.dims.items())) for w in asked}
    assert len(made) == len(pins)
    assert {tuple(sorted(m.items())) for m in made} == pins
