"""The per-node capability evaluator: one case per verdict kind, and one per measured EP fact.

The measured facts come from ``../shared/EP-BEHAVIOUR.md`` (ORT 1.31.1,
onnxruntime-qnn 2.7.0, onnxruntime-openvino 1.24.1); each is checked here on a
small single-node model against the shipped profile.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import profiles
from onnxlint.analyses.capability import NodeFacts, evaluate, node_count_cap
from onnxlint.analyses.single_node_facts import facts_from_model

DT = {
    "float": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "double": TensorProto.DOUBLE,
    "int64": TensorProto.INT64,
    "int32": TensorProto.INT32,
    "int8": TensorProto.INT8,
    "uint8": TensorProto.UINT8,
    "bool": TensorProto.BOOL,
    "string": TensorProto.STRING,
}

Spec = tuple[str, str, Sequence[int | str] | None]


def single(
    op: str,
    inputs: Sequence[Spec],
    outputs: Sequence[Spec],
    *,
    opset: int = 17,
    domain: str = "",
    inits: dict[str, np.ndarray] | None = None,
    extra_opsets: dict[str, int] | None = None,
    **attrs: Any,
) -> onnx.ModelProto:
    """A one-node model; inputs named in ``inits`` become initializers."""
    inits = inits or {}
    node = helper.make_node(
        op, [i[0] for i in inputs], [o[0] for o in outputs], domain=domain, **attrs
    )
    g_in = [
        helper.make_tensor_value_info(n, DT[t], s) for n, t, s in inputs if n and n not in inits
    ]
    g_out = [helper.make_tensor_value_info(n, DT[t], s) for n, t, s in outputs]
    graph = helper.make_graph(
        [node], "g", g_in, g_out, [numpy_helper.from_array(v, k) for k, v in inits.items()]
    )
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
    return helper.make_model(graph, opset_imports=imports)


def verdict(ep: str, model: onnx.ModelProto) -> Any:
    return evaluate(profiles.get_profile(ep), facts_from_model(model))


X4 = ("x", "float", [1, 3, 8, 8])
Y4 = ("y", "float", [1, 3, 8, 8])


# -- verdict kinds on a synthetic profile (exact reasons) ----------------------------

TOY: dict[str, Any] = {
    "schema_version": 1,
    "id": "toy-npu",
    "ep": "ToyExecutionProvider",
    "variant": {"device": "NPU"},
    "describes": {"onnxruntime": "1.31.1"},
    "provenance": [{"id": "p", "kind": "manual"}],
    "kind": "compiling",
    "opsets": {"ai.onnx": {"max": 21}},
    "ops": [
        {
            "domain": "ai.onnx",
            "op": "Relu",
            "versions": [{"from": 6, "to": 13}],
            "types": {"T": ["float", "float16"]},
            "provenance": "p",
        },
        {
            "domain": "ai.onnx",
            "op": "Conv",
            "provenance": "p",
            "constraints": [
                {"kind": "constant_input", "inputs": [1], "reason": "weights must be constant"},
                {"kind": "max_rank", "value": 4, "inputs": [0], "reason": "2D only"},
                {
                    "kind": "attribute",
                    "name": "auto_pad",
                    "allowed": ["NOTSET"],
                    "default": "NOTSET",
                    "reason": "no auto padding",
                },
            ],
        },
        {
            "domain": "ai.onnx",
            "op": "Softmax",
            "provenance": "p",
            "constraints": [
                {"kind": "static_shape", "reason": "shapes must be fixed"},
                {
                    "kind": "always",
                    "effect": "fails_after_claim",
                    "reason": "the compiler rejects Softmax",
                },
            ],
        },
    ],
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> profiles.Profile:
    path = Path(tmp_path_factory.mktemp("toy")) / "toy.json"
    path.write_text(json.dumps(TOY))
    return profiles.load_profile_file(path)


W = np.ones((3, 3, 3, 3), dtype=np.float32)

KIND_CASES = [
    (
        "supported",
        single("Relu", [X4], [Y4], opset=13),
        True,
        "supported",
        "ToyExecutionProvider (NPU) claims Relu",
    ),
    (
        "op",
        single("Sigmoid", [X4], [Y4]),
        False,
        "op",
        "ToyExecutionProvider (NPU) has no implementation of Sigmoid",
    ),
    (
        "revision",
        single("Relu", [X4], [Y4], opset=14),
        False,
        "revision",
        "ToyExecutionProvider (NPU) implements Relu revisions 6-13, not revision 14 (opset 14); "
        "it would be claimed at opset 6-13",
    ),
    (
        "model-opset",
        single("Relu", [X4], [Y4], opset=22),
        False,
        "revision",
        "ToyExecutionProvider (NPU) supports ai.onnx opsets 1-21; this model imports opset 22",
    ),
    (
        "dtype",
        single("Relu", [("x", "double", [2])], [("y", "double", [2])], opset=13),
        False,
        "dtype",
        "ToyExecutionProvider (NPU) does not support Relu with double on input 0 (type T); "
        "supported: float, float16",
    ),
    (
        "constraint",
        single("Conv", [X4, ("w", "float", [3, 3, 3, 3])], [("y", "float", None)]),
        False,
        "constraint",
        "ToyExecutionProvider (NPU) does not claim Conv: weights must be constant "
        "(input 1 is not a constant)",
    ),
    (
        "attribute",
        single(
            "Conv",
            [X4, ("w", "float", [3, 3, 3, 3])],
            [("y", "float", None)],
            inits={"w": W},
            auto_pad="SAME_UPPER",
        ),
        False,
        "constraint",
        "ToyExecutionProvider (NPU) does not claim Conv: no auto padding (auto_pad='SAME_UPPER')",
    ),
    (
        "shape-rank",
        single(
            "Conv",
            [("x", "float", [1, 3, 4, 8, 8]), ("w", "float", [3, 3, 3, 3, 3])],
            [("y", "float", None)],
            inits={"w": np.ones((3, 3, 3, 3, 3), dtype=np.float32)},
        ),
        False,
        "shape",
        "ToyExecutionProvider (NPU) does not claim Conv: 2D only (input 0 has rank 5)",
    ),
    (
        "shape-dynamic",
        single("Softmax", [("x", "float", ["batch", 10])], [("y", "float", ["batch", 10])]),
        False,
        "shape",
        "ToyExecutionProvider (NPU) does not claim Softmax: shapes must be fixed "
        "(input 0 has dynamic dimension(s) batch)",
    ),
    (
        "domain",
        single(
            "FusedGemm",
            [("a", "float", [2, 2]), ("b", "float", [2, 2])],
            [("y", "float", [2, 2])],
            domain="com.microsoft",
            extra_opsets={"com.microsoft": 1},
        ),
        False,
        "domain",
        "ToyExecutionProvider (NPU) does not claim operators from domain 'com.microsoft' "
        "(com.microsoft.FusedGemm)",
    ),
]


@pytest.mark.parametrize(
    ("model", "claimed", "kind", "reason"),
    [c[1:] for c in KIND_CASES],
    ids=[c[0] for c in KIND_CASES],
)
def test_verdict_kinds(
    toy: profiles.Profile, model: onnx.ModelProto, claimed: bool, kind: str, reason: str
) -> None:
    v = evaluate(toy, facts_from_model(model))
    assert (v.claimed, v.kind, v.reason) == (claimed, kind, reason)
    assert v.ep == "ToyExecutionProvider"
    assert v.profile == "toy-npu"


def test_constraint_refusals_name_the_offending_slot_as_fields(toy: profiles.Profile) -> None:
    """Rules read which input broke a constraint from ``Verdict.slot``, never from the text."""
    weights = single("Conv", [X4, ("w", "float", [3, 3, 3, 3])], [("y", "float", None)])
    v = evaluate(toy, facts_from_model(weights))
    assert (v.constraint, v.slot) == ("constant_input", ("input", 1))
    rank = single(
        "Conv",
        [("x", "float", [1, 3, 4, 8, 8]), ("w", "float", [3, 3, 3, 3, 3])],
        [("y", "float", None)],
        inits={"w": np.ones((3, 3, 3, 3, 3), dtype=np.float32)},
    )
    v = evaluate(toy, facts_from_model(rank))
    assert (v.constraint, v.slot) == ("max_rank", ("input", 0))
    padded = single(
        "Conv",
        [X4, ("w", "float", [3, 3, 3, 3])],
        [("y", "float", None)],
        inits={"w": W},
        auto_pad="SAME_UPPER",
    )
    assert evaluate(toy, facts_from_model(padded)).slot is None  # an attribute has no slot


def test_revision_refusal_lists_the_opsets(toy: profiles.Profile) -> None:
    v = evaluate(toy, facts_from_model(single("Relu", [X4], [Y4], opset=14)))
    assert v.supported_opsets == (6, 7, 8, 9, 10, 11, 12, 13)
    assert v.provenance == "p"


def test_fails_after_claim(toy: profiles.Profile) -> None:
    v = evaluate(
        toy,
        facts_from_model(single("Softmax", [("x", "float", [2, 10])], [("y", "float", [2, 10])])),
    )
    assert v.claimed and v.kind == "supported"
    assert v.fails_after_claim == (
        "ToyExecutionProvider (NPU) claims Softmax but session creation fails: "
        "the compiler rejects Softmax"
    )


def test_unknown_facts_do_not_refuse(toy: profiles.Profile) -> None:
    # Nothing known but the op: the dtype and rank checks give the benefit of the doubt.
    v = evaluate(toy, NodeFacts(op_type="Relu", domain="", opset=13))
    assert v.claimed
    # ...but a constraint that needs a static shape cannot be met by an unknown one.
    v = evaluate(toy, NodeFacts(op_type="Softmax", opset=13, input_dtypes=("float",)))
    assert (v.claimed, v.kind) == (False, "shape")


def test_nodefacts_normalises_the_default_domain() -> None:
    assert NodeFacts(op_type="Add", domain="").domain == "ai.onnx"
    assert NodeFacts(op_type="Add", domain="").qualified_op() == "Add"
    assert NodeFacts(op_type="X", domain="com.acme").qualified_op() == "com.acme.X"


def test_facts_from_model() -> None:
    m = single(
        "Conv",
        [("x", "float", ["N", 3, 8, 8]), ("w", "float", [3, 3, 3, 3]), ("", "float", None)],
        [("y", "float", None)],
        inits={"w": W},
        pads=[1, 1, 1, 1],
        auto_pad="NOTSET",
    )
    f = facts_from_model(m)
    assert f.op_type == "Conv" and f.domain == "ai.onnx"
    assert (f.opset, f.since_version) == (17, 11)
    assert f.input_dtypes == ("float", "float", None)
    assert f.input_type_params == ("T", "T", "T")
    assert f.input_shapes[0] == ("N", 3, 8, 8)
    assert f.output_shapes[0] is not None and len(f.output_shapes[0]) == 4  # inferred
    assert f.constant_inputs == frozenset({1})
    assert f.graph_inputs == frozenset({0})
    assert f.graph_outputs == frozenset({0})
    assert f.absent_inputs == frozenset({2})
    assert f.attributes == {"pads": [1, 1, 1, 1], "auto_pad": "NOTSET"}
    assert f.graph_node_count == 1


# -- facts measured on the real EPs (../shared/EP-BEHAVIOUR.md) -----------------------

SCALAR_I64 = ("s", "int64", [1])

QNN_REFUSED = [
    (
        "ConstantOfShape",
        single("ConstantOfShape", [("shape", "int64", [2])], [("y", "float", None)]),
        "op",
    ),
    (
        "Range-runtime-inputs",
        single(
            "Range",
            [("a", "float", []), ("b", "float", []), ("c", "float", [])],
            [("y", "float", None)],
        ),
        "op",
    ),
    (
        "DynamicQuantizeLinear",
        single(
            "DynamicQuantizeLinear",
            [("x", "float", [4])],
            [("y", "uint8", [4]), ("s", "float", []), ("z", "uint8", [])],
        ),
        "op",
    ),
    (
        "ConvInteger",
        single(
            "ConvInteger",
            [("x", "uint8", [1, 1, 4, 4]), ("w", "uint8", [1, 1, 2, 2])],
            [("y", "int32", None)],
        ),
        "op",
    ),
    # NonZero's output shape depends on the data: refused for its dynamic shape.
    ("NonZero", single("NonZero", [("x", "float", [2, 3])], [("y", "int64", None)]), "shape"),
    (
        "StringNormalizer",
        single("StringNormalizer", [("x", "string", [3])], [("y", "string", None)]),
        "op",
    ),
    (
        "SequenceConstruct",
        single(
            "SequenceConstruct", [("a", "float", [2]), ("b", "float", [2])], [("y", "float", None)]
        ),
        "op",
    ),
    (
        "ML-op",
        single(
            "Binarizer",
            [("x", "float", [3])],
            [("y", "float", [3])],
            domain="ai.onnx.ml",
            extra_opsets={"ai.onnx.ml": 3},
        ),
        "op",
    ),
    (
        "custom-domain",
        single(
            "MyOp",
            [("x", "float", [3])],
            [("y", "float", [3])],
            domain="com.acme",
            extra_opsets={"com.acme": 1},
        ),
        "domain",
    ),
    (
        # Measured on single-node models: float64 on a graph input/output is refused.
        "Add-float64-graph-io",
        single(
            "Add",
            [("a", "double", [2, 3]), ("b", "double", [2, 3])],
            [("y", "double", [2, 3])],
        ),
        "dtype",
    ),
    (
        "BatchNormalization-dynamic-scale",
        single(
            "BatchNormalization",
            [
                X4,
                ("scale", "float", [3]),
                ("b", "float", [3]),
                ("m", "float", [3]),
                ("v", "float", [3]),
            ],
            [Y4],
            inits={k: np.ones(3, np.float32) for k in ("b", "m", "v")},
        ),
        "constraint",
    ),
    (
        "QuantizeLinear-on-graph-input",
        single(
            "QuantizeLinear",
            [("x", "float", [4]), ("s", "float", []), ("z", "uint8", [])],
            [("y", "uint8", [4])],
            inits={"s": np.array(0.1, np.float32), "z": np.array(0, np.uint8)},
        ),
        "constraint",
    ),
    (
        "DequantizeLinear-on-graph-output",
        single(
            "DequantizeLinear",
            [("x", "uint8", [4]), ("s", "float", []), ("z", "uint8", [])],
            [("y", "float", [4])],
            inits={"s": np.array(0.1, np.float32), "z": np.array(0, np.uint8)},
        ),
        "constraint",
    ),
    ("opset-6-model", single("Relu", [X4], [Y4], opset=6), "revision"),
    (
        "symbolic-dim",
        single("Relu", [("x", "float", ["batch", 3])], [("y", "float", ["batch", 3])]),
        "shape",
    ),
]


@pytest.mark.parametrize(
    ("model", "kind"), [c[1:] for c in QNN_REFUSED], ids=[c[0] for c in QNN_REFUSED]
)
def test_qnn_htp_refuses(model: onnx.ModelProto, kind: str) -> None:
    v = verdict("qnn", model)
    assert (v.claimed, v.kind) == (False, kind), v.reason
    assert v.reason.startswith("QNNExecutionProvider (HTP)")


def test_qnn_control_flow() -> None:
    p = profiles.load_profile("qnn")
    for op in ("Loop", "Scan"):
        v = evaluate(p, NodeFacts(op_type=op, opset=17, input_shapes=((),)))
        assert (v.claimed, v.kind) == (False, "op"), op
    # onnxruntime-qnn 2.7.0 takes an If whose branches yield plain tensors ...
    plain = NodeFacts(
        op_type="If", opset=17, input_shapes=((),), output_shapes=((2,),), output_dtypes=("float",)
    )
    assert evaluate(p, plain).claimed
    # ... but not one yielding a sequence (shape unknown), nor one with dynamic shapes.
    seq = NodeFacts(op_type="If", opset=17, input_shapes=((),), output_shapes=(None,))
    assert not evaluate(p, seq).claimed
    dyn = NodeFacts(op_type="If", opset=17, input_shapes=((),), output_shapes=(("n",),))
    assert evaluate(p, dyn).kind == "shape"


QNN_CLAIMED = [
    ("Add-float", single("Add", [X4, ("b", "float", [1, 3, 8, 8])], [Y4])),
    (
        "BatchNormalization-constant-scale",
        single(
            "BatchNormalization",
            [
                X4,
                ("scale", "float", [3]),
                ("b", "float", [3]),
                ("m", "float", [3]),
                ("v", "float", [3]),
            ],
            [Y4],
            inits={k: np.ones(3, np.float32) for k in ("scale", "b", "m", "v")},
        ),
    ),
    (
        "Conv-opset-7",
        single(
            "Conv",
            [X4, ("w", "float", [3, 3, 3, 3])],
            [("y", "float", None)],
            opset=7,
            inits={"w": W},
        ),
    ),
]


@pytest.mark.parametrize("model", [c[1] for c in QNN_CLAIMED], ids=[c[0] for c in QNN_CLAIMED])
def test_qnn_htp_claims(model: onnx.ModelProto) -> None:
    v = verdict("qnn", model)
    assert v.claimed, v.reason
    assert v.fails_after_claim is None


def test_qnn_partitioning_quirks() -> None:
    p = profiles.load_profile("qnn")
    assert set(p.partitioning.drop_single_op_partitions) == {"QuantizeLinear", "DequantizeLinear"}
    assert p.partitioning.constant_only_partition_fails
    assert p.requires_static_shapes and p.layout == "NHWC" and p.kind == "compiling"
    assert not p.cpu_preferred_shape_nodes


def test_openvino_claims_opset23_attention_then_fails() -> None:
    q = ("q", "float", [1, 2, 4, 8])
    m = single(
        "Attention",
        [q, ("k", "float", [1, 2, 4, 8]), ("v", "float", [1, 2, 4, 8])],
        [("y", "float", None)],
        opset=23,
    )
    v = verdict("openvino", m)
    assert v.claimed
    assert v.fails_after_claim is not None and "Attention" in v.fails_after_claim


def test_openvino_claims_if_with_dynamic_rank_outputs_then_fails() -> None:
    v = evaluate(
        profiles.load_profile("ov"),
        NodeFacts(
            op_type="If",
            opset=17,
            input_dtypes=("bool",),
            input_shapes=((1,),),
            output_dtypes=("float",),
            output_shapes=(None,),
        ),
    )
    assert v.claimed and v.fails_after_claim is not None
    static = evaluate(
        profiles.load_profile("ov"),
        NodeFacts(op_type="If", opset=17, input_shapes=((1,),), output_shapes=((2, 3),)),
    )
    assert static.claimed and static.fails_after_claim is None


def test_openvino_refuses_lone_only_in_model_ops_in_tiny_models() -> None:
    m = single(
        "Slice",
        [("x", "float", [4]), ("s", "int64", [1]), ("e", "int64", [1])],
        [("y", "float", None)],
    )
    v = verdict("openvino", m)
    assert (v.claimed, v.kind) == (False, "constraint"), v.reason
    f = facts_from_model(m)
    big = replace(f, graph_node_count=10)
    assert evaluate(profiles.load_profile("openvino"), big).claimed


def test_openvino_partitioning_quirks() -> None:
    p = profiles.load_profile("openvino")
    assert p.partitioning.min_partition_nodes == 2
    assert set(p.partitioning.drop_if_output_used_outside) == {"Conv", "Identity"}


@pytest.mark.parametrize(
    ("ep", "expected"),
    [
        ("cpu", False),
        ("cuda", True),
        ("dml", True),
        ("webgpu", True),
        ("cann", True),
        ("qnn", False),
        ("openvino", False),
        ("tensorrt", False),
        ("coreml", False),
        ("nnapi", False),
    ],
)
def test_cpu_preferred_shape_nodes(ep: str, expected: bool) -> None:
    assert profiles.load_profile(ep).cpu_preferred_shape_nodes is expected


def test_cpu_refuses_models_above_its_max_opset() -> None:
    cpu = profiles.load_profile("cpu")
    above = (cpu.opsets["ai.onnx"].max or 0) + 1  # the installed ORT's limit (ort_versions)
    v = evaluate(cpu, NodeFacts(op_type="Relu", opset=above, since_version=14))
    assert (v.claimed, v.kind) == (False, "revision")
    assert f"opset {above}" in v.reason


def test_cpu_claims_common_ops_with_their_types() -> None:
    cpu = profiles.load_profile("cpu")
    assert verdict("cpu", single("Add", [X4, ("b", "float", [1, 3, 8, 8])], [Y4])).claimed
    v = evaluate(
        cpu,
        NodeFacts(op_type="Relu", opset=17, input_dtypes=("bool",), input_type_params=("T",)),
    )
    assert (v.claimed, v.kind) == (False, "dtype")


def test_cpu_claims_function_ops_it_expands() -> None:
    # Gelu-20 has no CPU kernel in ORT 1.31 but an ONNX function body that ORT inlines.
    v = evaluate(
        profiles.load_profile("cpu"), NodeFacts(op_type="Gelu", opset=20, since_version=20)
    )
    assert v.claimed, v.reason


def test_qnn_claims_float64_graph_io_then_fails_to_compose() -> None:
    # Measured: QNN validates e.g. a float64 MaxPool, then "Failed to compose Qnn graph".
    m = single("MaxPool", [("x", "double", [1, 1, 8])], [("y", "double", None)], kernel_shape=[2])
    v = verdict("qnn", m)
    assert v.claimed
    assert v.fails_after_claim is not None and "double graph input" in v.fails_after_claim


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("BatchNormalization", {"training_mode": 1}),
        ("ScatterND", {"reduction": "max"}),
        ("QuantizeLinear", {"block_size": 2}),
    ],
)
def test_openvino_claims_then_fails_to_compile(op: str, attrs: dict[str, Any]) -> None:
    ov = profiles.load_profile("openvino")
    v = evaluate(ov, NodeFacts(op_type=op, opset=21, attributes=attrs))
    assert v.claimed and v.fails_after_claim is not None, v.reason
    ok = evaluate(ov, NodeFacts(op_type=op, opset=21))
    assert ok.claimed and ok.fails_after_claim is None


def test_qnn_takes_float64_inside_a_graph_but_not_on_its_boundary() -> None:
    # EP-BEHAVIOUR: float64 is accepted and run as float32 -- inside the graph. On a graph
    # input/output the single-node measurements show Add refused.
    qnn = profiles.load_profile("qnn")
    inner = NodeFacts(
        op_type="Add",
        opset=17,
        input_dtypes=("double", "double"),
        output_dtypes=("double",),
        input_shapes=((2, 3), (2, 3)),
        output_shapes=((2, 3),),
    )
    assert evaluate(qnn, inner).claimed
    edge = replace(inner, graph_inputs=frozenset({0, 1}))
    v = evaluate(qnn, edge)
    assert (v.claimed, v.kind) == (False, "dtype")
    assert "graph input" in v.reason


def test_facts_key_covers_every_field_the_evaluator_can_read() -> None:
    """The assignment analysis shares verdicts between nodes with equal keys: a field
    missing from the key would hand one node another node's verdict."""
    import dataclasses

    base = NodeFacts(
        op_type="Conv",
        since_version=11,
        opset=17,
        input_dtypes=("float",),
        output_dtypes=("float",),
        input_type_params=("T",),
        output_type_params=("T",),
        input_shapes=((1, 3, 8, 8),),
        output_shapes=((1, 3, 8, 8),),
        attributes={"pads": [0, 0, 0, 0], "group": 1},
        graph_node_count=5,
        name="a",
    )
    changed = {
        "op_type": "Relu",
        "domain": "com.microsoft",
        "since_version": 1,
        "opset": 11,
        "input_dtypes": ("float16",),
        "output_dtypes": ("float16",),
        "input_type_params": ("T1",),
        "output_type_params": ("T1",),
        "input_shapes": (("N", 3, 8, 8),),
        "output_shapes": (None,),
        "constant_inputs": frozenset({0}),
        "dequantized_inputs": frozenset({0}),
        "graph_inputs": frozenset({0}),
        "graph_outputs": frozenset({0}),
        "absent_inputs": frozenset({0}),
        "absent_outputs": frozenset({0}),
        "attributes": {"pads": [1, 1, 1, 1], "group": 1},
        "graph_node_count": 6,
        "pad_room": -1,
        "index_room": -1,
        "known_inputs": frozenset({0}),
        "nonfinite_scale": True,
        "dequantized_scales": (1.0000153, 1.0000153, 2.0, 2.0),
    }
    fields = {f.name for f in dataclasses.fields(NodeFacts)} - {"name"}
    assert fields == set(changed), "a new NodeFacts field must go into NodeFacts.key()"
    for name, value in changed.items():
        assert dataclasses.replace(base, **{name: value}).key() != base.key(), name
    assert dataclasses.replace(base, name="b").key() == base.key()
    hash(base.key())


@pytest.mark.parametrize("profile_id", ["qnn-htp", "nnapi", "coreml-neuralnetwork", "cpu"])
def test_static_dim_values_never_change_a_verdict(profile_id: str) -> None:
    """``NodeFacts.key`` counts positive static dims as 1; the evaluator must agree."""
    import dataclasses

    profile = profiles.get_profile(profile_id)
    for op, rank in (("Conv", 4), ("MatMul", 3), ("Softmax", 2), ("Resize", 5), ("Relu", 6)):
        small = NodeFacts(
            op_type=op,
            opset=17,
            input_dtypes=("float",),
            output_dtypes=("float",),
            input_shapes=((1,) * rank,),
            output_shapes=((1,) * rank,),
        )
        large = dataclasses.replace(
            small, input_shapes=((7,) * rank,), output_shapes=((3,) * rank,)
        )
        assert small.key() == large.key()
        assert evaluate(profile, small) == evaluate(profile, large), (op, rank)


@pytest.mark.parametrize("profile_id", ["qnn-htp", "nnapi", "vitisai", "cpu"])
def test_generated_dim_names_never_change_a_verdict(profile_id: str) -> None:
    """``NodeFacts.key`` counts every name shape inference made up (unk__12) as one: the
    evaluator shows them all as "?"; a name the model gave (batch) stays a key of its own."""
    import dataclasses

    profile = profiles.get_profile(profile_id)
    for op, rank in (("Conv", 4), ("MatMul", 3), ("Softmax", 2), ("Reshape", 3)):
        first = NodeFacts(
            op_type=op,
            opset=17,
            input_dtypes=("float",),
            output_dtypes=("float",),
            input_shapes=(("unk__1", *(8,) * (rank - 1)),),
            output_shapes=(("unk__2", "unk__3", *(8,) * (rank - 2)),),
        )
        other = dataclasses.replace(
            first,
            input_shapes=(("unk__70", *(8,) * (rank - 1)),),
            output_shapes=(("unk__71", "unk__9", *(8,) * (rank - 2)),),
        )
        named = dataclasses.replace(first, input_shapes=(("batch", *(8,) * (rank - 1)),))
        assert first.key() == other.key() != named.key()
        assert evaluate(profile, first) == evaluate(profile, other), (op, rank)


def test_graph_sizes_above_every_profiles_limit_share_one_key() -> None:
    """Bodies of different sizes share evaluations; sizes a profile asks about do not."""
    import dataclasses

    ov = profiles.get_profile("openvino-cpu")
    cap = node_count_cap([ov, profiles.get_profile("qnn-htp")])
    assert cap == 3  # OpenVINO's "alone in a model of at most 3 nodes" rule
    facts = NodeFacts(op_type="Relu", opset=17, input_dtypes=("float",), output_dtypes=("float",))
    sized = {n: dataclasses.replace(facts, graph_node_count=n) for n in (2, 3, 4, 50, 5000)}
    assert sized[4].key(cap) == sized[50].key(cap) == sized[5000].key(cap)
    assert len({sized[2].key(cap), sized[3].key(cap), sized[4].key(cap)}) == 3
    assert evaluate(ov, sized[4]) == evaluate(ov, sized[5000])
    assert node_count_cap([profiles.get_profile("cpu")]) == 0


# -- a revision newer than an older ORT loads ------------------------------------------


@pytest.mark.parametrize(
    ("ort", "opset", "claimed"),
    [("1.31", 28, False), ("1.24", 26, False), ("1.31", 26, True), ("1.32", 28, True)],
)
def test_cpu_revision_newer_than_the_target_ort_is_not_claimed(
    ort: str, opset: int, claimed: bool
) -> None:
    """The CPU profile lists ORT 1.32's Unique-28 kernel; under an older ORT (its table row's
    opset limit) a model at an opset that ORT does not load is never claimed."""
    p = profiles.build.for_ort(profiles.get_profile("cpu"), ort)
    m = single("Unique", [("x", "float", [6])], [("y", "float", [None])], opset=opset)
    v = evaluate(p, facts_from_model(m))
    assert v.claimed is claimed, v.reason
    if not claimed:
        assert f"opset {opset}" in v.reason
