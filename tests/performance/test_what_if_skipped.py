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

#: EPs that all refuse the DYNAMIC model's nodes for its dynamic dim: each of them, in
#: turn, is handed the nodes the ones before it refused, and has a cause to predict for
STATIC_SHAPE_EPS = ("qnn-htp", "nnapi", "vitisai")

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
    from onnxlint.fixes import shapes as fixes

    made: list[dict[str, int]] = []
    real = fixes.fix_shapes

    def counted(model: Any, dims: dict[str, int], *args: Any, **kwargs: Any) -> Any:
        made.append(dict(dims))
        return real(model, dims, *args, **kwargs)

    monkeypatch.setattr(fixes, "fix_shapes", counted)
    report = engine.lint(parse(DYNAMIC), eps=list(STATIC_SHAPE_EPS), partition_summary=True)
    asked = [w for w in report.what_ifs if w.error is None]
    assert len(asked) >= 2  # several EPs refuse the same dynamic dim
    pins = {tuple(sorted(w.dims.items())) for w in asked}
    assert len(made) == len(pins)
    assert {tuple(sorted(m.items())) for m in made} == pins


def _what_if_lint(monkeypatch: pytest.MonkeyPatch, share: bool) -> tuple[Any, int]:
    """The DYNAMIC model with three EPs that need static shapes, and how many times ONNX
    shape inference (the Shapes analysis) ran; ``share=False``: the inner lints share
    nothing (the behaviour before ``context.SharedModel``)."""
    from onnxlint.analyses import shapes
    from onnxlint.context import SharedModel

    built: list[object] = []
    real_init = shapes.Shapes.__init__

    def counted(self: Any, ctx: Any) -> None:
        built.append(self)
        real_init(self, ctx)

    monkeypatch.setattr(shapes.Shapes, "__init__", counted)
    if not share:
        monkeypatch.setattr(SharedModel, "accepts", lambda self, config: False)
    report = engine.lint(parse(DYNAMIC), eps=list(STATIC_SHAPE_EPS), partition_summary=True)
    return report, len(built)


def test_the_inner_lints_of_one_pinned_model_infer_its_shapes_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every EP's what-if lints the pinned copy for that EP alone; the analyses that do
    not depend on the EP (shape inference, constness, the exported graph) are computed by
    the first of those lints and read by the others, and the predictions are the ones
    unshared lints make."""
    shared, inferred = _what_if_lint(monkeypatch, share=True)
    monkeypatch.undo()
    alone, inferred_alone = _what_if_lint(monkeypatch, share=False)
    asked = [w for w in shared.what_ifs if w.error is None]
    pins = {tuple(sorted(w.dims.items())) for w in asked}
    assert len(asked) >= 2
    # the lint itself, then per pinned copy the shape fix's size folding and its inner
    # lints (one for all of its EPs, against one per EP unshared)
    assert inferred == 1 + 2 * len(pins)
    assert inferred_alone == 1 + len(pins) + len(asked)
    assert [(w.ep, w.dims, w.before, w.after, w.remaining) for w in shared.what_ifs] == [
        (w.ep, w.dims, w.before, w.after, w.remaining) for w in alone.what_ifs
    ]


def test_a_shared_model_serves_one_configuration_only() -> None:
    from onnxlint.config import Config
    from onnxlint.context import SharedModel
    from onnxlint.loader import load

    shared = SharedModel(load(parse(STATIC)))
    first = Config(select=("shapes",))
    assert shared.accepts(first)
    assert shared.accepts(first.merged(eps=("qnn",)))  # the EPs are what may differ
    assert not shared.accepts(first.merged(select=("ep-support",)))
    report = engine.lint(
        b"", eps=["qnn"], config=first.merged(select=("ALL",)), shared=shared, what_if=False
    )
    assert report.fatal  # not the shared model: the source given, read afresh


def test_an_ep_without_a_reported_dynamic_dims_cause_gets_no_what_if() -> None:
    """With every shipped EP in priority order, the first EPs take the nodes: a later EP
    that needs static shapes has only its graph input's finding, which is no reported
    cause, so no what-if is predicted for it (nobody would see it)."""
    from onnxlint import profiles
    from onnxlint.causes import dynamic_dims_causes, group

    eps = [p.id for p in profiles.list_profiles()]
    report = engine.lint(parse(DYNAMIC), eps=eps, partition_summary=True)
    lone = {d.ep for d in report.diagnostics if d.cause and d.cause.kind == "dynamic-dims"}
    shown = {g.ep for g in group(report) if g.cause.kind == "dynamic-dims"}
    assert lone - shown  # EPs with a dynamic-dims finding but no cause to show it with
    assert set(dynamic_dims_causes(report.diagnostics)) == shown
    assert {w.ep for w in report.what_ifs} == shown
