"""The shape analysis: one inference pass, subgraphs included, symbolic names kept, failures kept."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

from onnxlint.analyses.shapes import Shapes, ValueType, collect_value_types, is_generated_dim
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.index import ModelIndex
from onnxlint.loader import load

from ..conftest import light_models, parse

H = '<ir_version: 8, opset_import: ["" : 17]>\n'


def shapes_of(text: str) -> Shapes:
    model = parse(text)
    ctx = LintContext(loaded=load(model), index=ModelIndex(model), config=Config())
    return ctx.analysis(Shapes)


@pytest.mark.parametrize(
    ("vt", "static", "unknown"),
    [
        (ValueType("float", (1, 3)), True, False),
        (ValueType("float", ()), True, False),
        (ValueType("float", ("batch", 3)), False, False),
        (ValueType("float", (None, 3)), False, True),
        (ValueType("float", None), False, True),
    ],
)
def test_value_type_predicates(vt: ValueType, static: bool, unknown: bool) -> None:
    assert vt.is_static is static
    assert vt.has_unknown is unknown


@pytest.mark.parametrize(
    ("name", "generated"),
    [("unk__3", True), ("NonZero_11_o0__d1", True), ("batch", False), ("2*sequence", False)],
)
def test_generated_dim_names(name: str, generated: bool) -> None:
    assert is_generated_dim(name) is generated


SYMBOLIC = (
    H
    + """g (float[batch, sequence, 16] x) => (float[batch, sequence, 4, 4] y) {
    s = Shape(x)
    i = Constant<value = int64[2] {0, 1}>()
    bs = Gather(s, i)
    c = Constant<value = int64[2] {4, 4}>()
    shp = Concat<axis=0>(bs, c)
    t = Reshape(x, shp)
    y = Relu(t)
}"""
)
SUBGRAPHS = (
    H
    + """g (bool c, float[2, 3] x) => (float[2, 3] y) {
    y = If(c) <then_branch = t () => (float[2, 3] a) { inner = Relu(x)
 a = Neg(inner) }, else_branch = e () => (float[2, 3] b) { b = Neg(x) }>
}"""
)


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        (SYMBOLIC, "x", ValueType("float", ("batch", "sequence", 16))),
        (SYMBOLIC, "s", ValueType("int64", (3,))),
        (SYMBOLIC, "t", ValueType("float", ("batch", "sequence", 4, 4))),
        (SYMBOLIC, "c", ValueType("int64", (2,))),
        (SUBGRAPHS, "inner", ValueType("float", (2, 3))),
        (SUBGRAPHS, "a", ValueType("float", (2, 3))),
        (
            H + "g (float[8] x) => (int64[1, N] y) {\n n = NonZero(x)\n y = Identity(n)\n}",
            "n",
            None,
        ),
    ],
)
def test_value_types(text: str, name: str, expected: ValueType | None) -> None:
    got = shapes_of(text).value_type(name)
    if expected is None:  # NonZero's count dim: ONNX invents a name, we report it as unknown
        assert got is not None and got.shape is not None and got.shape[1] is None
    else:
        assert got == expected


def test_values_of_one_declared_type_share_it_and_others_keep_their_own() -> None:
    # the table reads each distinct serialized type once; equal types are one object
    model = parse(
        H
        + "g (float[N,3] a, float[N,3] b, float[N,4] c, float[unk__1,3] d) => (float[N,3] y)"
        + " { y = Add(a, b) }"
    )
    table = collect_value_types(model)
    assert table["a"] is table["b"] is table["y"] == ValueType("float", ("N", 3))
    assert table["c"] == ValueType("float", ("N", 4))
    assert table["d"] == ValueType("float", (None, 3))  # a generated name is not a name
    # equal types from different bytes (a denotation, which the type does not keep) too
    dim = model.graph.input[3].type.tensor_type.shape.dim[0]
    dim.dim_param, dim.denotation = "N", "DATA_BATCH"
    table = collect_value_types(model)
    assert table["d"] is table["a"]


def test_inference_failure_is_recorded_and_the_rest_still_inferred() -> None:
    shapes = shapes_of(
        H + "g (float[2,4] x, float[3,5] w) => (float[2,4] y) {\n s = Add(x, w)\n y = Relu(x)\n}"
    )
    assert shapes.errors and "Incompatible dimensions" in shapes.errors[0]
    assert shapes.value_type("y") == ValueType("float", (2, 4))


def test_ort_fills_what_onnx_cannot() -> None:
    shapes = shapes_of(
        '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>\n'
        "g (float[batch, 4] x) => (float[batch, 4] y) {\n t = com.microsoft.BiasAdd(x, x, x)\n y = Relu(t)\n}"
    )
    assert shapes.used_symbolic
    assert shapes.value_type("t") == ValueType("float", ("batch", 4))


def test_symbolic_inference_never_writes_files(tmp_path: Path, monkeypatch) -> None:
    """ORT's own infer_shapes saves sym_shape_infer_temp.onnx when it is incomplete."""
    monkeypatch.chdir(tmp_path)
    shapes = shapes_of(
        '<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>\n'
        "g (float[1, 4] x) => (float[1, 4] y) {\n t = custom.Mystery(x)\n y = Relu(t)\n}"
    )
    assert shapes.value_type("t") is None
    assert os.listdir(tmp_path) == []


def test_symbolic_pass_is_skipped_for_huge_models(monkeypatch) -> None:
    import onnxlint.analyses.shapes as mod

    monkeypatch.setattr(mod, "SYMBOLIC_MAX_NODES", 1)
    shapes = shapes_of(
        '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>\n'
        "g (float[batch, 4] x) => (float[batch, 4] y) {\n t = com.microsoft.BiasAdd(x, x, x)\n y = Relu(t)\n}"
    )
    assert not shapes.used_symbolic and shapes.symbolic_skipped
    assert shapes.value_type("t") is None


@pytest.mark.parametrize("path", light_models()[:6], ids=lambda p: p.name)
def test_light_models_are_fully_static(path: Path) -> None:
    model = onnx.load(path)
    shapes = Shapes.of_model(model)
    assert shapes.errors == []
    # every value a node reads has a static type (Dropout's unused mask output may have none)
    read = {i for n in model.graph.node for i in n.input if i}
    assert all((vt := shapes.value_type(name)) is not None and vt.is_static for name in read)


FLATTENED = (
    H
    + """g (float[1, 3, 1024, 1024] x) => (float[3145728] y) {
    m = Constant<value = int64[1] {-1}>()
    r = Reshape(x, m)
    y = Add(r, r)
}"""
)
CONSTANT_OF_HUGE_SHAPE = (
    H
    + """g (float[2] x) => (float[2] y) {
    c = Constant<value = int64[1] {1000000000}>()
    z = ConstantOfShape(c)
    s = Shape(z)
    n = Size(s)
    y = Relu(x)
}"""
)
ELEMENTWISE = H + "g (float[2, 3] x) => (float[2, 3] y) {\n y = Relu(x)\n}"
# nothing rank-1 is declared: only inference shows the flattened tensor
FLATTENED_UNDECLARED = (
    H
    + """g (float[1, 3, 1024, 1024] x) => (float[1, 3, 1024, 1024] y) {
    m = Constant<value = int64[1] {-1}>()
    r = Reshape(x, m)
    a = Add(r, r)
    s = Shape(x)
    y = Reshape(a, s)
}"""
)


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        (SYMBOLIC, [False, True]),  # computes shapes from values: data propagation pays off
        (ELEMENTWISE, [False]),  # nothing for data propagation to evaluate
        # ONNX's data propagation costs memory per element of every rank-1 tensor (a
        # fuzzed 10^9-element input took 18 GB): skipped when rank-1 tensors are large
        (FLATTENED, [False]),
        (FLATTENED_UNDECLARED, [False]),
        # every declared size is small; the 10^9-element tensor exists only once inferred
        (CONSTANT_OF_HUGE_SHAPE, [False]),
    ],
)
def test_data_propagation_only_where_useful_and_affordable(
    monkeypatch, text: str, passes: list[bool]
) -> None:
    calls: list[bool] = []
    real = onnx.shape_inference.infer_shapes

    def spy(model, check_type=False, strict_mode=False, data_prop=False):  # type: ignore[no-untyped-def]
        calls.append(data_prop)
        return real(model, check_type, strict_mode, data_prop)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", spy)
    shapes = shapes_of(text)
    assert calls == passes
    assert shapes.errors == []


def test_inferred_copy_is_handed_over_once() -> None:
    """The assignment takes the inferred model; nobody else keeps a second large copy."""
    shapes = shapes_of(SYMBOLIC)
    inferred = shapes.take_inferred()
    assert isinstance(inferred, onnx.ModelProto) and len(inferred.graph.value_info) > 0
    assert shapes.take_inferred() is None
    bare = Shapes.of_model(parse(SYMBOLIC))
    assert bare.take_inferred() is not None and bare.take_inferred() is None
