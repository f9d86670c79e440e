"""Case table for the control-flow rules (OL4xx): exact diagnostics per model and EP selection."""

from __future__ import annotations

import pytest

import onnxlint

from ..conftest import light_models, parse

H = '<ir_version: 8, opset_import: ["" : 17]>\n'

LOOP_FROM_INPUT = (
    H
    + """g (int64 n, float[4] x) => (float[4] y) {
    t = Constant<value = bool {1}>()
    [loop] y = Loop(n, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}"""
)
LOOP_FROM_CONSTANT = LOOP_FROM_INPUT.replace("(int64 n, float[4] x)", "(float[4] x)").replace(
    "    t = Constant", "    n = Constant<value = int64 {3}>()\n    t = Constant"
)
WHILE_LOOP = (
    H
    + """g (float[4] x) => (float[4] y) {
    t = Constant<value = bool {1}>()
    [loop] y = Loop(, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        vo = Relu(v)
        s = ReduceSum<keepdims=0>(vo)
        one = Constant<value = float {1.0}>()
        co = Less(s, one)
    }>
}"""
)
LOOP_COND_FROM_INPUT = (
    H
    + """g (bool go, float[4] x) => (float[4] y) {
    n = Constant<value = int64 {3}>()
    [loop] y = Loop(n, go, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}"""
)
LOOP_FROM_SHAPE = (
    H
    + """g (float[batch, 4] x) => (float[4] y) {
    [shape] s = Shape(x)
    i = Constant<value = int64 {0}>()
    [g] n = Gather(s, i)
    t = Constant<value = bool {1}>()
    z = Constant<value = float[4] {0.0, 0.0, 0.0, 0.0}>()
    [loop] y = Loop(n, t, z) <body = b (int64 k, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        vo = Relu(v)
    }>
}"""
)
IF_DATA = (
    H
    + """g (float[4] x) => (float[4] y) {
    [sum] s = ReduceSum<keepdims=0>(x)
    zero = Constant<value = float {0.0}>()
    [gt] c = Greater(s, zero)
    [if] y = If(c) <then_branch = t () => (float[4] a) { a = Relu(x) },
                    else_branch = e () => (float[4] b) { b = Neg(x) }>
}"""
)
IF_CONSTANT = (
    H
    + """g (float[4] x) => (float[4] y) {
    c = Constant<value = bool {1}>()
    [if] y = If(c) <then_branch = t () => (float[4] a) { a = Relu(x) },
                    else_branch = e () => (float[4] b) { b = Neg(x) }>
}"""
)
IF_STATIC_SHAPE = (
    H
    + """g (float[2, 4] x) => (float[2, 4] y) {
    [shape] s = Shape(x)
    i = Constant<value = int64 {1}>()
    [g] d = Gather(s, i)
    four = Constant<value = int64 {4}>()
    [eq] c = Equal(d, four)
    [if] y = If(c) <then_branch = t () => (float[2, 4] a) { a = Relu(x) },
                    else_branch = e () => (float[2, 4] b) { b = Neg(x) }>
}"""
)
IF_DYNAMIC_SHAPE = (
    H
    + """g (float[batch, 4] x) => (float[batch, 4] y) {
    [shape] s = Shape(x)
    i = Constant<value = int64 {0}>()
    [g] d = Gather(s, i)
    one = Constant<value = int64 {1}>()
    [gt] c = Greater(d, one)
    [if] y = If(c) <then_branch = t () => (float[batch, 4] a) { a = Relu(x) },
                    else_branch = e () => (float[batch, 4] b) { b = Neg(x) }>
}"""
)
IF_IN_LOOP_BODY = (
    H
    + """g (float[4] x, bool flag) => (float[4] y) {
    n = Constant<value = int64 {2}>()
    t = Constant<value = bool {1}>()
    [loop] y = Loop(n, t, x) <body = b (int64 i, bool c, float[4] v) => (bool co, float[4] vo) {
        co = Identity(c)
        [inner] vo = If(flag) <then_branch = tt () => (float[4] p) { p = Relu(v) },
                               else_branch = ee () => (float[4] q) { q = Neg(v) }>
    }>
}"""
)
SCAN_STATIC = (
    H
    + """g (float[4] init, float[5, 4] xs) => (float[4] last, float[5, 4] ys) {
    [scan] last, ys = Scan<num_scan_inputs = 1,
        body = b (float[4] acc, float[4] x) => (float[4] acc_out, float[4] y) {
            acc_out = Add(acc, x)
            y = Identity(acc_out)
        }>(init, xs)
}"""
)
SCAN_DYNAMIC = SCAN_STATIC.replace("float[5, 4] xs", "float[steps, 4] xs").replace(
    "float[5, 4] ys", "float[steps, 4] ys"
)
NONZERO_RESHAPE = (
    H
    + """g (float[8] x) => (int64[N] y) {
    [nz] n = NonZero(x)
    flat = Constant<value = int64[1] {-1}>()
    [r] y = Reshape(n, flat)
}"""
)
RESHAPE_TO_NONZERO_SIZE = (
    H
    + """g (float[8] x, float[8] w) => (float[M] y) {
    [nz] n = NonZero(x)
    [sh] s = Shape(n)
    i = Constant<value = int64[1] {1}>()
    [g] k = Gather(s, i)
    [r] y = Reshape(w, k)
}"""
)
NONZERO_OF_CONSTANT = (
    H
    + """g (float[3] x) => (float[3] y) {
    c = Constant<value = float[3] {0.0, 1.0, 2.0}>()
    [nz] n = NonZero(c)
    [cast] f = Cast<to = 1>(n)
    [sum] s = ReduceSum<keepdims=0>(f)
    [add] y = Add(x, s)
}"""
)
TOPK_RUNTIME_K = (
    H + "g (float[8] x, int64[1] k) => (float[K] v, int64[K] i) {\n [topk] v, i = TopK(x, k)\n}"
)
TOPK_CONSTANT_K = (
    H
    + "g (float[8] x) => (float[3] v, int64[3] i) {\n"
    + " k = Constant<value = int64[1] {3}>()\n [topk] v, i = TopK(x, k)\n}"
)
RANGE_RUNTIME = (
    H
    + "g (int64 n) => (int64[N] y) {\n"
    + " z = Constant<value = int64 {0}>()\n o = Constant<value = int64 {1}>()\n"
    + " [range] y = Range(z, n, o)\n}"
)
EXPAND_FROM_SHAPE = (
    H
    + """g (float[batch, 4] x, float[4] b) => (float[batch, 4] y) {
    [shape] s = Shape(x)
    [expand] y = Expand(b, s)
}"""
)
SEQUENCES = (
    H
    + """g (float[2,4] x) => (float[2,4] y) {
    [split] s = SplitToSequence<axis=0>(x)
    [cat] y = ConcatFromSequence<axis=0>(s)
}"""
)

QNN_CF = "; QNNExecutionProvider (HTP) needs static control flow"
QNN_SHAPES = "; QNNExecutionProvider (HTP) needs static shapes"

CASES = [
    # (id, selected codes, eps, model text, expected [(code, where, severity, ep, message)])
    (
        "loop-trip-count-from-input",
        "OL4",
        [],
        LOOP_FROM_INPUT,
        [
            (
                "OL403",
                "main/loop",
                "warning",
                None,
                "Loop trip count 'n' depends on runtime values of graph input 'n'",
            )
        ],
    ),
    (
        "loop-trip-count-from-input-qnn",
        "OL4",
        ["qnn"],
        LOOP_FROM_INPUT,
        [
            (
                "OL403",
                "main/loop",
                "warning",
                "qnn-htp",
                "Loop trip count 'n' depends on runtime values of graph input 'n'" + QNN_CF,
            )
        ],
    ),
    (
        "loop-trip-count-from-input-cpu-only",
        "OL4",
        ["cpu"],
        LOOP_FROM_INPUT,
        [
            (
                "OL403",
                "main/loop",
                "info",
                None,
                "Loop trip count 'n' depends on runtime values of graph input 'n'",
            )
        ],
    ),
    (
        "loop-trip-count-from-constant",
        "OL4",
        [],
        LOOP_FROM_CONSTANT,
        [
            (
                "OL404",
                "main/loop",
                "warning",
                None,
                "Loop runs 3 iterations, fixed before the model runs; unroll it",
            )
        ],
    ),
    (
        "loop-trip-count-from-constant-qnn",
        "OL4",
        ["qnn"],
        LOOP_FROM_CONSTANT,
        [
            (
                "OL404",
                "main/loop",
                "warning",
                "qnn-htp",
                "Loop runs 3 iterations, fixed before the model runs; unroll it" + QNN_CF,
            )
        ],
    ),
    (
        "while-loop",
        "OL4",
        [],
        WHILE_LOOP,
        [
            (
                "OL403",
                "main/loop",
                "warning",
                None,
                "Loop body computes its continue condition 'co' from runtime values of graph "
                "input 'x' via main/loop:body/Relu_0 (Relu) (a while-loop)",
            )
        ],
    ),
    (
        "loop-condition-from-input",
        "OL4",
        [],
        LOOP_COND_FROM_INPUT,
        [
            (
                "OL403",
                "main/loop",
                "warning",
                None,
                "Loop condition 'go' depends on runtime values of graph input 'go'",
            )
        ],
    ),
    (
        "loop-trip-count-from-dynamic-dim",
        "OL403",
        [],
        LOOP_FROM_SHAPE,
        [
            (
                "OL403",
                "main/loop",
                "warning",
                None,
                "Loop trip count 'n' depends on the dynamic dims 'batch'",
            )
        ],
    ),
    (
        "if-on-reducesum",
        "OL4",
        [],
        IF_DATA,
        [
            (
                "OL401",
                "main/if",
                "warning",
                None,
                "If condition 'c' depends on runtime values of graph input 'x' via main/sum (ReduceSum)",
            )
        ],
    ),
    (
        "if-on-reducesum-qnn-and-cuda",
        "OL4",
        ["qnn", "cuda"],
        IF_DATA,
        [
            (
                "OL401",
                "main/if",
                "warning",
                "qnn-htp",
                "If condition 'c' depends on runtime values of graph input 'x' via main/sum "
                "(ReduceSum)" + QNN_CF,
            )
        ],
    ),
    (
        "if-on-constant",
        "OL4",
        ["qnn"],
        IF_CONSTANT,
        [
            (
                "OL402",
                "main/if",
                "warning",
                None,
                "If condition 'c' is known before the model runs (constant); fold the branch "
                "away before deployment",
            )
        ],
    ),
    (
        "if-on-static-shape",
        "OL4",
        [],
        IF_STATIC_SHAPE,
        [
            (
                "OL402",
                "main/if",
                "warning",
                None,
                "If condition 'c' is known before the model runs (from static shapes); fold "
                "the branch away before deployment",
            )
        ],
    ),
    (
        "if-on-dynamic-dim",
        "OL4",
        [],
        IF_DYNAMIC_SHAPE,
        [
            (
                "OL401",
                "main/if",
                "warning",
                None,
                "If condition 'c' depends on the dynamic dims 'batch'",
            )
        ],
    ),
    (
        "if-on-dynamic-dim-assumed-at-deployment",
        "OL4",
        [],
        IF_DYNAMIC_SHAPE,
        [
            (
                "OL402",
                "main/if",
                "warning",
                None,
                "If condition 'c' is known before the model runs (from static shapes); fold "
                "the branch away before deployment",
            )
        ],
    ),
    (
        "if-inside-loop-body",
        "OL401",
        [],
        IF_IN_LOOP_BODY,
        [
            (
                "OL401",
                "main/loop:body/inner",
                "warning",
                None,
                "If condition 'flag' depends on runtime values of graph input 'flag'",
            )
        ],
    ),
    (
        "scan-static-length",
        "OL4",
        [],
        SCAN_STATIC,
        [
            (
                "OL404",
                "main/scan",
                "warning",
                None,
                "Scan runs 5 iterations, fixed before the model runs; unroll it",
            )
        ],
    ),
    (
        "scan-dynamic-length",
        "OL4",
        ["qnn"],
        SCAN_DYNAMIC,
        [
            (
                "OL403",
                "main/scan",
                "warning",
                "qnn-htp",
                "Scan iterates over 'xs' along a dynamic axis ('steps')" + QNN_CF,
            )
        ],
    ),
    (
        "nonzero-feeding-reshape",
        "OL4",
        [],
        NONZERO_RESHAPE,
        [
            (
                "OL410",
                "main/nz",
                "warning",
                None,
                "the output shape of this NonZero depends on the values of 'x' (known only at run time)",
            )
        ],
    ),
    (
        "nonzero-feeding-reshape-qnn",
        "OL410",
        ["qnn"],
        NONZERO_RESHAPE,
        [
            (
                "OL410",
                "main/nz",
                "warning",
                "qnn-htp",
                "the output shape of this NonZero depends on the values of 'x' (known only at "
                "run time)" + QNN_SHAPES,
            )
        ],
    ),
    (
        "reshape-to-a-nonzero-size",
        "OL410",
        [],
        RESHAPE_TO_NONZERO_SIZE,
        [
            (
                "OL410",
                "main/nz",
                "warning",
                None,
                "the output shape of this NonZero depends on the values of 'x' (known only at run time)",
            ),
            (
                "OL410",
                "main/r",
                "warning",
                None,
                "the output shape of this Reshape depends on runtime values: its input 1 'k' "
                "comes from the shape of 'n' via main/nz (NonZero)",
            ),
        ],
    ),
    ("nonzero-of-a-constant", "OL4", [], NONZERO_OF_CONSTANT, []),
    (
        "topk-runtime-k",
        "OL4",
        [],
        TOPK_RUNTIME_K,
        [
            (
                "OL410",
                "main/topk",
                "warning",
                None,
                "the output shape of this TopK depends on runtime values: its input 1 'k' comes "
                "from graph input 'k'",
            )
        ],
    ),
    ("topk-constant-k", "OL4", ["qnn"], TOPK_CONSTANT_K, []),
    (
        "range-runtime-limit",
        "OL410",
        ["cuda"],
        RANGE_RUNTIME,
        [
            (
                "OL410",
                "main/range",
                "info",
                None,
                "the output shape of this Range depends on runtime values: its input 1 'n' "
                "comes from graph input 'n'",
            )
        ],
    ),
    # sizes taken from shapes are symbolic, not data-dependent: OL301 covers them
    ("expand-to-an-input-shape", "OL4", ["qnn"], EXPAND_FROM_SHAPE, []),
    (
        "sequence-ops",
        "OL405",
        [],
        SEQUENCES,
        [
            (
                "OL405",
                "main/split",
                "warning",
                None,
                "SplitToSequence works on tensor sequences, which accelerator EPs do not support",
            ),
            (
                "OL405",
                "main/cat",
                "warning",
                None,
                "ConcatFromSequence works on tensor sequences, which accelerator EPs do not support",
            ),
        ],
    ),
    (
        "sequence-ops-nnapi",
        "OL405",
        ["nnapi"],
        SEQUENCES,
        [
            (
                "OL405",
                "main/split",
                "warning",
                "nnapi",
                "SplitToSequence works on tensor sequences, which accelerator EPs do not "
                "support; NnapiExecutionProvider needs tensor types only",
            ),
            (
                "OL405",
                "main/cat",
                "warning",
                "nnapi",
                "ConcatFromSequence works on tensor sequences, which accelerator EPs do not "
                "support; NnapiExecutionProvider needs tensor types only",
            ),
        ],
    ),
    (
        "clean",
        "OL4",
        ["qnn"],
        H + "g (float[1,4] x) => (float[1,4] y) {\n [r] y = Relu(x)\n}",
        [],
    ),
]


#: configuration beyond ``select`` for the cases that need it
CONFIG = {"if-on-dynamic-dim-assumed-at-deployment": {"assume-dims": {"batch": 1}}}


def _where(d: onnxlint.Diagnostic) -> str:
    return d.location.node_path or d.location.tensor or d.location.graph


@pytest.mark.parametrize(
    ("case_id", "select", "eps", "text", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_control_flow_rule(case_id: str, select: str, eps: list, text: str, expected: list) -> None:
    extra = CONFIG.get(case_id, {})
    report = onnxlint.lint(parse(text), eps=eps, config={"select": [select], **extra})
    got = [
        (d.code, _where(d), d.severity.label, d.ep, d.message)
        for d in report.diagnostics
        if not d.code.startswith("OL0")
    ]
    assert got == expected


def test_dynamic_dim_condition_carries_the_fix_shapes_command() -> None:
    report = onnxlint.lint(parse(IF_DYNAMIC_SHAPE), config={"select": ["OL401"]})
    (diag,) = report.diagnostics
    assert diag.fix is not None and diag.fix.action == "fix-shapes"
    assert diag.fix.command == "onnxlint fix-shapes model.onnx -o model.static.onnx --dim batch=1"
    assert "add_free_dimension_override_by_name('batch', 1)" in diag.fix.title


def test_foldable_if_says_how_to_fold() -> None:
    report = onnxlint.lint(parse(IF_CONSTANT), config={"select": ["OL402"]})
    (diag,) = report.diagnostics
    assert diag.fix is not None and "onnxscript.optimizer.optimize" in (diag.fix.command or "")


@pytest.mark.parametrize("path", light_models(), ids=lambda p: p.name)
def test_light_models_have_no_control_flow_findings(path) -> None:
    """The onnx package's light models are static CNNs: any OL4xx finding is a false positive."""
    # no EP: the findings are the same, only their severity depends on EPs
    report = onnxlint.lint(path, config={"select": ["OL4"]})
    assert [d.code for d in report.diagnostics] == []


@pytest.mark.parametrize(
    ("text", "advice"),
    [(NONZERO_RESHAPE, "Where"), (TOPK_RUNTIME_K, "make K a constant"), (RANGE_RUNTIME, "Shape")],
)
def test_data_dependent_shape_suggests_a_static_formulation(text: str, advice: str) -> None:
    report = onnxlint.lint(parse(text), config={"select": ["OL410"]})
    (diag,) = report.diagnostics
    assert diag.fix is not None and advice in diag.fix.title
