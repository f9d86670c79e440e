"""QNN takes the DequantizeLinear that writes a graph output once ORT's layout transform
has put a Transpose in front of that output (``analyses/layout_outputs.py``,
``rules/ort_layout.json``).

QNN refuses a DequantizeLinear that writes a graph output in its first capability pass.
ORT then converts the layout-sensitive nodes QNN took to NHWC and pushes the Transpose back
to NCHW down through elementwise ops, Q/DQ, pools, Softmax, keep-dims reductions and
Concat; one that reaches the graph output leaves the DequantizeLinear writing the
Transpose's input, and QNN takes it in the second pass (the real-world corpus's QDQ CNN
exports: ResNet, RegNet, MobileNetV2, ConvNeXt). The model's own Transposes between
channels first and last are pushed the same way (SegFormer's last one, at the default
level). A Reshape or Flatten in the tail stops the pushed Transpose, a Transpose back to
the original layout cancels it, and a model with neither a layout-sensitive node nor
such a Transpose has none.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint
from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"


def tail_model(tail: str, head: str = "conv") -> onnx.ModelProto:
    """x -> Q/DQ -> ``head`` (a quantized Conv, or a Relu: no layout-sensitive node) -> Q/DQ
    -> ``tail`` (each node in its own Q/DQ pair) -> the graph output ``y``."""
    rng = np.random.RandomState(0)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        numpy_helper.from_array(rng.randint(-100, 100, (4, 2, 3, 3)).astype(np.int8), "wq"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wzp"),
        numpy_helper.from_array(
            rng.randint(0, 255, (1, 4 if head == "conv" else 2, 1, 1)).astype(np.uint8), "kq"
        ),
        numpy_helper.from_array(np.array([1, 256], np.int64), "flat"),
        numpy_helper.from_array(rng.randint(0, 255, (256, 8)).astype(np.uint8), "mq"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
    ]
    channels = 4 if head == "conv" else 2
    if head == "conv":
        nodes += [
            helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["w"], "dq_w"),
            helper.make_node("Conv", ["xd", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
        ]
    else:
        nodes.append(helper.make_node("Relu", ["xd"], ["c"], "head_relu"))
    nodes += [
        helper.make_node("QuantizeLinear", ["c", "s", "zp"], ["cq"], "q_c"),
        helper.make_node("DequantizeLinear", ["cq", "s", "zp"], ["cd"], "dq_c"),
    ]
    cur, shape = "cd", [1, channels, 8, 8]

    def step(op: str, *extra: str, **attrs: object) -> None:
        nonlocal cur
        name = op.lower()
        nodes.append(helper.make_node(op, [cur, *extra], [f"{name}_o"], name, **attrs))
        nodes.append(
            helper.make_node("QuantizeLinear", [f"{name}_o", "s", "zp"], [f"{name}_q"], f"q_{name}")
        )
        nodes.append(
            helper.make_node(
                "DequantizeLinear", [f"{name}_q", "s", "zp"], [f"{name}_d"], f"dq_{name}"
            )
        )
        cur = f"{name}_d"

    if tail in ("Relu", "Sigmoid"):
        step(tail)
    elif tail == "AddConst":
        nodes.append(helper.make_node("DequantizeLinear", ["kq", "s", "zp"], ["k"], "dq_k"))
        step("Add", "k")
    elif tail == "MaxPool":
        step("MaxPool", kernel_shape=[2, 2], strides=[2, 2])
        shape = [1, channels, 4, 4]
    elif tail == "Softmax":
        step("Softmax", axis=1)
    elif tail == "ReduceMean":
        step("ReduceMean", axes=[2, 3], keepdims=1)
        shape = [1, channels, 1, 1]
    elif tail == "Concat":
        step("Concat", "cd", axis=1)
        shape = [1, 2 * channels, 8, 8]
    elif tail == "Reshape":
        step("Reshape", "flat")
        shape = [1, 256]
    elif tail == "Flatten":
        step("Flatten")
        shape = [1, 256]
    elif tail.startswith("Transpose"):
        # Transpose: the Conv's pushed Transpose cancels with it; Transpose0312: the two
        # merge into a channels-last one; Transpose0231 and 0132 after a Relu: the model's
        # own Transpose, pushed when between channels first and last (not 0132)
        perm = [int(c) for c in tail[len("Transpose") :] or "0231"]
        step("Transpose", perm=perm)
        shape = [[1, channels, 8, 8][p] for p in perm]
    elif tail == "ReshapeMatMul":
        step("Reshape", "flat")
        nodes.append(helper.make_node("DequantizeLinear", ["mq", "s", "zp"], ["m"], "dq_m"))
        step("MatMul", "m")
        shape = [1, 8]
    else:
        assert tail == "none", tail
    nodes[-1].output[0] = "y"
    used = {name for n in nodes for name in n.input}
    inits = [t for t in inits if t.name in used]
    graph = helper.make_graph(
        nodes,
        f"{head}_{tail}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


#: (head, tail) -> whether QNN takes the DequantizeLinear writing the graph output
CASES = {
    ("conv", "none"): True,
    ("conv", "Relu"): True,
    ("conv", "Sigmoid"): True,
    ("conv", "AddConst"): True,
    ("conv", "MaxPool"): True,
    ("conv", "Softmax"): True,
    ("conv", "ReduceMean"): True,
    ("conv", "Concat"): True,
    ("conv", "Reshape"): False,
    ("conv", "Flatten"): False,
    ("conv", "Transpose"): False,
    ("conv", "Transpose0312"): True,
    ("relu", "Transpose0312"): True,
    ("relu", "Transpose0231"): True,
    ("relu", "Transpose0132"): False,
    ("conv", "ReshapeMatMul"): False,
    ("relu", "none"): False,
    ("relu", "AddConst"): False,
}


@pytest.mark.parametrize("case", sorted(CASES), ids="-".join)
def test_output_dequantize_after_the_layout_transform(case: tuple[str, str]) -> None:
    head, tail = case
    model = tail_model(tail, head)
    last = model.graph.node[-1].name
    parts = partitions(model, ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep[f"main/{last}"] == (QNN if CASES[case] else CPU_EP), level


def test_only_a_refused_output_dequantize_is_reported() -> None:
    def refusals(model: onnx.ModelProto) -> list[str]:
        report = lint(model, eps=["qnn"])
        return [
            d.message
            for d in report.diagnostics
            if d.code == "OL504" and "DequantizeLinear" in d.message
        ]

    assert refusals(tail_model("Relu")) == []
    # with no layout-sensitive node the refusal stands, and is reported
    got = refusals(tail_model("AddConst", "relu"))
    assert len(got) == 1 and "writes a graph output" in got[0], got


def test_the_claim_says_why() -> None:
    from onnxlint.analyses.assignment import Assignment

    from .conftest import context

    ctx = context(tail_model("none"), ["qnn"])
    la = ctx.analysis(Assignment).level("exported")
    assert la is not None
    na = la.get("main/dq_c")
    assert na is not None
    v = na.verdict_for(QNN)
    assert v is not None and v.claimed and v.constraint is None
    assert "layout transform" in v.reason and "graph output" in v.reason


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_output_dequantize_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {f"{h}_{t}": tail_model(t, h) for h, t in sorted(CASES)})
