"""ORT's symbolic shape inference (``onnxruntime.tools.symbolic_shape_infer``): loaded
without importing onnxruntime's package, run silenced and without writing files, its
answers kept on disk per input (``analyses.symbolic_cache``). The Shapes analysis fills
ONNX's gaps with it; the shape fix (``fixes.shapes``) fills the pinned copy's."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

if TYPE_CHECKING:
    from onnxlint.analyses.symbolic_cache import Answer
    from onnxlint.config import Config


class Lookup:
    """What the cache says about one answer taken from ORT's answer for one input:
    ``material``, its key (None: not cached), and ``answer``, the stored value (None:
    nothing to trust; an answer whose ``value`` is None: ORT failed on this input)."""

    __slots__ = ("answer", "material")

    def __init__(self, material: dict[str, Any] | None, answer: Answer | None) -> None:
        self.material = material
        self.answer = answer


def lookup(
    model: onnx.ModelProto,
    origin: str,
    kind: str,
    decode: Callable[[Any], Any],
    config: Config | None = None,
    *,
    left: Mapping[str, onnx.TensorProto] | None = None,
) -> Lookup:
    """The stored ``kind`` answer for ORT's inference of ``model``, derived from the model
    whose content hash is ``origin`` ("": nothing cached; ``analyses.symbolic_cache``),
    ``decode``d from its JSON (None: a payload of the wrong shape, asked again). The key
    is computed once (it serialises ``model``) and kept for :func:`infer_and_store`.
    ``left``: the weights whose data ``model`` lacks (``symbolic_cache.key_material``)."""
    from onnxlint.analyses import symbolic_cache

    material = (
        symbolic_cache.key_material(model, origin, kind, config, left=left) if origin else None
    )
    hit = None if material is None else symbolic_cache.get(material)
    if hit is not None and hit.value is not None:
        value = decode(hit.value)
        hit = None if value is None else symbolic_cache.Answer(value)
    return Lookup(material, hit)


def infer_and_store(
    model: onnx.ModelProto,
    weights: dict[str, onnx.TensorProto] | None,
    found: Lookup,
    take: Callable[[onnx.ModelProto], Any],
    encode: Callable[[Any], Any],
) -> Any:
    """``take`` of :func:`symbolic_infer`'s answer (None: ORT failed): ``found``'s stored
    value when it has one, else computed and stored under its key as ``encode`` writes it
    (``encode`` returning None: not storable, not stored)."""
    from onnxlint.analyses import symbolic_cache

    if found.answer is not None:
        return found.answer.value
    ort = symbolic_infer(model, weights)
    value = None if ort is None else take(ort)
    material = found.material
    if material is not None and _tool_is_from(material["ort"]):
        stored = None if value is None else encode(value)
        if value is None or stored is not None:
            symbolic_cache.put(material, stored)
    return value


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
    import logging  # only here: the module costs 7 ms to import, and sympy brings it anyway

    logger = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            sym = SymbolicShapeInference(2**31 - 1, True, False, 0)
            _bound_expressions(sym)
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


#: the longest symbolic dim or value (printed) ORT's tool may derive before onnxlint gives
#: up on its answer: past this, sympy's simplification of the growing expressions takes
#: minutes per node (torchvision's Faster R-CNN: a lint of 9 to 28 minutes, all in the
#: Slices of its anchor and box arithmetic); real dims print in a few dozen characters
MAX_EXPRESSION_CHARS = 1000


class ExpressionTooLong(Exception):
    """ORT's tool derived a dim or value longer than :data:`MAX_EXPRESSION_CHARS`."""


def _bound_expressions(sym: Any) -> None:
    """Make each of ``sym``'s per-op steps raise :class:`ExpressionTooLong` when it leaves
    an output whose symbolic dims or values print longer than :data:`MAX_EXPRESSION_CHARS`.
    A bound on the expressions, not on time, so every machine gets the same answer."""

    def bounded(step: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(node: Any) -> Any:
            result = step(node)
            for name in node.output:
                vi = sym.known_vi_.get(name)
                if (
                    vi is not None
                    and vi.type.HasField("tensor_type")
                    and any(
                        len(d.dim_param) > MAX_EXPRESSION_CHARS
                        for d in vi.type.tensor_type.shape.dim
                    )
                ):
                    raise ExpressionTooLong(name)
                if _too_long(sym.sympy_data_.get(name)):
                    raise ExpressionTooLong(name)
            return result

        return run

    sym.dispatcher_ = {op: bounded(step) for op, step in sym.dispatcher_.items()}


def _too_long(data: Any) -> bool:
    """Whether a symbolic value (an expression, or a list of them) prints longer than
    :data:`MAX_EXPRESSION_CHARS`; numbers and arrays of numbers never do."""
    items = data if isinstance(data, list) else [data]
    return any(hasattr(x, "free_symbols") and len(str(x)) > MAX_EXPRESSION_CHARS for x in items)


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


@functools.cache
def _passes_input_type() -> dict[str, int]:
    """Op -> first opset from which ORT's symbolic inference gives the op's output its
    input's type whatever its attributes (``rules/ort_symbolic.json``)."""
    from onnxlint.data import load_json

    return {
        row["op"]: int(row["since"]) for row in load_json("ort_symbolic.json")["passes_input_type"]
    }


def passes_input_type(op_type: str, since_version: int) -> bool:
    """Whether a standard-domain node of ``op_type`` whose schema revision is
    ``since_version`` gets its first input's type as its output's in ORT's symbolic
    inference as in ONNX's, whatever its attributes (``rules/ort_symbolic.json``)."""
    first = _passes_input_type().get(op_type)
    return first is not None and since_version >= first
