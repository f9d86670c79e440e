"""Case table for the structure rules (OL1xx): exact diagnostics for triggering models, none for clean ones."""

from __future__ import annotations

import pytest

import onnxlint

from ..conftest import parse

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'

CASES = [
    # (id, selected code, model text, expected [(code, where, message)])
    (
        "duplicate-name",
        "OL102",
        HEADER + "g (float[2] x) => (float[2] z) {\n [a] y = Relu(x)\n [a] z = Relu(y)\n}",
        [("OL102", "main/Relu_1", "node name 'a' is also used by main/Relu_0")],
    ),
    (
        "unique-names",
        "OL102",
        HEADER + "g (float[2] x) => (float[2] z) {\n [a] y = Relu(x)\n [b] z = Relu(y)\n}",
        [],
    ),
    (
        "unnamed",
        "OL103",
        HEADER + "g (float[2] x) => (float[2] z) {\n y = Relu(x)\n [b] z = Relu(y)\n}",
        [
            (
                "OL103",
                "main/Relu_0",
                "1 of 2 nodes in graph 'main' have no name (first: main/Relu_0)",
            )
        ],
    ),
    (
        "undefined-input",
        "OL104",
        HEADER + "g (float[2] x) => (float[2] y) {\n [add] y = Add(x, ghost)\n}",
        [("OL104", "main/add", "input 1 'ghost' of this node is never produced")],
    ),
    (
        "undefined-output",
        "OL104",
        HEADER + "g (float[2] x) => (float[2] y, float[2] w) {\n [r] y = Relu(x)\n}",
        [("OL104", "main", "graph output 'w' is never produced")],
    ),
    (
        "outer-scope-capture-is-defined",
        "OL104",
        HEADER
        + "g (bool c, float[2] x) => (float[2] y) {\n"
        + " [if0] y = If(c) <then_branch = t () => (float[2] a) { a = Relu(x) }, "
        + "else_branch = e () => (float[2] b) { b = Neg(x) }>\n}",
        [],
    ),
    (
        "unused-initializer",
        "OL105",
        HEADER + "g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n [r] y = Relu(x)\n}",
        [("OL105", "main", "initializer 'w' is never used (2 elements)")],
    ),
    (
        "initializer-used-by-subgraph",
        "OL105",
        HEADER
        + "g (bool c, float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n"
        + " [if0] y = If(c) <then_branch = t () => (float[2] a) { a = Add(x, w) }, "
        + "else_branch = e () => (float[2] b) { b = Neg(x) }>\n}",
        [],
    ),
    (
        "initializer-as-input",
        "OL106",
        HEADER
        + "g (float[2] x, float[2] w) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n [m] y = Mul(x, w)\n}",
        [
            (
                "OL106",
                "main",
                "initializer 'w' is also a graph input, so it is not treated as a constant",
            )
        ],
    ),
    (
        "dead-node",
        "OL107",
        HEADER
        + "g (float[2] x) => (float[2] y) {\n [r] y = Relu(x)\n [s] u = Sigmoid(x)\n [t] v = Tanh(u)\n}",
        [
            ("OL107", "main/s", "output of this node never reaches a graph output"),
            ("OL107", "main/t", "output of this node never reaches a graph output"),
        ],
    ),
    (
        # read only from a Loop body nested in an If branch: live (the index's captured
        # names, nested bodies included); a dead node inside the branch is still found
        "dead-node-nested-capture",
        "OL107",
        HEADER
        + "g (bool c, float[2] x, int64 n) => (float[2] y) {\n [k] w = Relu(x)\n"
        + " [if0] y = If(c) <then_branch = t () => (float[2] a) {\n"
        + "  [d] unused = Neg(x)\n"
        + "  [lp] a = Loop(n, c, x) <body = b (int64 i, bool ci, float[2] v) => "
        + "(bool co, float[2] vo) { co = Identity(ci)\n vo = Add(v, w) }>\n}, "
        + "else_branch = e () => (float[2] b2) { b2 = Neg(x) }>\n}",
        [("OL107", "main/if0:then_branch/d", "output of this node never reaches a graph output")],
    ),
    (
        "cycle",
        "OL108",
        HEADER + "g (float[2] x) => (float[2] y) {\n [a] y = Add(x, z)\n [b] z = Relu(y)\n}",
        [("OL108", "main/a", "the graph has a cycle through 2 nodes, including this one")],
    ),
    (
        "out-of-order",
        "OL108",
        HEADER + "g (float[2] x) => (float[2] z) {\n [b] z = Relu(y)\n [a] y = Relu(x)\n}",
        [
            (
                "OL108",
                "main/b",
                "this node reads 'y', which is produced later (nodes not topologically sorted; "
                "ONNX Runtime sorts them and loads the model, onnx's checker and other tools do "
                "not)",
            )
        ],
    ),
    (
        "sorted",
        "OL108",
        HEADER + "g (float[2] x) => (float[2] z) {\n [a] y = Relu(x)\n [b] z = Relu(y)\n}",
        [],
    ),
    # a graph in file order skips Kahn's algorithm; these are not in it
    (
        "self-loop",
        "OL108",
        HEADER + "g (float[2] x) => (float[2] y) {\n [r] u = Relu(x)\n [a] y = Add(u, y)\n}",
        [("OL108", "main/a", "the graph has a cycle through 1 nodes, including this one")],
    ),
    (
        "cycle-in-a-body",
        "OL108",
        HEADER
        + "g (bool c, float[2] x) => (float[2] y) {\n"
        + " [if0] y = If(c) <then_branch = t () => (float[2] a) "
        + "{ [p] a = Add(x, b)\n [q] b = Relu(a) }, "
        + "else_branch = e () => (float[2] n) { n = Neg(x) }>\n}",
        [("OL108", "main/if0:then_branch/p", None)],
    ),
    (
        "sorted-reads-twice",
        "OL108",
        HEADER + "g (float[2] x) => (float[2] z) {\n [a] y = Relu(x)\n [b] z = Add(y, y)\n}",
        [],
    ),
    (
        "checker",
        "OL101",
        HEADER + "g (float[2] x) => (float[2] y) {\n [r] y = Relu <alpha: float = 0.5> (x)\n}",
        [("OL101", "model", None)],
    ),
]


def _where(d: onnxlint.Diagnostic) -> str:
    return d.location.node_path or (d.location.graph if d.location.tensor else "model")


@pytest.mark.parametrize(("case_id", "code", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_structure_rule(case_id: str, code: str, text: str, expected: list) -> None:
    report = onnxlint.lint(parse(text), config={"select": [code]})
    got = [(d.code, _where(d), d.message) for d in report.diagnostics]
    want = (
        [(c, w, m if m is not None else got[i][2]) for i, (c, w, m) in enumerate(expected)]
        if got
        else expected
    )
    assert got == want


def test_checker_message_names_the_problem() -> None:
    report = onnxlint.lint(parse(CASES[-1][2]), config={"select": ["OL101"]})
    assert "alpha" in report.diagnostics[0].message


IR3 = '<ir_version: 3, opset_import: ["" : 7]>\n'
IR3_INITIALIZER = (
    IR3 + "g (float[2] x) => (float[2] y) <float[2] W = {1.0, 2.0}> {\n [m] y = Mul(x, W)\n}"
)


@pytest.mark.parametrize(
    ("text", "message_id", "severity"),
    [
        # the only violation is one ORT does not enforce: the session loads, a warning
        (IR3_INITIALIZER, "ir3_initializers", "warning"),
        # another violation as well: the model is invalid, an error
        (IR3_INITIALIZER.replace("Mul(x, W)", "Relu <alpha: float = 0.5> (x)"), "default", "error"),
        # IR 4: nothing to list
        (IR3_INITIALIZER.replace("ir_version: 3", "ir_version: 4"), None, None),
    ],
)
def test_ir3_initializers_that_are_not_inputs_are_a_warning(
    text: str, message_id: str | None, severity: str | None
) -> None:
    report = onnxlint.lint(parse(text), config={"select": ["OL101"]})
    got = [(d.message_id, d.severity.label) for d in report.diagnostics]
    assert got == ([(message_id, severity)] if message_id else [])


UNSORTED = HEADER + "g (float[2] x) => (float[2] z) {\n [b] z = Relu(y)\n [a] y = Relu(x)\n}"
UNIMPORTED = (
    HEADER.replace(', "com.microsoft" : 1', "")
    + "g (float[2] x) => (float[2] y) {\n [f] y = com.microsoft.FastGelu(x)\n}"
)


@pytest.mark.parametrize(
    ("text", "what", "severity"),
    [
        # ORT sorts the nodes itself: the session loads, a warning
        (UNSORTED, "nodes out of topological order", "warning"),
        # ORT imports a used contrib domain the model does not import
        (UNIMPORTED, "a node domain without an opset import", "warning"),
        # mended, the checker still rejects it: an error
        (UNSORTED.replace("Relu(x)", "Relu <alpha: float = 0.5> (x)"), None, "error"),
    ],
)
def test_what_ort_mends_on_loading_is_a_warning(text: str, what: str | None, severity: str) -> None:
    report = onnxlint.lint(parse(text), config={"select": ["OL101", "OL108"]})
    checker = [d for d in report.diagnostics if d.code == "OL101"]
    assert [d.severity.label for d in checker] == [severity]
    if what is not None:
        assert checker[0].message_id == "ort_tolerates" and what in checker[0].message
    order = [d for d in report.diagnostics if d.code == "OL108"]
    assert all(d.severity.label == "warning" for d in order)
