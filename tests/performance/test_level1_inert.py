"""The level-1 worker is skipped only where ORT's level-1 graph is the model itself.

``inert_reason`` (``rules/ort_level1.json``) says whether any of ORT's level-1
optimizations could match a model. For models it calls inert, the real worker's graph
has the same nodes, and the lint's findings and partitions are the same with and
without the worker; for models with something to optimize it names what.
"""

from __future__ import annotations

from typing import Any

import onnx
import pytest

from onnxlint import engine
from onnxlint.analyses import level1
from onnxlint.config import Config
from onnxlint.data import load_json
from tests.conftest import parse

INERT = {
    "one node": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
    y = Sigmoid(x)
}
""",
    "a chain with an initializer": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    a = Tanh(x)
    b = Max(a, w)
    c = Exp(b)
    y = Floor(c)
}
""",
    "a chain of two inputs": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,N] x, float[2,N] x2) => (float[2,N] y) {
    m = Min(x, x2)
    n = Neg(m)
    y = Round(n)
}
""",
}

MIGHT_CHANGE = {
    "identity": ("y = Identity(x)", "Identity"),
    "two equal nodes": ("a = Tanh(x)\n    b = Tanh(x)\n    y = Max(a, b)", "common-subexpression"),
    "constant input only": ("c = Tanh(w)\n    y = Max(x, c)", "constant folding"),
    "dead node": ("d = Exp(x)\n    y = Tanh(x)", "no consumer"),
    # ORT writes two branches in an order of its own (the lint names nodes by position)
    "two branches": ("a = Exp(x)\n    b = Neg(x)\n    y = Max(a, b)", "not unique"),
    "custom domain": ("y = com.example.Op(x)", "plain ONNX domain"),
    "not on the list": ("y = Softsign(x)", "not on the list"),
    "identity-like op": ("y = Relu(x)", "not on the list"),
}

TEMPLATE = """\
<ir_version: 8, opset_import: ["" : 17COM]>
g (float[N,4] x) => (float[N,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    BODY
}
"""


def _nodes(model: onnx.ModelProto) -> list[tuple[Any, ...]]:
    # attributes by name: ORT writes them in an order of its own, the lint reads them by name
    return [
        (
            n.op_type,
            n.domain,
            list(n.input),
            list(n.output),
            sorted(a.SerializeToString() for a in n.attribute),
        )
        for n in model.graph.node
    ]


def _worker_graph(model: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch) -> onnx.ModelProto:
    with monkeypatch.context() as m:
        m.setattr(level1, "inert_reason", lambda model: "forced")
        job = level1.Level1Job(model, use_cache=False).start()
        try:
            assert job.source == "worker"
            graph, note = job.result()
        finally:
            job.close()
    assert graph is not None, note
    return graph


def _one_node(op: str) -> onnx.ModelProto:
    """``op`` on a float32 [2,3,4,5] input (two for Max and Min; scale and bias as
    initializers for InstanceNormalization)."""
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 5])
    inputs, inits, names = [x], [], ["x"]
    if op in ("Max", "Min"):
        inputs.append(h.make_tensor_value_info("x2", onnx.TensorProto.FLOAT, [2, 3, 4, 5]))
        names.append("x2")
    if op == "InstanceNormalization":
        inits = [
            h.make_tensor("scale", onnx.TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]),
            h.make_tensor("bias", onnx.TensorProto.FLOAT, [3], [0.5, 0.25, 0.125]),
        ]
        names += ["scale", "bias"]
    attrs = {"size": 3} if op == "LRN" else {}
    node = h.make_node(op, names, ["y"], **attrs)
    graph = h.make_graph([node], "g", inputs, [], initializer=inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    model.graph.output.extend(inferred.graph.value_info[:1] or [])
    if not model.graph.output:
        model.graph.output.append(h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None))
    return model


@pytest.mark.parametrize("op", load_json("ort_level1.json")["inert_ops"])
def test_every_inert_op_is_left_alone_by_the_real_worker(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _one_node(op)
    assert level1.inert_reason(model) is None
    job = level1.Level1Job(model, use_cache=False).start()
    assert job.source == "inert"
    own, _ = job.result()
    assert own is not None
    real = _worker_graph(model, monkeypatch)
    assert _nodes(real) == _nodes(own)


def test_no_inert_op_is_named_by_a_transformer_or_defined_by_a_function() -> None:
    data = load_json("ort_level1.json")
    named = {op for t in data["transformers"] for op in t["ops"]}
    assert not named & set(data["inert_ops"])
    for op in data["inert_ops"]:
        for opset in range(7, 22):
            try:
                schema = onnx.defs.get_schema(op, opset, "")
            except onnx.defs.SchemaError:
                continue
            assert not (schema.has_function or schema.has_context_dependent_function), (op, opset)


@pytest.mark.parametrize("name", sorted(INERT))
def test_inert_models_are_their_own_level1_graph(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = parse(INERT[name])
    assert level1.inert_reason(model) is None
    job = level1.Level1Job(model, use_cache=False).start()
    assert job.source == "inert"
    graph, _ = job.result()
    assert graph is not None and graph is not model
    real = _worker_graph(model, monkeypatch)
    assert _nodes(real) == _nodes(graph)
    assert {t.name for t in real.graph.initializer} == {t.name for t in model.graph.initializer}


@pytest.mark.parametrize("name", sorted(INERT))
@pytest.mark.parametrize("ep", ["qnn", "openvino"])
def test_inert_models_lint_the_same_without_the_worker(
    name: str, ep: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = parse(INERT[name])
    cfg = Config(confirm={"cache": False})
    lean = engine.lint(model, eps=[ep], config=cfg)
    with monkeypatch.context() as m:
        m.setattr(level1, "inert_reason", lambda model: "forced")
        started: list[str] = []
        real_start = level1.Level1Job.start

        def start(job: level1.Level1Job) -> level1.Level1Job:
            out = real_start(job)
            started.append(str(job.source))
            return out

        m.setattr(level1.Level1Job, "start", start)
        full = engine.lint(model, eps=[ep], config=cfg)
    assert started == ["worker"]
    assert lean.diagnostics == full.diagnostics
    assert lean.to_dict() == full.to_dict()
    assert any(p.level == "optimized" for p in lean.partitions)


@pytest.mark.parametrize("name", sorted(MIGHT_CHANGE))
def test_models_with_something_to_optimize_get_the_worker(name: str) -> None:
    body, why = MIGHT_CHANGE[name]
    com = ', "com.example" : 1' if "com." in body else ""
    model = parse(TEMPLATE.replace("BODY", body).replace("COM", com))
    reason = level1.inert_reason(model)
    assert reason is not None and why in reason


def test_float16_is_not_inert() -> None:
    # ORT's CPU EP casts float16 around ops it runs in float32: its graph has Casts
    model = parse(INERT["one node"].replace("float[", "float16["))
    assert "not a float32 tensor" in str(level1.inert_reason(model))


def test_equal_initializers_and_subgraphs_are_not_inert() -> None:
    twins = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}, float[4] w2 = {1.0, 2.0, 3.0, 4.0}> {
    a = Max(x, w)
    y = Min(a, w2)
}
"""
    assert "constant sharing" in str(level1.inert_reason(parse(twins)))
    assert level1.inert_reason(parse(twins.replace("w2 = {1.0", "w2 = {9.0"))) is None
    loop = parse(INERT["one node"])
    branch = onnx.helper.make_graph([], "b", [], [onnx.helper.make_tensor_value_info("x", 1, None)])
    loop.graph.node.append(
        onnx.helper.make_node("If", ["x"], ["z"], then_branch=branch, else_branch=branch)
    )
    assert "If is not on the list" in str(level1.inert_reason(loop))


def test_the_table_names_every_level1_transformer_with_provenance() -> None:
    data = load_json("ort_level1.json")
    assert "graph_transformer_utils.cc" in data["provenance"]["source"]
    names = {t["name"] for t in data["transformers"]}
    # a sample of ORT's level-1 list: rewrite rules and whole-graph transformers
    assert {"EliminateIdentity", "ConvBNFusion", "ConstantFolding", "TransposeOptimizer"} <= names
    for t in data["transformers"]:
        assert t["ops"] or t.get("condition"), t["name"]
