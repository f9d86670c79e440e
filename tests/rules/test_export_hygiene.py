"""Case table for the export-hygiene rules (OL8xx): foldable chains, reported once each."""

from __future__ import annotations

import pytest

import onnxlint

from ..conftest import parse

H = '<ir_version: 8, opset_import: ["" : 17]>\n'

STATIC_SHAPE_CHAIN = (
    H
    + """g (float[2, 8, 64] x) => (float[2, 8, 4, 16] y) {
    [shape] s = Shape(x)
    i0 = Constant<value = int64 {0}>()
    i1 = Constant<value = int64 {1}>()
    [g0] b = Gather(s, i0)
    [g1] q = Gather(s, i1)
    [u0] bu = Unsqueeze(b, i0)
    [u1] qu = Unsqueeze(q, i0)
    heads = Constant<value = int64[2] {4, 16}>()
    [cat] shp = Concat<axis=0>(bu, qu, heads)
    [r] y = Reshape(x, shp)
}"""
)
# the same chain over dynamic dims is not foldable: nothing to report here (OL301 says it)
DYNAMIC_SHAPE_CHAIN = STATIC_SHAPE_CHAIN.replace("float[2, 8, 64] x", "float[batch, seq, 64] x")
DYNAMIC_SHAPE_CHAIN = DYNAMIC_SHAPE_CHAIN.replace(
    "float[2, 8, 4, 16] y", "float[batch, seq, 4, 16] y"
)
# ... but a Gather of its static dim is, even when the other dims are dynamic
PARTLY_STATIC = (
    H
    + """g (float[batch, seq, 64] x) => (float[batch, seq, 4, 16] y) {
    [shape] s = Shape(x)
    i0 = Constant<value = int64[2] {0, 1}>()
    i2 = Constant<value = int64[1] {2}>()
    [lead] bs = Gather(s, i0)
    [last] d = Gather(s, i2)
    four = Constant<value = int64[1] {4}>()
    [div] h = Div(d, four)
    [cat] shp = Concat<axis=0>(bs, four, h)
    [r] y = Reshape(x, shp)
}"""
)
TWO_CHAINS = (
    H
    + """g (float[2, 3] x) => (float[2, 3] y, float[6] z) {
    [shape] s = Shape(x)
    [prod] n = ReduceProd<keepdims=1>(s)
    [flat] z = Reshape(x, n)
    c = Constant<value = int64[3] {1, 2, 3}>()
    [cast] f = Cast<to = 1>(c)
    [add] y = Add(x, f)
}"""
)
CONSTANT_CAST = (
    H
    + """g (float[4] x) => (float[4] y) {
    c = Constant<value = int64[4] {1, 2, 3, 4}>()
    [cast] f = Cast<to = 1>(c)
    [y] y = Add(x, f)
}"""
)
CONSTANT_CHAIN = (
    H
    + """g (float[2, 2] x) => (float[2, 2] y) <float[2, 2] w = {1.0, 2.0, 3.0, 4.0}> {
    [t] wt = Transpose(w)
    two = Constant<value = float {2.0}>()
    [scale] ws = Mul(wt, two)
    [y] y = MatMul(x, ws)
}"""
)
# TorchScript's copies of shared weights: one Identity per weight, all foldable alike
IDENTITY_COPIES = (
    H
    + """g (float[4] x) => (float[4] y) <float[4] a = {1.0, 2.0, 3.0, 4.0}, float[4] b = {1.0, 1.0, 1.0, 1.0}> {
    [id0] a2 = Identity(a)
    [id1] b2 = Identity(b)
    [id2] a3 = Identity(a)
    [cast] c = Cast<to = 1>(a)
    s = Add(x, a2)
    t = Mul(s, b2)
    u = Sub(t, a3)
    y = Add(u, c)
}"""
)
QDQ_WEIGHT = (
    H
    + """g (float[1, 4] x) => (float[1, 4] y)
    <int8[4, 4] wq = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, float ws = {0.5}, int8 wz = {0}> {
    [dq] w = DequantizeLinear(wq, ws, wz)
    [mm] y = MatMul(x, w)
}"""
)
FILL = (
    H
    + """g (float[2, 4] x) => (float[2, 4] y) {
    s = Constant<value = int64[2] {2, 4}>()
    [fill] z = ConstantOfShape<value = float[1] {1.0}>(s)
    [y] y = Add(x, z)
}"""
)
LOOP_BODY = (
    H
    + """g (float[4] x) => (float[4] y) {
    n = Constant<value = int64 {2}>()
    t = Constant<value = bool {1}>()
    [loop] y = Loop(n, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}"""
)

SHAPE_FOLD = "the value is known at export time, fold it into a constant"

CASES = [
    # (id, selected codes, model text, expected [(code, where, message)])
    (
        "static-shape-gather-chain",
        "OL8",
        STATIC_SHAPE_CHAIN,
        [
            (
                "OL801",
                "main/shape",
                "a chain of 6 nodes (Shape -> Gather (x2) -> Unsqueeze (x2) -> Concat) computes "
                "'shp' from static shapes at run time; " + SHAPE_FOLD,
            )
        ],
    ),
    ("dynamic-shape-gather-chain", "OL8", DYNAMIC_SHAPE_CHAIN, []),
    (
        "partly-static-shape",
        "OL8",
        PARTLY_STATIC,
        [
            (
                "OL801",
                "main/last",
                "a chain of 2 nodes (Gather -> Div) computes 'h' from static shapes at run time; "
                + SHAPE_FOLD,
            )
        ],
    ),
    (
        "two-chains-reported-separately",
        "OL8",
        TWO_CHAINS,
        [
            (
                "OL801",
                "main/shape",
                "a chain of 2 nodes (Shape -> ReduceProd) computes 'n' from static shapes at "
                "run time; " + SHAPE_FOLD,
            ),
            (
                "OL802",
                "main/cast",
                "a chain of 1 node (Cast) computes 'f' from constants only; fold it into an "
                "initializer",
            ),
        ],
    ),
    (
        "constant-cast",
        "OL802",
        CONSTANT_CAST,
        [
            (
                "OL802",
                "main/cast",
                "a chain of 1 node (Cast) computes 'f' from constants only; fold it into an "
                "initializer",
            )
        ],
    ),
    (
        "constant-transpose-mul",
        "OL8",
        CONSTANT_CHAIN,
        [
            (
                "OL802",
                "main/t",
                "a chain of 2 nodes (Transpose -> Mul) computes 'ws' from constants only; fold "
                "it into an initializer",
            )
        ],
    ),
    (
        "identity-copies-are-one-finding",
        "OL802",
        IDENTITY_COPIES,
        [
            (
                "OL802",
                "main/id0",
                "3 Identity nodes each compute one value from constants only ('a2', 'b2', "
                "'a3'); fold them into initializers",
            ),
            (
                "OL802",
                "main/cast",
                "a chain of 1 node (Cast) computes 'c' from constants only; fold it into an "
                "initializer",
            ),
        ],
    ),
    ("qdq-weight-kept-on-purpose", "OL8", QDQ_WEIGHT, []),
    ("constant-of-shape-fill", "OL8", FILL, []),
    ("loop-body-inputs-are-not-constants", "OL8", LOOP_BODY, []),
    # nothing reads the cast: dead code is OL107's finding, not a folding opportunity
    (
        "dead-chain",
        "OL8",
        CONSTANT_CAST.replace("[y] y = Add(x, f)", "[y] y = Relu(x)"),
        [],
    ),
]


def _where(d: onnxlint.Diagnostic) -> str:
    return d.location.node_path or d.location.tensor or d.location.graph


@pytest.mark.parametrize(
    ("case_id", "select", "text", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_export_hygiene_rule(case_id: str, select: str, text: str, expected: list) -> None:
    report = onnxlint.lint(parse(text), config={"select": [select]})
    got = [(d.code, _where(d), d.message) for d in report.diagnostics]
    assert got == expected


def test_chain_lists_its_other_nodes_and_how_to_fold() -> None:
    report = onnxlint.lint(parse(STATIC_SHAPE_CHAIN), config={"select": ["OL801"]})
    (diag,) = report.diagnostics
    assert diag.args["count"] == 6
    assert [r.node_path for r in diag.related] == [
        "main/g0",
        "main/g1",
        "main/u0",
        "main/u1",
        "main/cat",
    ]
    assert diag.fix is not None and "onnxscript.optimizer.optimize" in diag.fix.title


def test_alike_one_node_chains_link_to_each_other() -> None:
    report = onnxlint.lint(parse(IDENTITY_COPIES), config={"select": ["OL802"]})
    alike = [d for d in report.diagnostics if d.message_id == "alike"]
    assert len(alike) == 1
    assert alike[0].args["count"] == 3 and alike[0].args["op"] == "Identity"
    assert [r.node_path for r in alike[0].related] == ["main/id1", "main/id2"]
