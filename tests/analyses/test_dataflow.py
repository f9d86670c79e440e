"""The dataflow analysis: constness of every value, into bodies and functions, with origins."""

from __future__ import annotations

import time

import onnx
import pytest

from onnxlint.analyses.dataflow import Constness, Dataflow, ValueFacts, _join
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.index import ModelIndex, topological_order
from onnxlint.loader import load

from ..conftest import parse

C, S, D = Constness.CONSTANT, Constness.SHAPE_DERIVED, Constness.DATA_DEPENDENT
H = '<ir_version: 8, opset_import: ["" : 17]>\n'


def flow(text: str | onnx.ModelProto) -> tuple[Dataflow, ModelIndex]:
    model = parse(text) if isinstance(text, str) else text
    ctx = LintContext(loaded=load(model), index=ModelIndex(model), config=Config())
    return ctx.analysis(Dataflow), ctx.index


MAIN = (
    H
    + """g (float[batch, 8] x, float[8] w_in) => (float[batch, 8] y)
    <float[8] w = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}, float[8] w_in = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}> {
    [c] k = Constant<value = int64[1] {2}>()
    [cast] kf = Cast<to = 1>(k)
    [scaled] ws = Mul(w, kf)
    [shape] s = Shape(x)
    [z] zero = Constant<value = int64[1] {0}>()
    [g1] d1 = Gather<axis = 0>(s, zero)
    [i1] one = Constant<value = int64[1] {1}>()
    [g0] d0 = Gather<axis = 0>(s, one)
    [sum] r = ReduceSum<keepdims = 0>(x)
    [gt] cond = Greater(r, kf)
    [rnd] noise = RandomNormalLike(x)
    [add] y0 = Add(x, ws)
    [add2] y1 = Add(y0, w_in)
    [nz] nzv = NonZero(x)
    [nzs] nzshape = Shape(nzv)
    [relu] y = Relu(y1)
}"""
)


@pytest.mark.parametrize(
    ("name", "kind", "foldable", "origin", "value"),
    [
        ("w", C, True, None, None),
        ("w_in", C, True, None, None),  # an initializer listed as an input keeps its value
        ("k", C, True, None, (2,)),
        ("kf", C, True, None, None),
        ("ws", C, True, None, None),
        ("s", S, False, None, ("batch", 8)),
        ("d1", S, False, None, ("batch",)),
        ("d0", S, True, None, (8,)),
        ("r", D, False, "main/sum", None),
        ("cond", D, False, "main/sum", None),
        ("noise", D, False, "main/rnd", None),
        ("y", D, False, "main/add", None),
        ("nzshape", D, False, "main/nz", None),
        ("x", D, False, None, None),
    ],
)
def test_main_graph_kinds(name: str, kind: Constness, foldable: bool, origin, value) -> None:
    df, _ = flow(MAIN)
    assert df.kind(name) is kind
    assert df.foldable(name) is foldable
    got = df.origin(name)
    assert (got.path if got is not None else None) == origin
    if value is not None:
        assert df.value(name) == value


def test_symbols_name_the_dims_a_shape_value_needs() -> None:
    df, _ = flow(MAIN)
    assert df.symbols("s") == {"batch"}
    assert df.symbols("d0") == frozenset()


def test_shape_dependence_starts_at_the_data_dependent_op() -> None:
    df, _ = flow(MAIN)
    assert df.shape_dependent("nzv") and df.shape_origin("nzv").path == "main/nz"
    assert not df.shape_dependent("nzshape")  # a Shape output is a 1-D tensor of known length
    assert not df.shape_dependent("y")


LOOP = (
    H
    + """g (int64 n, float[4] x) => (float[4] y, float[4] z) {
    t = Constant<value = bool {1}>()
    three = Constant<value = int64 {3}>()
    zero = Constant<value = float[4] {0.0, 0.0, 0.0, 0.0}>()
    [dyn] y = Loop(n, t, zero) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        [body_add] vo = Add(v, x)
    }>
    [fixed] z = Loop(three, t, zero) <body = b2 (int64 j, bool c2, float[4] v2) => (bool co2, float[4] vo2) {
        co2 = Identity(c2)
        one = Constant<value = float {1.0}>()
        [count] vo2 = Add(v2, one)
    }>
}"""
)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("v", D),  # carried: starts constant, the body adds the input x
        ("vo", D),
        ("y", D),
        ("i", D),  # the counter of a loop with a runtime trip count
        ("j", S),  # the counter of a fixed loop: no data, but not one value either
        ("v2", C),  # constant start + constant increments: the fixpoint stays constant
        ("z", C),
    ],
)
def test_loop_bodies(name: str, kind: Constness) -> None:
    df, index = flow(LOOP)
    body = next(g for g in index.graphs if name in g.inputs or name in g.producers)
    assert df.kind(name, body) is kind


def test_if_output_shape_depends_on_a_data_dependent_condition() -> None:
    df, _ = flow(
        H
        + """g (float[4] x) => (float[N] y) {
    s = ReduceSum<keepdims=0>(x)
    zero = Constant<value = float {0.0}>()
    c = Greater(s, zero)
    [if] y = If(c) <then_branch = t () => (float[4] a) { a = Relu(x) },
                    else_branch = e () => (float[2] b) { b = Constant<value = float[2] {1.0, 2.0}>() }>
}"""
    )
    assert df.kind("y") is D
    assert df.shape_dependent("y") and df.shape_origin("y").path == "main/if"


def test_function_inputs_join_their_call_sites() -> None:
    model = parse(
        '<ir_version: 8, opset_import: ["" : 17, "local" : 1]>\n'
        "g (float[4] x) => (float[4] y) {\n"
        " c = Constant<value = float[4] {1.0, 2.0, 3.0, 4.0}>()\n"
        " y = local.Twice(x, c)\n}\n"
        '<domain: "local", opset_import: ["" : 17]>\n'
        "Twice (a, b) => (o) {\n t = Add(b, b)\n o = Add(a, t)\n}"
    )
    df, index = flow(model)
    fn = index.functions[("local", "Twice")]
    assert df.kind("b", fn) is C
    assert df.kind("t", fn) is C
    assert df.kind("a", fn) is D and df.kind("o", fn) is D
    assert df.kind("y") is D


def test_call_sites_are_joined_in_the_index_topological_order() -> None:
    """Of two call sites that pass data-dependent values, the first in ORT's order (the
    index's, which every other analysis walks) names the function input's source. ORT's
    order is a reverse DFS from the leaves: the later of two independent chains first."""
    model = parse(
        '<ir_version: 8, opset_import: ["" : 17, "local" : 1]>\n'
        "g (float[4] x1, float[4] x2) => (float[4] y1, float[4] y2) {\n"
        " y1 = local.Twice(x1)\n"
        " y2 = local.Twice(x2)\n}\n"
        '<domain: "local", opset_import: ["" : 17]>\n'
        "Twice (a) => (o) {\n o = Add(a, a)\n}"
    )
    df, index = flow(model)
    order = [n.node.input[0] for n in topological_order(index.main, index.main.nodes)]
    assert order == ["x2", "x1"]
    fn = index.functions[("local", "Twice")]
    assert df.kind("a", fn) is D
    assert df.source("a", fn) == order[0] == "x2"
    # the file order is not what decides: swapped in the file, the source follows ORT's order
    swapped = onnx.ModelProto()
    swapped.CopyFrom(model)
    first, second = list(swapped.graph.node)
    del swapped.graph.node[:]
    swapped.graph.node.extend([second, first])
    df, index = flow(swapped)
    assert df.source("a", index.functions[("local", "Twice")]) == "x1"


def test_linear_in_model_size() -> None:
    """A 6k-node chain stays fast: a quadratic pass would take minutes here."""
    nodes = []
    prev = "x"
    for i in range(3_000):
        nodes.append(onnx.helper.make_node("Relu", [prev], [f"r{i}"]))
        nodes.append(onnx.helper.make_node("Identity", [f"r{i}"], [f"a{i}"]))
        prev = f"a{i}"
    graph = onnx.helper.make_graph(
        nodes,
        "chain",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 4])],
        [onnx.helper.make_tensor_value_info(prev, onnx.TensorProto.FLOAT, ["batch", 4])],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    start = time.perf_counter()
    df, _ = flow(model)
    assert df.kind(prev) is D
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize(
    "kinds", [(a, b, c) for a in (C, S, D) for b in (C, S, D) for c in (C, S, D)]
)
def test_a_join_takes_the_most_dependent_kind_and_its_first_source(
    kinds: tuple[Constness, Constness, Constness],
) -> None:
    # the join compares kinds by identity; it must order them as Constness does
    parts = [
        ValueFacts(k, source=f"s{i}", symbols=frozenset({f"n{i}"})) for i, k in enumerate(kinds)
    ]
    joined = _join(parts)
    top = max(kinds, key=lambda k: k.value)
    assert joined.kind is top
    first = kinds.index(top)
    assert joined.source == (f"s{first}" if top is D else None)
    expected = {f"n{i}" for i, k in enumerate(kinds) if k is S} if top is S else set()
    assert joined.symbols == expected
