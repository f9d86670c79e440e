"""Shape values ORT's graph resolution knows at session creation, as constants.

ORT resolves some computations on a tensor's shape to the values they have (its own data
propagation, ``core/graph/data_propagation``, and ONNX's for a few ops); ONNX's inference
without data propagation does not. :func:`constant_shapes` replaces, in a working copy,
each node whose output ORT knows that way by the ``Constant`` it evaluates to, so that a
plain inference pass then sees what ORT sees (:mod:`onnxlint.analyses.session_types`).
"""

from __future__ import annotations

from typing import Any

import onnx


def copy_node(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def _const_ints(g: onnx.GraphProto, name: str) -> tuple[list[int], bool] | None:
    """The int values of initializer or Constant ``name`` of ``g`` and whether it is a
    scalar; None when it is neither or not an int tensor."""
    from onnxlint.tensors import inline_array

    tensor = next((t for t in g.initializer if t.name == name), None)
    if tensor is None:
        node = next((n for n in g.node if n.op_type == "Constant" and name in n.output), None)
        tensor = next((a.t for a in node.attribute if a.name == "value"), None) if node else None
    if tensor is None or tensor.data_type not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
        return None
    if len(tensor.dims) > 1 or (tensor.dims and tensor.dims[0] > 64):
        return None
    arr = inline_array(tensor, max_elements=64)  # never external data; None when malformed
    if arr is None:
        return None
    return [int(v) for v in arr.reshape(-1)], not tensor.dims


def _shape_value_op(
    g: onnx.GraphProto, n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> tuple[list[int], bool] | None:
    """(value, is scalar) of a Gather or Unsqueeze of shape value ``n.input[0]``."""
    data = values[n.input[0]]
    attrs = {a.name: a for a in n.attribute}
    if n.op_type == "Gather":
        axis = attrs["axis"].i if "axis" in attrs else 0
        idx = _const_ints(g, n.input[1]) if len(n.input) > 1 else None
        if axis != 0 or idx is None or n.input[0] in scalars:
            return None
        ints, is_scalar = idx
        if any(not -len(data) <= i < len(data) for i in ints):
            return None
        return [data[i] for i in ints], is_scalar
    # Unsqueeze of a scalar to a 1-D vector
    if n.input[0] not in scalars:
        return None
    if len(n.input) > 1 and n.input[1]:
        axes = _const_ints(g, n.input[1])
        ok = axes is not None and axes[0] in ([0], [-1])
    else:
        ok = "axes" in attrs and list(attrs["axes"].ints) in ([0], [-1])
    return (list(data), False) if ok else None


def constant_shapes(
    work: onnx.ModelProto,
    table: dict[str, Any],
    originals: dict[tuple[int, int], onnx.NodeProto],
    values: dict[str, list[int]],
    scalars: set[str],
) -> bool:
    """Replace, in ``work``, by the ``Constant`` it evaluates to: each ai.onnx ``Shape``
    whose input ``table`` knows statically, each ``Concat`` of such shape values only,
    each ``Gather`` (axis 0, constant indices) or ``Unsqueeze`` (of a scalar, to 1-D)
    of one, and each ``Cast`` of a vector one (ORT propagates those; a Concat with an
    initializer or a Slice it does not: measured, see ``session_types``). The originals
    go to ``originals``, the vectors to ``values`` (a scalar as a one-element list, its
    name also in ``scalars``); returns whether any node was replaced."""
    from onnxlint.analyses.shapes import iter_graphs

    changed = False
    # ORT resolves a Concat of shape values through ONNX's data propagation, which Concat
    # has from revision 13 on (measured: QNN's "Cannot get shape" for Reshape(y,
    # Concat(Shape(x))) at opsets 11 and 12, not at 13)
    onnx_opset = next((int(o.version) for o in work.opset_import if o.domain in ("", "ai.onnx")), 0)
    for gi, g in enumerate(iter_graphs(work.graph)):
        for ni, n in enumerate(g.node):
            if n.domain not in ("", "ai.onnx") or (gi, ni) in originals or not n.output:
                continue
            dims: list[int] | None = None
            scalar = False
            to: int = onnx.TensorProto.INT64
            if n.op_type in ("Gather", "Unsqueeze") and n.input and n.input[0] in values:
                got = _shape_value_op(g, n, values, scalars)
                if got is not None:
                    dims, scalar = got
            if n.op_type == "Shape" and n.input:
                vt = table.get(n.input[0])
                if vt is not None and vt.is_static:
                    ints = {a.name: a.i for a in n.attribute if a.type == onnx.AttributeProto.INT}
                    rank = len(vt.shape)
                    start, end = ints.get("start", 0), ints.get("end", rank)
                    dims = [int(d) for d in vt.shape][slice(start, end)]
            elif (
                n.op_type == "Concat"
                and onnx_opset >= CONCAT_PROPAGATES
                and n.input
                and all(i in values and i not in scalars for i in n.input if i)
            ):
                dims = [d for i in n.input if i for d in values[i]]
            elif n.op_type == "Squeeze" and n.input and n.input[0] in values:
                dims, scalar = _squeezed_shape_value(g, n, values, scalars)
            elif (
                n.op_type == "Cast"
                and n.input
                and n.input[0] in values
                and n.input[0] not in scalars
                and _cast_to(n) in _CAST_CONSTANT_TYPES
            ):
                dims, to = list(values[n.input[0]]), _cast_to(n)
            elif n.op_type in _PROPAGATED_ARITHMETIC and n.input and n.input[0] in scalars:
                got_scalar = _arithmetic_of_scalars(n, values, scalars)
                if got_scalar is not None:
                    dims, scalar = [got_scalar], True
            elif n.op_type == "Range" and _range_of_values(g, n, values, scalars, table):
                originals[(gi, ni)] = copy_node(n)
                g.node[ni].CopyFrom(_range_constant(g, n, values, scalars))
                changed = True
                continue
            if dims is None:
                continue
            values[n.output[0]] = dims
            if scalar:
                scalars.add(n.output[0])
            shape = [] if scalar else [len(dims)]
            value = onnx.helper.make_tensor("value", to, shape, dims)
            originals[(gi, ni)] = copy_node(n)
            g.node[ni].CopyFrom(
                onnx.helper.make_node("Constant", [], [n.output[0]], n.name, value=value)
            )
            changed = True
    return changed


#: the element types a Cast of a shape value is replaced by a Constant of. ORT's graph
#: resolution passes a shape vector through Cast whatever its target type (measured with
#: ORT 1.32 + onnxruntime-qnn 2.7.0, named dims fixed, optimizations disabled: Reshape(x,
#: Cast(Shape(x))), through int32 and back, and through float and back, have static
#: outputs), and not a scalar one: ``Unsqueeze(Cast(Cast(Gather(Shape(x), 0))))`` in a
#: Concat leaves the Reshape it sizes unsized. Seen first on basic-pitch's tf2onnx export,
#: whose Reshape reads ``Cast(Cast(Shape(x), int32), int64)``.
_CAST_CONSTANT_TYPES = frozenset(
    {
        onnx.TensorProto.INT64,
        onnx.TensorProto.INT32,
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.DOUBLE,
    }
)


def _cast_to(node: onnx.NodeProto) -> int:
    return next((a.i for a in node.attribute if a.name == "to"), 0)


#: the first Concat revision whose shape values ORT's graph resolution propagates
CONCAT_PROPAGATES = 13

#: longest Range whose output ORT's graph resolution sizes that is replaced by its value
_MAX_RANGE = 4096


#: the binary ops of scalar shape values ORT's graph resolution propagates
#: (``core/graph/data_propagation`` has Add, Sub, Mul and Div). Measured with ORT 1.32 +
#: onnxruntime-qnn 2.7.0 (named dims fixed, optimizations disabled):
#: ``Range(0, Add(Gather(Shape(x), 1), Gather(Shape(y), 1)), 1)`` (dynamo's total length of
#: a key/value cache, ``past + sequence``) has a static output, and so has a Slice ending
#: at the Unsqueeze of such a sum; QNN takes what follows. A sum of one-element vectors
#: (``Gather(Shape(x), [-1]) + [2]``, TorchScript's rotary halves and Swin's window shapes
#: on the corpus) sizes nothing, nor does one with a constant operand (onnx-asr's
#: resampler: ``Range(0, (160 * Shape(x)[1] + 441 - 1) / 441)`` stays unsized): only two
#: scalar shape values count here.
_PROPAGATED_ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div"})


def _arithmetic_of_scalars(
    n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> int | None:
    """An Add, Sub, Mul or Div of two scalar shape values: its value."""
    if len(n.input) != 2 or not all(name in scalars for name in n.input):
        return None
    a, b = (int(values[name][0]) for name in n.input)
    if n.op_type == "Add":
        out = a + b
    elif n.op_type == "Sub":
        out = a - b
    elif n.op_type == "Mul":
        out = a * b
    elif b == 0:
        return None
    else:  # C++ integer division: toward zero
        out = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return out


def _squeezed_shape_value(
    g: onnx.GraphProto, n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> tuple[list[int] | None, bool]:
    """A Squeeze (no axes, or axis 0) of a one-element shape value: that element, a scalar.

    Measured with ORT 1.32 (QNN's validation log, optimizations disabled, named dims
    fixed): ``Range(0, Squeeze(Shape(x)[0:1]), 1)`` of a dynamo attention mask has a
    static output, so ORT knows the squeezed element."""
    data = values[n.input[0]]
    if n.input[0] in scalars or len(data) != 1:
        return None, False
    axes = _const_ints(g, n.input[1]) if len(n.input) > 1 and n.input[1] else ([0], False)
    if axes is None or axes[0] not in ([0], [-1]):
        return None, False
    return list(data), True


def _scalar_of(
    g: onnx.GraphProto, name: str, values: dict[str, list[int]], scalars: set[str]
) -> int | None:
    if name in scalars:
        return values[name][0]
    got = _const_ints(g, name)
    return got[0][0] if got is not None and got[1] else None


def _range_of_values(
    g: onnx.GraphProto,
    n: onnx.NodeProto,
    values: dict[str, list[int]],
    scalars: set[str],
    table: dict[str, Any],
) -> bool:
    """Whether ``n`` is an integer Range whose start, limit and delta are scalar shape
    values or constants, one of them a shape value (ORT sizes its output; same
    measurement as :func:`_squeezed_shape_value`), of at most :data:`_MAX_RANGE` elements."""
    if len(n.input) != 3 or not any(i in scalars for i in n.input):
        return False
    if any(getattr(table.get(i), "dtype", "int64") not in (None, "int64") for i in n.input):
        return False
    got = [_scalar_of(g, i, values, scalars) for i in n.input]
    if any(v is None for v in got) or got[2] == 0:
        return False
    start, limit, delta = (int(v) for v in got if v is not None)
    return 0 <= len(range(start, limit, delta)) <= _MAX_RANGE


def _range_constant(
    g: onnx.GraphProto, n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> onnx.NodeProto:
    """The Constant a Range of :func:`_range_of_values` evaluates to (int64)."""
    start, limit, delta = (int(_scalar_of(g, i, values, scalars) or 0) for i in n.input)
    seq = list(range(start, limit, delta))
    value = onnx.helper.make_tensor("value", onnx.TensorProto.INT64, [len(seq)], seq)
    return onnx.helper.make_node("Constant", [], [n.output[0]], n.name, value=value)
