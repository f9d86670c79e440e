"""QNN HTP and a Gather whose constant indices lie outside the axis's range.

QNN's Gather builder makes static int64/int32 indices non-negative against the axis's
dimension and refuses the node when one lies outside ``[-dim, dim)`` ("QNN does not
support negative index values for Gather* ops", whatever the sign): the Gather runs on
the CPU (an ``index_room`` constraint, read from the constant indices and the data's
static dimension). Seen on the TorchScript key/value-cache decoders with the dims fixed
at level default, where ORT folds the attention mask's index into a constant 0..15 over
an axis of 8. Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP
simulator, ``soc_model=60``), both levels.
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


def gathered(indices: list[int] | int) -> onnx.ModelProto:
    """Relu -> Gather (axis 1, constant ``indices``) -> Sigmoid on a [1, 8] tensor."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="pre"),
        helper.make_node("Gather", ["r", "idx"], ["g"], name="gather", axis=1),
        helper.make_node("Sigmoid", ["g"], ["y"], name="post"),
    ]
    graph = helper.make_graph(
        nodes,
        "gather",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(indices, np.int64), "idx")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


#: name -> (indices, whether QNN takes the Gather)
CASES = {
    "in_range": ([0, 7], True),
    "negative_in_range": ([-8, -1], True),
    "one_past_the_end": ([0, 8], False),
    "twice_the_axis": (list(range(16)), False),
    "one_before_the_start": ([-9], False),
    "scalar_past_the_end": (8, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gather_index_room_on_qnn(name: str) -> None:
    indices, taken = CASES[name]
    parts = partitions(gathered(indices), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/gather"] == (QNN if taken else CPU_EP), (name, level)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_gather_index_room_on_real_qnn(qnn_available: None) -> None:
    models = {name: gathered(indices) for name, (indices, _) in CASES.items()}
    check_real("qnn", sys.executable, models)
