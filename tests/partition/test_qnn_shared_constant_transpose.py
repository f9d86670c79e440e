"""Once QNN HTP claims any node in its first capability pass, ORT's layout transform
pushes the model's channel Transposes (a rank-3 ``Transpose(0, 2, 1)``, as vision
transformers write the patch embedding) through the elementwise ops that follow. An
initializer such an op broadcasts is rewritten in place, and its other readers get one
``Transpose`` -> ``Squeeze`` of it, which QNN takes in its second pass. When that pair joins
none of QNN's other groups (its reader leads through CPU nodes to all of them) it is a graph
with no input, and session creation fails ("Failed to setup QNN input tensors ... Having
zero graph inputs is not supported on this backend"). The Swin and SigLIP TorchScript
exports of the real-world corpus fail so at the default level (the patch embedding's Conv
shares its zero bias with the LayerNorm's and the projections' Adds once ORT merges equal
initializers); with optimizations disabled the exporter's Identity is read in place of the
initializer, and they load. ``partitioning.layout_constant_rewrite``; OL513 reports it.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), at both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import check_real, real_sessions

C = 8
RNG = np.random.default_rng(0)


def _arr(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(
    name: str,
    tail: list[onnx.NodeProto],
    inits: dict[str, np.ndarray],
    extra_inputs: tuple[onnx.ValueInfoProto, ...] = (),
    extra_outputs: tuple[onnx.ValueInfoProto, ...] = (),
    shape_chain: bool = True,
    opset: int = 15,
) -> onnx.ModelProto:
    """x [batch, 3, 32, 32] -> Conv(W, b) -> Reshape to [batch, C, -1] -> Transpose(0, 2, 1)
    -> ``tail``. With ``shape_chain`` the Reshape's shape is Concat(Slice(Shape(conv)), [-1])
    (QNN claims the Slice and the Concat, so ORT's layout transform runs); else a constant
    (QNN claims no node: the dynamic batch leaves every other node to the CPU)."""
    arrays = {"W": RNG.standard_normal((C, 3, 4, 4)).astype(np.float32), **inits}
    nodes = [
        helper.make_node(
            "Conv", ["x", "W", "b"], ["c"], "conv", kernel_shape=[4, 4], strides=[4, 4]
        )
    ]
    if shape_chain:
        arrays |= {
            "s0": np.array([0], np.int64),
            "s2": np.array([2], np.int64),
            "m1": np.array([-1], np.int64),
        }
        nodes += [
            helper.make_node("Shape", ["c"], ["sh"], "shape"),
            helper.make_node("Slice", ["sh", "s0", "s2"], ["sh2"], "slice"),
            helper.make_node("Concat", ["sh2", "m1"], ["newshape"], "concat", axis=0),
        ]
    else:
        arrays["newshape"] = np.array([0, C, -1], np.int64)
    nodes += [
        helper.make_node("Reshape", ["c", "newshape"], ["r"], "reshape"),
        helper.make_node("Transpose", ["r"], ["t"], "transpose", perm=[0, 2, 1]),
        *tail,
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32]),
            *extra_inputs,
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64, C]), *extra_outputs],
        [numpy_helper.from_array(a, k) for k, a in arrays.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _side(
    dims: list[int | str],
) -> tuple[tuple[onnx.ValueInfoProto], tuple[onnx.ValueInfoProto]]:
    """A second input ``z`` and output ``y2`` of ``dims``."""
    return (
        (helper.make_tensor_value_info("z", TensorProto.FLOAT, dims),),
        (helper.make_tensor_value_info("y2", TensorProto.FLOAT, dims),),
    )


def conv_bias(op: str = "Add", opset: int = 15) -> onnx.ModelProto:
    """The Conv's bias is read again by the op after the Transpose."""
    tail = [helper.make_node(op, ["t", "b"], ["y"], "addb")]
    return _model(f"conv_bias_{op}_{opset}", tail, {"b": _arr(C)}, opset=opset)


def layernorm() -> onnx.ModelProto:
    """... -> LayerNorm written out (opset 15, as the TorchScript exporter writes it) whose
    last Add reads the Conv's bias."""
    consts = {
        "two": np.array(2.0, np.float32),
        "eps": np.array(1e-5, np.float32),
        "ones": np.ones(C, np.float32),
    }
    tail = [
        helper.make_node("ReduceMean", ["t"], ["mu"], "rm1", axes=[-1]),
        helper.make_node("Sub", ["t", "mu"], ["d"], "sub"),
        helper.make_node("Pow", ["d", "two"], ["d2"], "pow"),
        helper.make_node("ReduceMean", ["d2"], ["var"], "rm2", axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"], "addeps"),
        helper.make_node("Sqrt", ["ve"], ["sd"], "sqrt"),
        helper.make_node("Div", ["d", "sd"], ["n"], "div"),
        helper.make_node("Mul", ["n", "ones"], ["nm"], "mul"),
        helper.make_node("Add", ["nm", "b"], ["y"], "addb"),
    ]
    return _model("layernorm", tail, {"b": _arr(C), **consts})


def two_adds() -> onnx.ModelProto:
    """The bias read by two Adds on the pushed path and by the Conv."""
    tail = [
        helper.make_node("Add", ["t", "b"], ["t2"], "add1"),
        helper.make_node("Relu", ["t2"], ["t3"], "relu"),
        helper.make_node("Add", ["t3", "b"], ["y"], "add2"),
    ]
    return _model("two_adds", tail, {"b": _arr(C)})


def other_reader(dims: list[int | str], const_shape: tuple[int, ...]) -> onnx.ModelProto:
    """The Add's constant ``d`` is also read by an Add of a second input ``z``: on the CPU
    (a dynamic ``z``) the Transpose/Squeeze joins QNN's Slice/Concat group, on QNN (a
    static ``z``) its reader's group."""
    tail = [
        helper.make_node("Add", ["t", "d"], ["y"], "addb"),
        helper.make_node("Add", ["z", "d"], ["y2"], "addz"),
    ]
    return _model(
        f"other_reader_{len(dims)}_{len(const_shape)}",
        tail,
        {"b": _arr(C), "d": RNG.standard_normal(const_shape).astype(np.float32)},
        *_side(dims),
    )


def not_shared() -> onnx.ModelProto:
    tail = [helper.make_node("Add", ["t", "b2"], ["y"], "addb")]
    return _model("not_shared", tail, {"b": _arr(C), "b2": _arr(C)})


def no_first_claim() -> onnx.ModelProto:
    """No node QNN claims in its first pass: no layout transform."""
    tail = [helper.make_node("Add", ["t", "b"], ["y"], "addb")]
    return _model("no_first_claim", tail, {"b": _arr(C)}, shape_chain=False)


def scalar_reader() -> onnx.ModelProto:
    """A rank-0 constant is broadcast as it is: nothing is rewritten."""
    tail = [
        helper.make_node("Add", ["t", "d"], ["y"], "addb"),
        helper.make_node("Add", ["z", "d"], ["y2"], "addz"),
    ]
    return _model("scalar", tail, {"b": _arr(C), "d": np.array(0.5, np.float32)}, *_side(["n", 1]))


FAILING = {
    "conv_bias": conv_bias,
    "conv_bias_mul": lambda: conv_bias("Mul"),
    "conv_bias_opset21": lambda: conv_bias(opset=21),
    "layernorm": layernorm,
    "two_adds": two_adds,
}
LOADING = {
    "cpu_reader": lambda: other_reader(["n", C], (C,)),
    "qnn_reader": lambda: other_reader([2, C], (C,)),
    "full_rank_cpu_reader": lambda: other_reader(["n", 1, C], (1, 1, C)),
    "not_shared": not_shared,
    "no_first_claim": no_first_claim,
    "scalar": scalar_reader,
    # opset 13: ORT does not push the Transpose (its input's rank is not known there)
    "conv_bias_opset13": lambda: conv_bias(opset=13),
}


def _errors(model: onnx.ModelProto) -> list[tuple[str, str | None]]:
    report = lint(model, eps=["qnn"], what_if=False)
    return [
        (d.code, d.location.node_name) for d in report.diagnostics if d.severity.name == "ERROR"
    ]


@pytest.mark.parametrize("case", [*FAILING, *LOADING])
def test_a_constant_only_transpose_of_a_shared_initializer_fails(case: str) -> None:
    make = FAILING.get(case) or LOADING[case]
    assert _errors(make()) == ([("OL513", "conv")] if case in FAILING else []), case


def test_the_finding_names_the_initializer_and_the_op_that_rewrote_it() -> None:
    report = lint(layernorm(), eps=["qnn"], what_if=False)
    (d,) = [d for d in report.diagnostics if d.code == "OL513"]
    assert "`b`" in d.message and "addb" in d.message and "zero graph inputs" in d.message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_shared_constant_transpose_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {k: f() for k, f in FAILING.items()})
    for case in FAILING:
        for level in ("disabled", "basic"):
            r = real[f"{case}|{level}"]
            assert not r.get("ok") and "zero graph inputs" in str(r.get("error")), (case, level, r)
    check_real("qnn", sys.executable, {k: f() for k, f in LOADING.items()})
