"""Work a lint with every EP did twice on the 100k-node graph (issue 19), now done once:
the session types' work copy and table when the first inference pass is their answer,
the topological order that the dataflow and the exported level graph both walk, and
``dataclasses.replace`` per finding. Counted and compared with the work done in full,
never timed."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import onnx
import pytest

from onnxlint import index, tensors
from onnxlint.analyses import session_types
from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.dataflow import Dataflow
from onnxlint.analyses.shapes import Shapes, _infer_passes, collect_value_types
from onnxlint.diagnostics import Category, Cause, Diagnostic, Location, Severity, with_changes
from tests.conftest import parse
from tests.performance.test_big_inference import _context, _models
from tests.performance.test_model_copies import _weighted_model


def _in_full(model: onnx.ModelProto, first: onnx.ModelProto) -> Any:
    """The session types computed with the work copy, whatever the first pass says."""
    real = session_types._first_pass_is_answer
    session_types._first_pass_is_answer = lambda *_: False  # type: ignore[assignment]
    try:
        return session_types.infer_session_types_without_weights(model, _copy(first))
    finally:
        session_types._first_pass_is_answer = real  # type: ignore[assignment]


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    return onnx.ModelProto.FromString(model.SerializeToString())


@pytest.mark.parametrize("name", [*_models(), "weighted"])
def test_session_types_take_the_first_pass_without_a_work_copy_where_it_is_the_answer(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _weighted_model() if name == "weighted" else _models()[name]
    inferred, _, _, first = _infer_passes(model, keep_unpropagated=True)
    first = first if first is not None else inferred
    if first is model:
        pytest.skip("inference could not run: the session types infer for themselves")
    quick = session_types._first_pass_is_answer(model, first)
    # the models with a stand-in or a Shape of a static tensor need the work copy
    assert quick == (name == "dynamic")
    copies: list[int] = []
    real = tensors.dataless_copy

    def counted(*args: Any, **kwargs: Any) -> Any:
        copies.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(tensors, "dataless_copy", counted)
    given = _copy(first)
    got, left = session_types.infer_session_types_without_weights(model, given)
    assert len(copies) == (0 if quick else 1)
    if quick:
        assert got is given  # the first pass itself: no work copy, no pass run again
    full, full_left = _in_full(model, first)
    assert got.SerializeToString() == full.SerializeToString()
    assert list(left) == list(full_left)
    assert all(left[k] is full_left[k] for k in left)


def test_a_table_of_some_values_says_what_the_whole_table_says() -> None:
    model = _weighted_model()
    inferred, _, _, _ = _infer_passes(model, keep_unpropagated=False)
    whole = collect_value_types(inferred)
    some = {"x", "s", "w", "m", "nothing"}
    assert collect_value_types(inferred, only=some) == {k: whole[k] for k in some if k in whole}
    assert collect_value_types(inferred, only=set()) == {}


def test_the_dataflow_and_the_exported_level_share_one_topological_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = _context(_models()["dynamic"], ["qnn"])
    walks: list[str] = []
    real = index._topological_order

    def counted(g: index.GraphRef, nodes: Any) -> list[index.NodeRef]:
        walks.append(g.path)
        return real(g, nodes)

    monkeypatch.setattr(index, "_topological_order", counted)
    ctx.analysis(Dataflow)
    assert ctx.analysis(Assignment).exported is not None
    assert walks == [g.path for g in ctx.index.graphs]  # once per graph, not twice
    main = ctx.index.main
    # other nodes are ordered anew, and each caller gets a list of its own
    assert index.topological_order(main, main.nodes[1:]) == real(main, main.nodes[1:])
    order = index.topological_order(main, main.nodes)
    order.reverse()
    assert index.topological_order(main, main.nodes) == real(main, main.nodes)


def test_a_finding_changed_for_its_report_is_what_replace_makes() -> None:
    d = Diagnostic(
        code="OL601",
        rule="ep-unsupported-op",
        category=Category.EP_SUPPORT,
        severity=Severity.WARNING,
        message="m",
        location=Location(graph="main", node_name="n", node_index=3),
        args={"a": 1},
        ep="QNNExecutionProvider",
        cause=Cause(kind="dynamic-dims", subject=("N",)),
    )
    for changes in (
        {"path": "m.onnx"},
        {"path": "m.onnx", "ep": "qnn-htp"},
        {"severity": Severity.ERROR, "ep": "qnn-htp"},
    ):
        got = with_changes(d, changes)
        assert got == dataclasses.replace(d, **changes)  # type: ignore[arg-type]
        assert all(
            getattr(got, f.name) is getattr(d, f.name)
            for f in dataclasses.fields(d)
            if f.name not in changes
        )


def test_a_lint_finds_the_same_with_the_first_pass_as_the_session_types() -> None:
    model = parse(_PLAIN_DYNAMIC)
    ctx = _context(model, ["qnn", "openvino"])
    ctx.analysis(Shapes)
    quick = ctx.analysis(Assignment).exported
    slow_ctx = _context(parse(_PLAIN_DYNAMIC), ["qnn", "openvino"])
    real = session_types._first_pass_is_answer
    try:
        session_types._first_pass_is_answer = lambda *_: False  # type: ignore[assignment]
        slow = slow_ctx.analysis(Assignment).exported
    finally:
        session_types._first_pass_is_answer = real  # type: ignore[assignment]
    assert [(na.node.path, na.verdicts, na.first_claimer) for na in quick] == [
        (na.node.path, na.verdicts, na.first_claimer) for na in slow
    ]


#: a Shape of a dynamic input through Slice and Concat (ONNX's propagation follows it, ORT's
#: session types do not): the first pass is the session types' answer
_PLAIN_DYNAMIC = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[P,Q] y) {
    s = Shape(x)
    st = Constant<value = int64[1] {0}>()
    en = Constant<value = int64[1] {1}>()
    h = Slice(s, st, en)
    four = Constant<value = int64[1] {4}>()
    c = Concat<axis = 0>(h, four)
    r = Relu(x)
    y = Reshape(r, c)
}
"""


#: two nodes every accelerator EP here refuses (Hardmax), between nodes they run
_REFUSED = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4,4] x) => (float[2,4,4] y) {
    r = Relu(x)
    a = Hardmax(r)
    b = Hardmax(a)
    y = Relu(b)
}
"""


def test_a_node_refused_by_many_eps_is_asked_once_whether_folding_makes_it_moot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from onnxlint.analyses import dataflow
    from onnxlint.config import Config
    from onnxlint.engine import lint

    asked: list[str] = []
    real = dataflow.Dataflow.kind

    def kind(self: Any, name: str, graph: Any) -> Any:
        if sys._getframe(1).f_globals.get("__name__") == "onnxlint.rules.ep_support":
            asked.append(name)
        return real(self, name, graph)

    monkeypatch.setattr(dataflow.Dataflow, "kind", kind)
    eps = ["qnn", "openvino", "coreml", "xnnpack", "cuda"]
    report = lint(parse(_REFUSED), eps=eps, config=Config(), what_if=False)
    refused = [d for d in report.diagnostics if d.code == "OL501"]
    assert len({d.ep for d in refused}) == len(eps)  # each node refused by every EP
    assert sorted(asked) == ["a", "b"]  # each node's outputs read once
