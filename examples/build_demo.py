"""Build examples/demo.onnx: a small model with one problem from each rule family.

Run: python examples/build_demo.py   (writes demo.onnx next to this script)

What is in it, and what onnxlint should say about it:
- a symbolic batch dim on the input ('batch'): shapes;
- a Shape -> Gather -> Unsqueeze -> Concat chain feeding a Reshape: export hygiene;
- an If whose condition is ReduceSum(x) > 0, computed at run time: control flow;
- NonZero, whose output shape depends on the data: data-dependent shapes, and an op
  that QNN refuses: EP support and a CPU fallback island in the partition report;
- an unused initializer: structure;
- a model-local function importing another opset than the model: opset (onnx.checker rejects
  this, and says so as OL101; ONNX Runtime still runs the model).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    f = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(
            np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32), "conv_w"
        ),
        numpy_helper.from_array(np.zeros(8, np.float32), "conv_b"),
        numpy_helper.from_array(np.array([0], np.int64), "idx0"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
        numpy_helper.from_array(np.zeros(4, np.float32), "unused_bias"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
    ]
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["flat"], ["then_out"], name="then_relu")],
        "then_branch",
        [],
        [helper.make_tensor_value_info("then_out", f, ["batch", 2048])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["flat"], ["else_out"], name="else_neg")],
        "else_branch",
        [],
        [helper.make_tensor_value_info("else_out", f, ["batch", 2048])],
    )
    nodes = [
        helper.make_node(
            "Conv", ["pixels", "conv_w", "conv_b"], ["conv"], name="conv0", pads=[1, 1, 1, 1]
        ),
        helper.make_node("local.Swish", ["conv"], ["act"], name="swish0", domain="local"),
        helper.make_node("Shape", ["act"], ["shape"], name="shape0"),
        helper.make_node("Gather", ["shape", "idx0"], ["batch_dim"], name="gather0", axis=0),
        helper.make_node("Concat", ["batch_dim", "minus1"], ["new_shape"], name="concat0", axis=0),
        helper.make_node("Reshape", ["act", "new_shape"], ["flat"], name="reshape0"),
        helper.make_node("ReduceSum", ["flat"], ["total"], name="reduce0", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"], name="greater0"),
        helper.make_node(
            "If", ["cond"], ["branch"], name="if0", then_branch=then_g, else_branch=else_g
        ),
        helper.make_node("NonZero", ["branch"], ["nz"], name="nonzero0"),
        helper.make_node("Sigmoid", ["branch"], ["probs"], name="sigmoid0"),
    ]
    nodes[1].op_type = "Swish"
    graph = helper.make_graph(
        nodes,
        "demo",
        [helper.make_tensor_value_info("pixels", f, ["batch", 3, 16, 16])],
        [
            helper.make_tensor_value_info("probs", f, ["batch", 2048]),
            helper.make_tensor_value_info("nz", TensorProto.INT64, [2, "nnz"]),
        ],
        initializer=inits,
    )
    swish = helper.make_function(
        "local",
        "Swish",
        ["x"],
        ["y"],
        [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
        opset_imports=[helper.make_opsetid("", 13)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[swish],
        producer_name="onnxlint-demo",
    )
    model.ir_version = 8
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("demo.onnx")
    model = build()
    onnx.save(model, out)
    print(f"wrote {out.name} ({out.stat().st_size} bytes, {len(model.graph.node)} nodes)")
