"""QNN HTP refuses an If whose branch reads an initializer of the enclosing graph
(``refuses_captured_initializers`` of qnn-htp): its log says the If's implicit input "is
produced outside the QNN partition". Branches that read the graph input, a value of a
QNN node, or their own initializers are fine. Seen on the corpus's ``torch.cond`` export.

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
KINDS = ("graph_input", "outer_init", "inner_init", "computed")


def cond_model(kind: str) -> onnx.ModelProto:
    """``If(ReduceSum(x) > 0)`` with branches ``Sin``/``Cos`` of ``x`` (``"computed"``: of
    ``Relu(x)``); the then-branch scales by ``k``, an initializer of the main graph
    (``"outer_init"``) or of the branch (``"inner_init"``)."""
    f = TensorProto.FLOAT
    outer = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    pre = [helper.make_node("Relu", ["x"], ["rx"], "relu_x")] if kind == "computed" else []
    src = "rx" if kind == "computed" else "x"
    then_nodes = [helper.make_node("Sin", [src], ["s"], "sin")]
    then_inits: list[onnx.TensorProto] = []
    if kind in ("outer_init", "inner_init"):
        k = numpy_helper.from_array(np.array(2.0, np.float32), "k")
        (outer if kind == "outer_init" else then_inits).append(k)
        then_nodes.append(helper.make_node("Mul", ["s", "k"], ["t_out"], "mul_t"))
    else:
        then_nodes.append(helper.make_node("Identity", ["s"], ["t_out"], "id_t"))
    then_g = helper.make_graph(
        then_nodes, "then", [], [helper.make_tensor_value_info("t_out", f, [2, 8])], then_inits
    )
    else_g = helper.make_graph(
        [helper.make_node("Cos", [src], ["e_out"], "cos")],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", f, [2, 8])],
    )
    nodes = [
        *pre,
        helper.make_node("ReduceSum", ["x"], ["sm"], "rsum", keepdims=0),
        helper.make_node("Greater", ["sm", "zero"], ["gt"], "gt"),
        helper.make_node("If", ["gt"], ["y"], "cond", then_branch=then_g, else_branch=else_g),
    ]
    graph = helper.make_graph(
        nodes,
        f"cond_{kind}",
        [helper.make_tensor_value_info("x", f, [2, 8])],
        [helper.make_tensor_value_info("y", f, [2, 8])],
        outer,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("kind", KINDS)
def test_an_if_reading_an_outer_initializer_stays_on_cpu(kind: str) -> None:
    for level in ("exported", "optimized"):
        plan = partitions(cond_model(kind), ["qnn"]).plan(level)
        assert plan is not None
        if kind == "outer_init":
            assert plan.node_ep["main/cond"] == CPU_EP, level
            assert "`k`, an initializer of the enclosing graph" in plan.released["main/cond"]
            assert "`k` an initializer of each branch" in plan.release_fixes["main/cond"]
        else:
            assert plan.node_ep["main/cond"] == QNN, (level, kind)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_if_captures_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {k: cond_model(k) for k in KINDS})
