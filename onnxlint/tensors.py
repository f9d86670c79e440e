"""Tensor values and the tensors of a model, without touching the file system.

``onnx.numpy_helper.to_array`` follows a tensor's external-data location, relative to
the working directory unless told otherwise, so an analysis that called it on a model
from elsewhere could read any file the location names (and report its bytes). Every
value onnxlint reads from a tensor goes through :func:`inline_array` instead: it answers
only for data stored in the model itself and never opens anything.

:func:`iter_tensors` visits every tensor of a model that can hold data, external data
included: graph, subgraph and training-graph initializers, sparse initializers,
``TENSOR(S)`` and ``SPARSE_TENSOR(S)`` attributes wherever a node sits (main graph,
subgraphs, function bodies and their subgraphs, function attribute defaults).
Iterative, so deep nesting cannot overflow the stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import onnx

from onnxlint.index import stored_graphs
from onnxlint.names import node_labels

#: larger inline tensors are not decoded by :func:`inline_array` unless asked to
DEFAULT_MAX_ELEMENTS = 1 << 16


def is_external(tensor: onnx.TensorProto) -> bool:
    """True when the tensor's data is (or claims to be) stored outside the model."""
    return tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data) > 0


def element_count(tensor: onnx.TensorProto) -> int | None:
    """The number of elements the dims declare; None when a dim is negative."""
    count = 1
    for d in tensor.dims:
        if d < 0:
            return None
        count *= d
    return count


#: element types whose packed data holds two elements per byte (and per int32_data entry)
_PACKED_4BIT = frozenset(
    getattr(onnx.TensorProto, n)
    for n in ("INT4", "UINT4", "FLOAT4E2M1")
    if hasattr(onnx.TensorProto, n)
)
#: sub-byte types packed some other way; their counts are not checked
_PACKED_OTHER = frozenset(
    getattr(onnx.TensorProto, n)
    for n in ("INT2", "UINT2", "FLOAT6E2M3", "FLOAT6E3M2")
    if hasattr(onnx.TensorProto, n)
)
#: typed fields that hold one element per entry, by element type (complex: two per element)
_TYPED_FIELD: dict[int, tuple[str, int]] = {
    onnx.TensorProto.FLOAT: ("float_data", 1),
    onnx.TensorProto.COMPLEX64: ("float_data", 2),
    onnx.TensorProto.DOUBLE: ("double_data", 1),
    onnx.TensorProto.COMPLEX128: ("double_data", 2),
    onnx.TensorProto.INT64: ("int64_data", 1),
    onnx.TensorProto.UINT32: ("uint64_data", 1),
    onnx.TensorProto.UINT64: ("uint64_data", 1),
    onnx.TensorProto.STRING: ("string_data", 1),
}


def stored_count(tensor: onnx.TensorProto) -> int | None:
    """How many elements the tensor's inline data holds; None when that cannot be told
    without guessing (external data, a segment, an unknown or undefined element type).

    A packed 4-bit type counts two elements per byte, so the answer is the largest count
    the data can hold; :func:`data_mismatch` allows for the odd-count padding.
    """
    if is_external(tensor) or tensor.HasField("segment"):
        return None
    dtype = tensor.data_type
    if dtype in _PACKED_OTHER:
        return None
    if tensor.HasField("raw_data"):
        if dtype == onnx.TensorProto.STRING:
            return None  # strings are never raw
        # each read of a bytes field copies it (upb): read once, after the cheap checks
        if dtype in _PACKED_4BIT:
            return 2 * len(tensor.raw_data)
        try:
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(dtype).itemsize
        except Exception:  # unknown or undefined element type
            return None
        size = len(tensor.raw_data)
        if itemsize <= 0 or size % itemsize:
            return -1  # a partial element: matches no declared count
        return size // itemsize
    typed = _TYPED_FIELD.get(dtype)
    if typed is not None:
        field_name, per_element = typed
        entries = len(getattr(tensor, field_name))
        return entries // per_element if entries % per_element == 0 else -1
    if dtype in _PACKED_4BIT:
        return 2 * len(tensor.int32_data)
    try:
        onnx.helper.tensor_dtype_to_np_dtype(dtype)
    except Exception:
        return None
    return len(tensor.int32_data)  # int8/16/32, uint8/16, bool, float16, bfloat16, float8


def data_mismatch(tensor: onnx.TensorProto) -> tuple[int, int] | None:
    """``(declared, stored)`` element counts when the inline data does not hold what the
    dims declare (ORT refuses such a tensor, or first tries to allocate the declared size);
    None when they agree or either count is unknown."""
    declared = element_count(tensor)
    stored = stored_count(tensor)
    if declared is None or stored is None:
        return None
    if tensor.data_type in _PACKED_4BIT and stored >= 0 and stored - declared == 1:
        return None  # an odd count pads its last byte
    return None if declared == stored else (declared, max(stored, 0))


def first_data_mismatch(model: onnx.ModelProto) -> tuple[onnx.TensorProto, str, int, int] | None:
    """The first tensor anywhere in ``model`` whose data does not match its dims."""
    for tensor, where in iter_tensors(model):
        mismatch = data_mismatch(tensor)
        if mismatch is not None:
            return tensor, where, *mismatch
    return None


def inline_array(
    tensor: onnx.TensorProto, max_elements: int = DEFAULT_MAX_ELEMENTS
) -> np.ndarray | None:
    """The tensor's value when its data is inline and small; None otherwise.

    None for external data (never opened), segments, more than ``max_elements``
    declared elements, and anything numpy_helper cannot decode (wrong raw length,
    unknown type).
    """
    if is_external(tensor) or tensor.HasField("segment"):
        return None
    count = element_count(tensor)
    if count is None or count > max_elements:
        return None
    from onnx import numpy_helper

    try:
        return numpy_helper.to_array(tensor)
    except Exception:  # a hostile tensor can fail numpy in many ways; it has no value
        return None


def inline_scalar_int(tensor: onnx.TensorProto) -> int | None:
    """The value of a one-element integer (or bool) tensor stored inline, else None."""
    arr = inline_array(tensor, max_elements=1)
    if arr is None or arr.size != 1 or arr.dtype.kind not in "iub":
        return None
    return int(arr.reshape(-1)[0])


def _attribute_tensors(
    attr: onnx.AttributeProto, where: str
) -> Iterator[tuple[onnx.TensorProto, str]]:
    # fields are read whatever ``attr.type`` says: a hostile model may set both, and
    # ORT or onnx could read the one the type does not name
    if attr.HasField("t"):
        yield attr.t, where
    for t in attr.tensors:
        yield t, where
    sparse = [attr.sparse_tensor] if attr.HasField("sparse_tensor") else []
    for sp in (*sparse, *attr.sparse_tensors):
        yield sp.values, where
        yield sp.indices, where


def _node_tensors(
    nodes: Iterable[onnx.NodeProto],
    where: str,
    graphs: list[tuple[onnx.GraphProto, str]],
    paths: bool = True,
) -> Iterator[tuple[onnx.TensorProto, str]]:
    nodes = list(nodes)
    labels: list[str] | None = None  # the index's labels, made only for a graph with bodies
    for i, node in enumerate(nodes):
        attributes = node.attribute
        if not attributes:  # no tensors and no bodies: nothing to read (many nodes)
            continue
        bodies = list(stored_graphs(attributes))
        for attr in attributes:
            for tensor, _ in _attribute_tensors(attr, where):
                yield tensor, where
        if bodies:  # a label names the bodies only (the tensors are yielded with ``where``)
            if not paths:
                label = where
            else:
                if labels is None:
                    labels = node_labels([(n.name, n.op_type) for n in nodes])
                label = f"{where}/{labels[i]}"
            graphs += _body_paths(bodies, label)


def _body_paths(
    bodies: Iterable[tuple[str, int | None, onnx.GraphProto]], where: str
) -> list[tuple[onnx.GraphProto, str]]:
    return [(g, f"{where}:{name}" + ("" if k is None else f"[{k}]")) for name, k, g in bodies]


def iter_tensors(
    model: onnx.ModelProto, paths: bool = True
) -> Iterator[tuple[onnx.TensorProto, str]]:
    """Every tensor that may hold data, with the graph path it sits in.

    ``paths=False``: the same tensors in the same order, for a caller that does not read
    the paths (those of bodies are then not their graph paths): the node labels that name
    the bodies, a pass over every node of each graph that has one, are not made."""
    graphs: list[tuple[onnx.GraphProto, str]] = [(model.graph, "main")]
    for k, info in enumerate(model.training_info):
        if info.HasField("initialization"):
            graphs.append((info.initialization, f"training_info[{k}].initialization"))
        if info.HasField("algorithm"):
            graphs.append((info.algorithm, f"training_info[{k}].algorithm"))
    for f in model.functions:
        where = f"fn:{f.domain}.{f.name}"
        for attr in f.attribute_proto:
            for tensor, _ in _attribute_tensors(attr, f"{where}/{attr.name}"):
                yield tensor, where
            graphs += _body_paths(stored_graphs([attr]), f"{where}/{attr.name}" if paths else where)
        yield from _node_tensors(f.node, where, graphs, paths)
    while graphs:
        graph, where = graphs.pop()
        for init in graph.initializer:
            yield init, where
        for sparse in graph.sparse_initializer:
            yield sparse.values, where
            yield sparse.indices, where
        yield from _node_tensors(graph.node, where, graphs, paths)


def has_external_data(model: onnx.ModelProto) -> bool:
    """True when any tensor of the model (anywhere :func:`iter_tensors` looks) is external."""
    return any(is_external(t) for t, _ in iter_tensors(model, paths=False))


#: placeholders up to this many bytes keep a tensor's shape; larger ones become empty
PLACEHOLDER_MAX_BYTES = 1 << 20


def node_has_external_data(node: onnx.NodeProto) -> bool:
    """True when a tensor of ``node``'s attributes is external (a body's are not looked at)."""
    return any(is_external(t) for attr in node.attribute for t, _ in _attribute_tensors(attr, ""))


def without_external_data(model: onnx.ModelProto, external: bool | None = None) -> onnx.ModelProto:
    """A copy of ``model`` whose external tensors hold inline placeholder data.

    ``onnx.checker`` stats every external location (relative to the working directory
    for a ModelProto), so it is given this copy and touches no file. A small tensor gets
    zeros of its declared size, so the checker's size checks still apply; a large one
    (or one of unknown size) gets no elements at all. ``model`` itself is not changed;
    without external tensors it is returned as is. ``external``: whether the model has
    some (``LoadedModel.external``), when known; None: walk the tensors to tell.
    """
    if external is False or (external is None and not has_external_data(model)):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor, _ in iter_tensors(copy, paths=False):
        if not is_external(tensor):
            continue
        tensor.ClearField("external_data")
        tensor.ClearField("data_location")
        count = element_count(tensor)
        try:
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except Exception:  # unknown or string type: no byte size to fill
            itemsize = 0
        nbytes = count * itemsize if count is not None else 0
        if tensor.data_type != onnx.TensorProto.STRING and 0 < nbytes <= PLACEHOLDER_MAX_BYTES:
            tensor.raw_data = bytes(nbytes)
        else:
            tensor.ClearField("raw_data")
            tensor.dims[:] = [0]
    return copy


#: initializers with more elements than this leave their data behind in :func:`dataless_copy`
DATALESS_MIN_ELEMENTS = 4096


def dataless_copy(
    model: onnx.ModelProto, min_elements: int = DATALESS_MIN_ELEMENTS
) -> tuple[onnx.ModelProto, dict[str, onnx.TensorProto]]:
    """A copy of ``model`` whose large inline main-graph initializers keep their name, type
    and dims but not their data, and the originals it left out, by name.

    ONNX shape inference serialises the whole model on the way in and out; on a model
    with hundreds of MB of weights that copying is most of its time, and it needs no
    weight values (only small shape-like tensors, which are kept). Nothing is copied
    (``model`` itself and an empty mapping are returned) when nothing is large.
    """
    left = large_initializers(model, min_elements)
    if not left:
        return model, {}
    graph = model.graph
    light = onnx.ModelProto()
    for fd, value in model.ListFields():
        if fd.name != "graph":
            _copy_field(light, fd, value)
    for fd, value in graph.ListFields():
        if fd.name != "initializer":
            _copy_field(light.graph, fd, value)
    for t in graph.initializer:
        if t.name in left and left[t.name] is t:
            stub = light.graph.initializer.add()
            stub.name, stub.data_type = t.name, t.data_type
            stub.dims.extend(t.dims)
        else:
            light.graph.initializer.add().CopyFrom(t)
    return light, left


def large_initializers(
    model: onnx.ModelProto, min_elements: int = DATALESS_MIN_ELEMENTS
) -> dict[str, onnx.TensorProto]:
    """The inline main-graph initializers :func:`dataless_copy` leaves the data of, by name."""
    return {
        t.name: t
        for t in model.graph.initializer
        if not is_external(t) and (element_count(t) or 0) > min_elements
    }


def restore_data(model: onnx.ModelProto, left: dict[str, onnx.TensorProto]) -> onnx.ModelProto:
    """Put the data :func:`dataless_copy` left out back into ``model`` (in place)."""
    if left:
        for t in model.graph.initializer:
            original = left.get(t.name)
            if original is not None and not t.raw_data and not _has_typed_data(t):
                t.CopyFrom(original)
    return model


def _has_typed_data(t: onnx.TensorProto) -> bool:
    return any(
        len(getattr(t, f))
        for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")
    )


def _copy_field(target: Any, fd: Any, value: Any) -> None:
    if hasattr(value, "extend"):  # a repeated field (messages and scalars alike)
        getattr(target, fd.name).extend(value)
    elif fd.message_type is not None:
        getattr(target, fd.name).CopyFrom(value)
    else:
        setattr(target, fd.name, value)
