"""QNN refuses a reduction with ``noop_with_empty_axes=1`` only when it has no axes to
reduce (the input absent or empty): with a constant, non-empty axes input it reduces as
usual and runs on HTP (the constraint's ``when_input_empty``; seen on the magika model of
the real-world corpus, a jax2tf export whose ReduceSum nodes set the flag and give axes).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"


def reduce_model(op: str, axes: str, noop: int) -> onnx.ModelProto:
    """Relu -> ``op`` (axes ``const`` [1], ``empty`` [] or ``none``) -> Relu."""
    inits = []
    inputs = ["r"]
    if axes != "none":
        values = [1] if axes == "const" else []
        inits.append(numpy_helper.from_array(np.array(values, np.int64), "axes"))
        inputs.append("axes")
    shape = [2, 1, 4] if axes == "const" else ([2, 3, 4] if noop else [1, 1, 1])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], "relu"),
        helper.make_node(op, inputs, ["s"], "red", keepdims=1, noop_with_empty_axes=noop),
        helper.make_node("Relu", ["s"], ["y"], "relu_out"),
    ]
    graph = helper.make_graph(
        nodes,
        f"{op}_{axes}_{noop}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


CASES = [
    (op, a, n)
    for op in ("ReduceSum", "ReduceMean")
    for a in ("const", "none", "empty")
    for n in (0, 1)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_a_no_op_flag_matters_only_without_axes(case: tuple[str, str, int]) -> None:
    op, axes, noop = case
    parts = partitions(reduce_model(op, axes, noop), ["qnn"])
    refused = noop == 1 and axes != "const"
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/red"] == (CPU_EP if refused else QNN), level


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_reduce_no_op_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {f"{o}_{a}_{n}": reduce_model(o, a, n) for o, a, n in CASES})
