"""ORT's symbolic shape inference (``onnxruntime.tools.symbolic_shape_infer``): loaded
without importing onnxruntime's package, run silenced and without writing files, its
answers kept on disk per input (``analyses.symbolic_cache``). The Shapes analysis fills
ONNX's gaps with it; the shape fix (``fixes.shapes``) fills the pinned copy's."""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib.util
import io
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import onnx

if TYPE_CHECKING:
    from onnxlint.analyses.shapes import ValueType
    from onnxlint.analyses.symbolic_cache import Answer
    from onnxlint.config import Config


def cached_types(
    model: onnx.ModelProto, origin: str, config: Config | None = None
) -> Answer | None:
    """The stored types table of ORT's answer for ``model`` (``analyses.symbolic_cache``),
    derived from the model whose content hash is ``origin``; None when there is none to
    trust (or no ``origin``). The answer's ``value`` is the table, None for a failed run."""
    from onnxlint.analyses import symbolic_cache

    material = symbolic_cache.key_material(model, origin, "types", config) if origin else None
    hit = None if material is None else symbolic_cache.get(material)
    if hit is None or hit.value is None:
        return hit
    table = _types_from_json(hit.value)
    if table is None:  # a payload of the wrong shape: asked again (and overwritten)
        return None
    hit.value = table
    return hit


def symbolic_types(
    model: onnx.ModelProto,
    weights: dict[str, onnx.TensorProto] | None,
    origin: str,
    config: Config | None = None,
    cached: Answer | None = None,
) -> dict[str, ValueType] | None:
    """``collect_value_types`` of :func:`symbolic_infer`'s answer (None: ORT failed), read
    from the cache when it holds it (``cached``: already looked up, :func:`cached_types`)
    and stored there otherwise; ``origin``: the content hash of the model ``model`` was
    derived from ("": nothing cached)."""
    from onnxlint.analyses import symbolic_cache
    from onnxlint.analyses.shapes import collect_value_types

    if cached is None:
        cached = cached_types(model, origin, config)
    if cached is not None:
        return cast("dict[str, ValueType] | None", cached.value)
    ort = symbolic_infer(model, weights)
    table = None if ort is None else collect_value_types(ort)
    material = symbolic_cache.key_material(model, origin, "types", config) if origin else None
    if material is not None and _tool_is_from(material["ort"]):
        symbolic_cache.put(material, None if table is None else _types_to_json(table))
    return table


def symbolic_value_info(
    model: onnx.ModelProto,
    weights: dict[str, onnx.TensorProto] | None,
    origin: str,
    pick: Callable[[onnx.ModelProto], list[onnx.ValueInfoProto]],
) -> list[onnx.ValueInfoProto] | None:
    """``pick`` of :func:`symbolic_infer`'s answer (None: ORT failed), cached like
    :func:`symbolic_types` when every picked entry is a tensor's (``answer="value_info"``)."""
    from onnxlint.analyses import symbolic_cache

    material = symbolic_cache.key_material(model, origin, "value_info") if origin else None
    hit = None if material is None else symbolic_cache.get(material)
    if hit is not None:
        if hit.value is None:
            return None
        picked = _value_info_from_json(hit.value)
        if picked is not None:
            return picked
    ort = symbolic_infer(model, weights)
    chosen = None if ort is None else pick(ort)
    if material is not None and _tool_is_from(material["ort"]):
        if chosen is None:
            symbolic_cache.put(material, None)
        elif all(vi.type.WhichOneof("value") == "tensor_type" for vi in chosen):
            stored = [base64.b64encode(vi.SerializeToString()).decode("ascii") for vi in chosen]
            symbolic_cache.put(material, stored)
    return chosen


def _types_to_json(table: dict[str, ValueType]) -> list[list[Any]]:
    return [
        [name, vt.dtype, None if vt.shape is None else list(vt.shape), vt.kind]
        for name, vt in table.items()
    ]


def _types_from_json(data: Any) -> dict[str, ValueType] | None:
    """The table :func:`_types_to_json` wrote; None when ``data`` is not one."""
    from onnxlint.analyses.shapes import ValueType

    if not isinstance(data, list):
        return None
    table: dict[str, ValueType] = {}
    seen: dict[ValueType, ValueType] = {}
    for row in data:
        if not (isinstance(row, list) and len(row) == 4):
            return None
        name, dtype, shape, kind = row
        if not (
            isinstance(name, str)
            and (dtype is None or isinstance(dtype, str))
            and isinstance(kind, str)
            and (
                shape is None
                or (
                    isinstance(shape, list)
                    and all(d is None or type(d) in (int, str) for d in shape)
                )
            )
        ):
            return None
        vt = ValueType(dtype, None if shape is None else tuple(shape), kind)
        table[name] = seen.setdefault(vt, vt)  # one object per type, as collect_value_types
    return table


def _value_info_from_json(data: Any) -> list[onnx.ValueInfoProto] | None:
    """The entries :func:`symbolic_value_info` stored; None when ``data`` is not those."""
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        return None
    out = []
    try:
        for text in data:
            vi = onnx.ValueInfoProto.FromString(base64.b64decode(text, validate=True))
            if vi.type.WhichOneof("value") != "tensor_type":
                return None
            out.append(vi)
    except Exception:  # binascii.Error, DecodeError
        return None
    return out


def _tool_is_from(identity: dict[str, Any]) -> bool:
    """Whether the ORT tool this process loaded lies in the build ``identity`` names (a
    folder of that name in the working directory could shadow it here): only that
    build's answers are stored under its key."""
    where = getattr(sys.modules.get("onnxlint._ort_symbolic_shape_infer"), "__file__", None)
    if where is None:
        mod = sys.modules.get("onnxruntime.tools.symbolic_shape_infer")
        where = getattr(mod, "__file__", None)
    return bool(where) and str(Path(str(where)).parent.parent) == identity.get("package")


def symbolic_infer(
    model: onnx.ModelProto, weights: dict[str, onnx.TensorProto] | None = None
) -> onnx.ModelProto | None:
    """ORT's symbolic shape inference, silenced; None when it is unavailable or fails.

    ``weights``: the data of ``model``'s large initializers when ``model`` lacks it
    (:func:`infer_model_without_weights`). The tool copies the model it is given and
    reads initializer values only from its table of initializers by name, so the copy is
    made without the weights and the table points at the tensors that have them; the
    answer's types are the same, its initializers have no data.

    The loop of ``SymbolicShapeInference.infer_shapes`` is driven here because that
    method saves a ``sym_shape_infer_temp.onnx`` into the working directory when
    inference is incomplete; a linter must never write files it was not asked to.
    A partial answer is still useful, so it is returned as is.
    """
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 7 or _has_external_data(model):
        return None  # ORT's tool refuses old opsets, and would read external weights from disk
    SymbolicShapeInference = _symbolic_class()
    if SymbolicShapeInference is None:
        return None
    logger = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            sym = SymbolicShapeInference(2**31 - 1, True, False, 0)
            sym._preprocess(model)
            for name, tensor in (weights or {}).items():
                if name in sym.initializers_:
                    sym.initializers_[name] = tensor
            rounds = 0
            while sym.run_ and rounds < 64:  # it normally settles in one or two rounds
                sym._infer_impl()
                rounds += 1
            sym._update_output_from_vi()
            return sym.out_mp_
    except BaseException as exc:  # it may also sys.exit() or assert on odd graphs
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None
    finally:
        logger.setLevel(previous)


@functools.cache
def _symbolic_class() -> Any:
    """ORT's ``SymbolicShapeInference``, loaded from its file when possible.

    Importing ``onnxruntime.tools.symbolic_shape_infer`` runs ``onnxruntime/__init__``
    and ``onnxruntime/tools/__init__``, which imports torch when it is installed: seconds
    of start-up for a module that itself needs only onnx, numpy and sympy. Loading the
    file under a private name skips both (docs/performance.md); the package import is
    the fallback.
    """
    with contextlib.suppress(Exception):
        spec = importlib.util.find_spec("onnxruntime")  # locates, does not import
        if spec is not None and spec.origin:
            path = Path(spec.origin).parent / "tools" / "symbolic_shape_infer.py"
            name = "onnxlint._ort_symbolic_shape_infer"
            file_spec = importlib.util.spec_from_file_location(name, path)
            if file_spec is not None and file_spec.loader is not None:
                module = importlib.util.module_from_spec(file_spec)
                sys.modules[name] = module
                try:
                    file_spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(name, None)
                    raise
                return module.SymbolicShapeInference
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except Exception:
        return None
    return SymbolicShapeInference


def symbolic_unavailable() -> str | None:
    """Why ORT's symbolic shape inference cannot run here (None: it can)."""
    if _symbolic_class() is not None:
        return None
    if importlib.util.find_spec("onnxruntime") is None:
        return "onnxruntime is not installed"
    if importlib.util.find_spec("sympy") is None:
        return "sympy is not installed (pip install sympy)"
    return "onnxruntime.tools.symbolic_shape_infer cannot be loaded"


def _has_external_data(model: onnx.ModelProto) -> bool:
    from onnxlint.tensors import has_external_data

    return has_external_data(model)
