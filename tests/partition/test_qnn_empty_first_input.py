"""QNN HTP builds a Concat by skipping its inputs with a zero-sized dimension: it never
creates their tensors. When such an input is the first input of the QNN graph (ORT's order:
the partition's nodes in graph order, each one's inputs by slot; initializers are no
inputs), QNN sets up none of the graph's inputs and session creation fails ("Failed to setup
QNN input tensors ... Having zero graph inputs is not supported on this backend"), or the
process dies (SIGFPE) when the Concat's first slot is a constant or the empty input is not
its last non-constant one. The held-out Hiera export fails so at ``qnn/disabled``: its
``/m/Concat`` reads the empty ``x.shape[:0]`` slice first. ``partitioning.empty_input_failure``
``first_input_reason``; OL513 reports it.

What leaves Hiera's Concat alone: once QNN claims nodes in its first pass, ORT's layout
transform runs its transpose optimizer, which turns ``Shape(Transpose(x, perm))`` into
``Gather(Shape(x), perm)`` whatever the perm and wherever the Transpose runs (a rank-6 one
on the CPU, a rank-3 one on QNN). QNN takes the Gather in its second pass; the CPU Slice of
the Gather's output then lies between the Gather's group and the Concat.
``layout_rewrites.transpose_shape_gathers``.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) at the disabled level; at the basic level ORT folds the shape computation
and the models load.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import check_real, partitions, real_sessions


def shape_concat(
    order: list[str], name: str, second_slice_of_shape: bool = False
) -> onnx.ModelProto:
    """x [1, 8, 6] -> Shape (CPU) -> Slice [1:3] -> ``t`` (QNN); an empty slice ``e`` (QNN
    refuses it: CPU) of ``t`` (or, with ``second_slice_of_shape``, of the Shape: then QNN
    groups the Concat with the Slice of ``t``); Concat of ``order`` (``e``, ``t`` and the
    constant ``m1``) -> the shape of a Reshape of x."""
    inits = {"z0": [0], "z1": [0], "o1": [1], "o3": [3], "m1": [-1]}
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], "shape"),
        helper.make_node("Slice", ["s", "o1", "o3"], ["t"], "slice_t"),
        helper.make_node(
            "Slice", ["s" if second_slice_of_shape else "t", "z0", "z1"], ["e"], "slice_e"
        ),
        helper.make_node("Concat", order, ["ns"], "concat", axis=0),
        helper.make_node("Reshape", ["x", "ns"], ["y"], "reshape"),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def shape_of_transpose(rank: int, transpose: bool = True) -> onnx.ModelProto:
    """x -> Transpose (rank 6 [0, 2, 4, 1, 3, 5]: the CPU; rank 3 [0, 2, 1]: QNN) -> Shape
    -> an empty Slice [0:0] ``e`` (CPU) and a Slice [1:4] ``t`` (QNN) of it -> Concat(e, -1,
    t) -> Reshape of the Transpose's output, as Hiera's mask units. Without the Transpose
    QNN groups the Concat with the Slice of ``t``."""
    dims = [1, 2, 3, 4, 5, 6][:rank]
    perm = [0, 2, 4, 1, 3, 5] if rank == 6 else [0, 2, 1]
    inits = {"z0": [0], "z1": [0], "o1": [1], "o3": [4], "m1": [-1]}
    src = "tr" if transpose else "x"
    nodes = [helper.make_node("Transpose", ["x"], ["tr"], "transpose", perm=perm)] * transpose
    nodes += [
        helper.make_node("Shape", [src], ["s"], "shape"),
        helper.make_node("Slice", ["s", "z0", "z1"], ["e"], "slice_e"),
        helper.make_node("Slice", ["s", "o1", "o3"], ["t"], "slice_t"),
        helper.make_node("Concat", ["e", "m1", "t"], ["ns"], "concat", axis=0),
        helper.make_node("Reshape", [src, "ns"], ["y"], "reshape"),
    ]
    graph = helper.make_graph(
        nodes,
        f"shape_of_transpose_{rank}_{transpose}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a"] * (rank - 1))],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def shape_of_unknown_rank() -> onnx.ModelProto:
    """As :func:`shape_of_transpose` (rank 3), the Transpose reading a Reshape of x by a
    shape input of unknown length (a tensor of unknown rank), and a static Relu of a second
    input ``z`` that QNN claims in its first pass: the Shape's Gather has no shape, QNN
    refuses it ("Cannot get shape"), and only the Relu runs on QNN (measured)."""
    model = shape_of_transpose(3)
    g = model.graph
    g.node[0].input[0] = "r"
    g.node.insert(0, helper.make_node("Reshape", ["x", "n"], ["r"], "reshape_in"))
    g.node.insert(0, helper.make_node("Relu", ["z"], ["zr"], "relu"))
    g.input.extend(
        [
            helper.make_tensor_value_info("n", TensorProto.INT64, ["k"]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4]),
        ]
    )
    g.output.extend([helper.make_tensor_value_info("zr", TensorProto.FLOAT, [1, 4])])
    onnx.checker.check_model(model)
    return model


#: the QNN graph of the Concat alone reads ``e`` first: the session fails
FAILING = {
    "empty_first": lambda: shape_concat(["e", "m1", "t"], "empty_first"),
    "shape_of_cpu_transpose": lambda: shape_of_transpose(6),
    "shape_of_qnn_transpose": lambda: shape_of_transpose(3),
}
#: the same first graph input, and the process dies (SIGFPE): predicted, not run here
CRASHING = {
    "constant_then_empty": lambda: shape_concat(["m1", "e", "t"], "constant_then_empty"),
    "empty_then_t": lambda: shape_concat(["e", "t", "m1"], "empty_then_t"),
}
LOADING = {
    # ``e`` the second input of the Concat's graph
    "empty_last": lambda: shape_concat(["t", "m1", "e"], "empty_last"),
    # the Concat joins the Slice of ``t``: the Shape's output is the graph's first input
    "grouped_with_slice": lambda: shape_concat(["e", "m1", "t"], "grouped", True),
    "shape_without_transpose": lambda: shape_of_transpose(6, transpose=False),
    "shape_of_unknown_rank": shape_of_unknown_rank,
}


def _errors(model: onnx.ModelProto) -> list[tuple[str, str | None]]:
    report = lint(model, eps=["qnn"], what_if=False)
    return [
        (d.code, d.location.node_name) for d in report.diagnostics if d.severity.name == "ERROR"
    ]


@pytest.mark.parametrize("case", [*FAILING, *CRASHING, *LOADING])
def test_an_empty_first_input_of_a_qnn_graph_fails(case: str) -> None:
    make = FAILING.get(case) or CRASHING.get(case) or LOADING[case]
    failing = case in FAILING or case in CRASHING
    assert _errors(make()) == ([("OL513", "concat")] if failing else []), case


def test_the_finding_names_the_empty_input() -> None:
    report = lint(FAILING["empty_first"](), eps=["qnn"], what_if=False)
    (d,) = [d for d in report.diagnostics if d.code == "OL513"]
    assert "`e`" in d.message and "zero graph inputs" in d.message, d.message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_empty_first_input_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {k: f() for k, f in FAILING.items()})
    for case in FAILING:
        r = real[f"{case}|disabled"]
        assert not r.get("ok") and "zero graph inputs" in str(r.get("error")), (case, r)
        assert real[f"{case}|basic"].get("ok"), (case, real[f"{case}|basic"])
    check_real("qnn", sys.executable, {k: f() for k, f in LOADING.items()})


def test_the_gather_of_a_shape_of_a_qnn_transpose_joins_the_transpose() -> None:
    """The Shape reads the Transpose's input after the rewrite: QNN groups the Transpose,
    the Gather and the Slice of ``t`` as one partition (measured), the Concat alone."""
    parts = partitions(shape_of_transpose(3), ["qnn"]).plan("exported")
    qnn = [sorted(p.nodes) for p in parts.partitions if p.ep == "QNNExecutionProvider"]
    assert sorted(qnn) == [["main/concat"], ["main/slice_t", "main/transpose"]], qnn
