"""Limits beyond the node count (issue #20, items 4 and 6).

The ONNX-text nesting guard's regex used ~150 bytes per character of a quoted string
(a 20 MB file peaked at 2.4 GB); initializers, value_info, graph and node inputs and
outputs and name lengths had no limit (an If declaring 10^6 outputs took 2 GB, a 100 MB
node name made an 800 MB report); functions calling the next twice per level made shape
inference run for hours on a 2 KB file.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import onnxlint
from onnxlint.limits import Limits
from onnxlint.loader import load
from onnxlint.modelfile.prescan import text_nesting
from tests.hostile import support as s

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]


def _model(nodes: list[onnx.NodeProto], **graph: object) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [X], [Y], **graph)  # type: ignore[arg-type]
    return helper.make_model(g, opset_imports=OPSETS, ir_version=8)


def _relu(**kw: object) -> onnx.NodeProto:
    return helper.make_node("Relu", ["x"], ["y"], **kw)  # type: ignore[arg-type]


def doubling_functions(levels: int) -> onnx.ModelProto:
    """f0 calls f1 twice, f1 calls f2 twice, ...: 2^levels call sites in a few KB."""
    fns = []
    for i in range(levels):
        if i < levels - 1:
            body = [
                helper.make_node(f"f{i + 1}", ["a"], ["t"], domain="local"),
                helper.make_node(f"f{i + 1}", ["t"], ["b"], domain="local"),
            ]
        else:
            body = [helper.make_node("Relu", ["a"], ["b"])]
        fns.append(helper.make_function("local", f"f{i}", ["a"], ["b"], body, OPSETS[:1]))
    model = _model([helper.make_node("f0", ["x"], ["y"], domain="local")])
    model.functions.extend(fns)
    return model


def test_text_nesting_memory_is_constant() -> None:
    text = '<ir_version: 8> g () => () { x = C <v: string = "' + "a" * 2_000_000 + '"> () }'
    tracemalloc.start()
    try:
        assert text_nesting(text, stop=100) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak  # the regex scan took ~300 MB here


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('a "unterminated { {', 2),  # a lone quote is skipped, brackets after it count
        ('a "x\\\\" { "', 1),  # an escaped backslash closes the string
        ('a "\\\\\\"{" {', 1),
    ],
)
def test_text_nesting_strings(text: str, depth: int) -> None:
    assert text_nesting(text, stop=100) == depth


CASES: list[tuple[str, Callable[[], onnx.ModelProto], Limits, str]] = [
    (
        "initializers",
        lambda: _model(
            [_relu()],
            initializer=[
                helper.make_tensor(f"w{i}", TensorProto.FLOAT, [], [0.0]) for i in range(11)
            ],
        ),
        Limits(max_initializers=10),
        "initializers",
    ),
    (
        "value-info",
        lambda: _model(
            [_relu()],
            value_info=[
                helper.make_tensor_value_info(f"v{i}", TensorProto.FLOAT, [1]) for i in range(11)
            ],
        ),
        Limits(max_value_info=10),
        "value_info",
    ),
    (
        "if-outputs",
        lambda: _model(
            [
                helper.make_node(
                    "If",
                    ["c"],
                    [f"o{i}" for i in range(200)],
                    then_branch=helper.make_graph(
                        [],
                        "t",
                        [],
                        [
                            helper.make_tensor_value_info(f"o{i}", TensorProto.FLOAT, [1])
                            for i in range(200)
                        ],
                    ),
                    else_branch=helper.make_graph([], "e", [], []),
                ),
                _relu(),
            ]
        ),
        Limits(max_graph_io=100, max_node_io=1000),
        "graph_io",
    ),
    (
        "node-outputs",
        lambda: _model([helper.make_node("Split", ["x"], [f"o{i}" for i in range(70_000)])]),
        Limits(),
        "node_io",
    ),
    ("long-name", lambda: _model([_relu(name="n" * 70_000)]), Limits(), "name_length"),
    ("doubling-functions", lambda: doubling_functions(30), Limits(), "expansion"),
]


@pytest.mark.parametrize(
    ("case", "build", "limits", "message_id"), CASES, ids=[c[0] for c in CASES]
)
def test_limit_refuses_before_analysis(
    case: str, build: Callable[[], onnx.ModelProto], limits: Limits, message_id: str
) -> None:
    loaded = load(build().SerializeToString(), limits)
    assert loaded.fatal
    assert [(d.code, d.message_id) for d in loaded.diagnostics] == [("OL008", message_id)]


def test_within_the_limits_nothing_is_refused() -> None:
    assert load(doubling_functions(8).SerializeToString()).diagnostics == []
    assert load(_model([_relu(doc_string="d" * 70_000)]).SerializeToString()).diagnostics == []
    model = _model([_relu()], initializer=[helper.make_tensor("w", TensorProto.FLOAT, [], [0.0])])
    assert load(model.SerializeToString(), Limits(max_initializers=1)).diagnostics == []


def test_limits_are_configurable(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(doubling_functions(8).SerializeToString())  # 2^8 nodes once expanded
    report = onnxlint.lint(path, config={"limits": {"max-nodes": 100}})
    assert [d.code for d in report.diagnostics] == ["OL008"]
    assert report.fatal


def test_cli_refuses_the_doubling_functions(tmp_path: Path) -> None:
    """Shape inference ran for hours on this 2 KB model; now exit 2 at once."""
    path = tmp_path / "m.onnx"
    path.write_bytes(doubling_functions(30).SerializeToString())
    run = s.run_cli(path, "--ep", "qnn", cwd=tmp_path)
    assert run.returncode == 2, (run.stdout[-2000:], run.stderr)
    assert "Traceback" not in run.stderr
    assert run.codes == ["OL008"]


def deep_type_model(depth: int) -> onnx.ModelProto:
    """Identity on an input whose type is a sequence of a sequence of ... ``depth`` deep,
    built in place (copying it would go through protobuf's depth-limited decoder)."""
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [], [y])
    model = helper.make_model(graph, opset_imports=OPSETS[:1], ir_version=8)
    x = model.graph.input.add()
    x.name = "x"
    cur = x.type
    for _ in range(depth):
        cur = cur.sequence_type.elem_type
    cur.tensor_type.elem_type = TensorProto.FLOAT
    return model


@pytest.mark.parametrize("depth", [1_000, 50_000])
def test_deeply_nested_type_through_the_api(depth: int) -> None:
    """50,000 deep segfaulted in ByteSize(); 1,000 deep crashed five rules (OL099)."""
    report = onnxlint.lint(deep_type_model(depth))
    assert [(d.code, d.message_id) for d in report.diagnostics] == [("OL005", "type")]
    assert report.fatal


def test_a_shallow_nested_type_is_linted() -> None:
    report = onnxlint.lint(deep_type_model(3))
    assert not report.fatal
    assert "OL099" not in {d.code for d in report.diagnostics}
