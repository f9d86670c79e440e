"""Element counts of inline tensor data (tensors.data_mismatch), the fact behind OL109 and
the level-1 / confirm refusal of corrupt tensors."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.tensors import data_mismatch, first_data_mismatch, stored_count


@pytest.mark.parametrize(
    "array",
    [
        np.zeros((2, 3), np.float32),
        np.arange(4, dtype=np.int64),
        np.zeros((), np.float16),
        np.array([True, False]),
        np.zeros((3,), np.complex64),
        np.zeros((2,), np.complex128),
        np.zeros((0, 5), np.float32),
        np.array(["a", "b"], dtype=object),
    ],
    ids=lambda a: f"{a.dtype}{list(a.shape)}",
)
def test_consistent_tensors_match_raw_and_typed(array: np.ndarray) -> None:
    raw = numpy_helper.from_array(array)
    typed = helper.make_tensor(
        "t", helper.np_dtype_to_tensor_dtype(array.dtype), array.shape, array.flatten().tolist()
    )
    assert data_mismatch(raw) is None
    assert data_mismatch(typed) is None
    assert stored_count(typed) == array.size


def test_four_bit_types_allow_the_padding_of_an_odd_count() -> None:
    typed = helper.make_tensor("q", TensorProto.INT4, [3], [1, 2, 3])  # two int32 entries
    raw = helper.make_tensor("q", TensorProto.INT4, [3], b"\x21\x03", raw=True)
    for t in (typed, raw):
        assert data_mismatch(t) is None
    t = helper.make_tensor("q", TensorProto.UINT4, [3], [1, 2, 3])
    t.dims[:] = [7]
    assert data_mismatch(t) == (7, 4)


def test_declared_count_larger_than_the_data() -> None:
    t = helper.make_tensor("z", TensorProto.INT64, [1], [0])
    t.dims[:] = [2**31]
    assert data_mismatch(t) == (2**31, 1)


def test_partial_raw_element_never_matches() -> None:
    t = numpy_helper.from_array(np.zeros(2, np.float32))
    t.raw_data = t.raw_data[:-1]
    assert data_mismatch(t) == (2, 0)


def test_unknown_counts_are_not_guessed() -> None:
    external = numpy_helper.from_array(np.zeros(4, np.float32), name="w")
    external.ClearField("raw_data")
    external.data_location = TensorProto.EXTERNAL
    external.external_data.add(key="location", value="w.bin")
    undefined = TensorProto(dims=[4], data_type=0)
    negative = TensorProto(dims=[-1], data_type=TensorProto.FLOAT)
    for t in (external, undefined, negative):
        assert data_mismatch(t) is None


def test_first_mismatch_is_found_inside_a_subgraph() -> None:
    model = onnx.parser.parse_model(
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[2] x) => (float[2] y) {
    [if0] y = If(c) <
        then_branch = t () => (float[2] a) {
            [k] w = Constant <value = float[2] {1.0, 2.0}> ()
            [m] a = Mul(x, w)
        },
        else_branch = e () => (float[2] b) { [n] b = Neg(x) }
    >
}
"""
    )
    assert first_data_mismatch(model) is None
    body = model.graph.node[0].attribute[0].g
    body.node[0].attribute[0].t.dims[:] = [3]
    found = first_data_mismatch(model)
    assert found is not None and found[2:] == (3, 2)


def test_shape_inference_without_the_weights_gives_the_same_model() -> None:
    """``dataless_copy`` + ``restore_data``: inference on a copy without large weights, data
    put back: the same bytes as inference on the model itself, the input untouched."""
    from onnxlint.analyses.shapes import infer_model
    from onnxlint.tensors import dataless_copy

    model = onnx.parser.parse_model(
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,64] x) => (float[N,8,8] y) <int64[3] shape = {0, 8, 8}> {
    [mm] h = MatMul(x, w)
    [r] y = Reshape(h, shape)
}
"""
    )
    model.graph.initializer.append(
        numpy_helper.from_array(np.arange(64 * 64, dtype=np.float32).reshape(64, 64), "w")
    )
    before = model.SerializeToString()
    light, left = dataless_copy(model, min_elements=100)
    assert set(left) == {"w"} and not light.graph.initializer[1].raw_data
    assert list(light.graph.initializer[1].dims) == [64, 64]
    assert light.graph.initializer[0].int64_data == [0, 8, 8]  # small: kept
    inferred, errors = infer_model(model)
    expected = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    assert errors == [] and inferred.SerializeToString() == expected.SerializeToString()
    assert model.SerializeToString() == before
    small, nothing = dataless_copy(model)  # below the default limit: no copy at all
    assert small is model and nothing == {}
