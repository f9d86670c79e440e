"""Loading a model safely.

Accepts a path (binary ``.onnx`` or ONNX text ``.onnxtxt``), raw bytes or an
``onnx.ModelProto``. External weights are never read: each external-data
reference is validated instead (location inside the model's folder, file is a
regular file, size covers offset + length). Bad input becomes load
diagnostics, never an exception. Nothing here writes to disk.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from onnxlint.diagnostics import Diagnostic, Location
from onnxlint.limits import Limits
from onnxlint.names import node_labels
from onnxlint.rules import load as load_rules

TEXT_SUFFIXES = (".onnxtxt", ".onnxtext")


@dataclass
class LoadedModel:
    model: onnx.ModelProto | None
    path: Path | None = None
    content_hash: str = ""
    size: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)
    is_text: bool = False

    @property
    def fatal(self) -> bool:
        """True when the model could not be read at all (exit code 2)."""
        return self.model is None

    @property
    def base_dir(self) -> Path | None:
        return self.path.parent if self.path is not None else None


def load(
    source: str | os.PathLike[str] | bytes | onnx.ModelProto, limits: Limits | None = None
) -> LoadedModel:
    limits = limits or Limits()
    if isinstance(source, onnx.ModelProto):
        # measured before ByteSize(): protobuf's C code recurses per level and crashes
        # (SIGSEGV) on a ModelProto nested tens of thousands deep
        depth, _ = _measure(source, limits)
        if depth > limits.max_subgraph_depth:
            return _fail(
                LoadedModel(model=None),
                load_rules.NestingTooDeep,
                "default",
                depth=depth,
                limit=limits.max_subgraph_depth,
            )
        data = (
            source.SerializeToString(deterministic=True)
            if source.ByteSize() < limits.max_file_bytes
            else b""
        )
        result = LoadedModel(model=source, content_hash=_hash(data), size=source.ByteSize())
        return _post_checks(result, limits)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        result = LoadedModel(model=None, content_hash=_hash(data), size=len(data))
        return _parse(result, data, is_text=_looks_like_text(data), limits=limits)
    return load_path(Path(source), limits)


def load_path(path: Path, limits: Limits) -> LoadedModel:
    result = LoadedModel(model=None, path=path)
    fatal = load_rules.FileUnreadable
    try:
        st = path.stat()
    except FileNotFoundError:
        return _fail(result, fatal, "missing", path=str(path))
    except OSError as exc:
        return _fail(result, fatal, "os_error", path=str(path), error=exc.strerror or str(exc))
    if not stat.S_ISREG(st.st_mode):
        return _fail(result, fatal, "not_regular", path=str(path))
    result.size = st.st_size
    if st.st_size == 0:
        return _fail(result, load_rules.EmptyFile, "default", path=str(path))
    if st.st_size > limits.max_file_bytes:
        return _fail(
            result,
            load_rules.ModelTooLarge,
            "default",
            size=st.st_size,
            limit=limits.max_file_bytes,
        )
    try:
        data = _read_regular_file(path)
    except _NotRegular:
        return _fail(result, fatal, "not_regular", path=str(path))
    except OSError as exc:
        return _fail(result, fatal, "os_error", path=str(path), error=exc.strerror or str(exc))
    result.content_hash = _hash(data)
    is_text = path.suffix.lower() in TEXT_SUFFIXES or (
        path.suffix.lower() != ".onnx" and _looks_like_text(data)
    )
    return _parse(result, data, is_text=is_text, limits=limits)


def _parse(result: LoadedModel, data: bytes, is_text: bool, limits: Limits) -> LoadedModel:
    if not data:
        return _fail(result, load_rules.EmptyFile, "default", path=str(result.path or "<bytes>"))
    if len(data) > limits.max_file_bytes:
        return _fail(
            result, load_rules.ModelTooLarge, "default", size=len(data), limit=limits.max_file_bytes
        )
    result.is_text = is_text
    if is_text:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _fail(result, load_rules.TextParseError, "default", error=f"not UTF-8: {exc}")
        # onnx.parser recurses in C++ and overflows the stack (SIGSEGV) a few thousand
        # brackets deep, so absurd nesting is refused before the parser sees it
        if text_nesting(text, stop=_text_nesting_limit(limits)) > _text_nesting_limit(limits):
            return _fail(
                result, load_rules.NestingTooDeep, "parse", limit=limits.max_subgraph_depth
            )
        try:
            model = onnx.parser.parse_model(text)
        except Exception as exc:
            if _is_depth_error(exc):
                return _fail(
                    result, load_rules.NestingTooDeep, "parse", limit=limits.max_subgraph_depth
                )
            return _fail(result, load_rules.TextParseError, "default", error=_one_line(exc))
    else:
        # a node costs at least 2 bytes on the wire but ~150 bytes once decoded, so a file
        # that could hold more than max_nodes nodes is counted before it is decoded
        if len(data) > 2 * limits.max_nodes:
            nodes = count_nodes_on_wire(data, stop=limits.max_nodes)
            if nodes is not None and nodes > limits.max_nodes:
                return _fail(
                    result, load_rules.TooManyNodes, "default", count=nodes, limit=limits.max_nodes
                )
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except RecursionError:
            return _fail(
                result, load_rules.NestingTooDeep, "parse", limit=limits.max_subgraph_depth
            )
        except Exception as exc:
            if _is_depth_error(exc):
                return _fail(
                    result, load_rules.NestingTooDeep, "parse", limit=limits.max_subgraph_depth
                )
            return _fail(result, load_rules.NotOnnx, "decode", error=_one_line(exc))
        if not model.HasField("graph") or (model.ir_version <= 0 and not model.opset_import):
            return _fail(result, load_rules.NotOnnx, "no_graph")
    result.model = model
    return _post_checks(result, limits)


def _post_checks(result: LoadedModel, limits: Limits) -> LoadedModel:
    model = result.model
    assert model is not None
    depth, node_count = _measure(model, limits)
    if depth > limits.max_subgraph_depth:
        return _fail(
            result,
            load_rules.NestingTooDeep,
            "default",
            depth=depth,
            limit=limits.max_subgraph_depth,
        )
    if node_count > limits.max_nodes:
        return _fail(
            result, load_rules.TooManyNodes, "default", count=node_count, limit=limits.max_nodes
        )
    bad_string = first_non_utf8_string(model)
    if bad_string is not None:
        # upb hands such fields back as bytes, and every consumer expects str
        return _fail(result, load_rules.NotOnnx, "decode", error=f"{bad_string} is not valid UTF-8")
    result.diagnostics += list(check_external_data(model, result.base_dir))
    return result


def first_non_utf8_string(model: onnx.ModelProto) -> str | None:
    """The full name of the first string field holding invalid UTF-8, or None.

    ONNX is proto2, so the decoder accepts any bytes in ``string`` fields and returns
    them as ``bytes`` instead of ``str``; iterative, so deep models cannot overflow.
    """
    string, message = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
    stack: list[Message] = [model]
    while stack:
        msg = stack.pop()
        for fd, value in msg.ListFields():
            # the value's own type says whether the field is repeated (works on every
            # protobuf release, unlike FieldDescriptor.label / .is_repeated)
            if fd.type == string:
                values = (value,) if isinstance(value, (str, bytes)) else value
                if not all(isinstance(v, str) for v in values):
                    return fd.full_name
            elif fd.type == message:
                if isinstance(value, Message):
                    stack.append(value)
                else:
                    stack.extend(value)
    return None


def _measure(model: onnx.ModelProto, limits: Limits) -> tuple[int, int]:
    """Deepest subgraph nesting and total node count, iteratively (no recursion)."""
    stack: list[tuple[onnx.GraphProto, int]] = [(model.graph, 0)]
    max_depth, count = 0, sum(len(f.node) for f in model.functions)
    while stack:
        graph, depth = stack.pop()
        max_depth = max(max_depth, depth)
        if depth > limits.max_subgraph_depth or count > limits.max_nodes:
            break
        count += len(graph.node)
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    stack.append((attr.g, depth + 1))
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    stack.extend((g, depth + 1) for g in attr.graphs)
    return max_depth, count


def iter_tensors(model: onnx.ModelProto) -> Iterator[tuple[onnx.TensorProto, str]]:
    """Every tensor that may hold data, with a description of where it sits."""
    stack: list[tuple[onnx.GraphProto, str]] = [(model.graph, "main")]
    funcs = [(n, f"fn:{f.domain}.{f.name}") for f in model.functions for n in f.node]
    for node, where in funcs:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t, where
    while stack:
        graph, where = stack.pop()
        for init in graph.initializer:
            yield init, where
        for sparse in graph.sparse_initializer:
            yield sparse.values, where
            yield sparse.indices, where
        labels: list[str] | None = None  # the index's labels, made only for a graph with bodies
        for i, node in enumerate(graph.node):
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t, where
                elif attr.type == onnx.AttributeProto.TENSORS:
                    for t in attr.tensors:
                        yield t, where
                elif attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    if labels is None:
                        labels = node_labels([(n.name, n.op_type) for n in graph.node])
                    if attr.type == onnx.AttributeProto.GRAPH:
                        stack.append((attr.g, f"{where}/{labels[i]}:{attr.name}"))
                    for k, g in enumerate(attr.graphs):
                        stack.append((g, f"{where}/{labels[i]}:{attr.name}[{k}]"))


def unsafe_location(location: str) -> str | None:
    """Why an external-data location may not be opened, or None if it is a plain relative path."""
    if not location:
        return "empty location"
    if "\x00" in location:
        return "contains a NUL byte"
    posix, windows = PurePosixPath(location), PureWindowsPath(location)
    if (
        posix.is_absolute()
        or windows.is_absolute()
        or windows.drive
        or location.startswith(("\\", "/"))
    ):
        return "absolute path"
    if ".." in posix.parts or ".." in windows.parts:
        return "contains '..'"
    return None


def check_external_data(model: onnx.ModelProto, base_dir: Path | None) -> Iterator[Diagnostic]:
    """Validate each external-data reference without ever opening the data file."""
    rules = load_rules
    checked: dict[str, int | None] = {}
    for tensor, where in iter_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        loc = Location(graph=where, tensor=tensor.name or None)
        location = info.get("location", "")
        why = unsafe_location(location)
        if why:
            yield rules.ExternalDataOutsideFolder.make(loc, "default", location=location, why=why)
            continue
        if base_dir is None:
            yield rules.ExternalDataMissing.make(loc, "no_folder", location=location)
            continue
        target = base_dir / location
        if location not in checked:
            checked[location] = None
            try:
                root = base_dir.resolve()
                real = target.resolve()
                if root != real and root not in real.parents:
                    yield rules.ExternalDataOutsideFolder.make(
                        loc,
                        "default",
                        location=location,
                        why="resolves outside the model folder (symlink)",
                    )
                    continue
                st = os.stat(target)  # stat only: never opened
            except FileNotFoundError:
                yield rules.ExternalDataMissing.make(loc, "default", location=location)
                continue
            except (OSError, RuntimeError) as exc:
                yield rules.ExternalDataMissing.make(
                    loc, "os_error", location=location, error=str(exc)
                )
                continue
            if not stat.S_ISREG(st.st_mode):
                yield rules.ExternalDataOutsideFolder.make(
                    loc,
                    "default",
                    location=location,
                    why="not a regular file (device, FIFO or folder)",
                )
                continue
            checked[location] = st.st_size
        size = checked[location]
        if size is None:
            continue
        try:
            offset = int(info.get("offset", "0") or 0)
            length = int(info["length"]) if info.get("length") else None
        except ValueError:
            yield rules.ExternalDataTooShort.make(loc, "bad_numbers", location=location)
            continue
        if length is None:
            length = _expected_nbytes(tensor)
        if length is not None and (offset < 0 or offset + length > size):
            yield rules.ExternalDataTooShort.make(
                loc, "default", location=location, offset=offset, length=length, size=size
            )


def _expected_nbytes(tensor: onnx.TensorProto) -> int | None:
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except Exception:
        return None
    n = 1
    for d in tensor.dims:
        n *= d
    return n * itemsize


class _NotRegular(OSError):
    """The path was swapped for a FIFO, device or folder between stat and open."""


def _read_regular_file(path: Path) -> bytes:
    """Read a file that must be regular; a FIFO or device is never read from.

    ``O_NONBLOCK`` keeps ``open`` from blocking if the path became a FIFO after the
    ``stat`` above; ``fstat`` on the open descriptor then decides.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular(str(path))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


#: nesting beyond this is refused in ONNX text whatever the configured limit, because
#: onnx.parser overflows the C stack somewhere between 2,000 and 5,000 levels
TEXT_NESTING_CAP = 1000

_TEXT_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[{}()\[\]]')


def _text_nesting_limit(limits: Limits) -> int:
    # each subgraph level costs one brace, plus a few for types and attribute lists
    return min(TEXT_NESTING_CAP, 4 * limits.max_subgraph_depth + 16)


def text_nesting(text: str, stop: int) -> int:
    """Deepest bracket nesting (``{``, ``(``, ``[``) outside strings and comments.

    Returns as soon as the depth passes ``stop``; unbalanced closers never go below 0.
    """
    depth = deepest = 0
    for match in _TEXT_TOKENS.finditer(text):
        token = match.group()
        if token in "{([":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    break
        elif token in "})]":
            depth = max(0, depth - 1)
    return deepest


# ONNX field numbers (onnx.proto) of the messages that can contain nodes
_MODEL, _GRAPH, _NODE, _ATTR, _FUNC, _TRAIN = range(6)
_CHILDREN: dict[tuple[int, int], int] = {
    (_MODEL, 7): _GRAPH,  # ModelProto.graph
    (_MODEL, 20): _TRAIN,  # ModelProto.training_info
    (_MODEL, 25): _FUNC,  # ModelProto.functions
    (_TRAIN, 1): _GRAPH,  # TrainingInfoProto.initialization
    (_TRAIN, 2): _GRAPH,  # TrainingInfoProto.algorithm
    (_GRAPH, 1): _NODE,  # GraphProto.node
    (_FUNC, 7): _NODE,  # FunctionProto.node
    (_FUNC, 11): _ATTR,  # FunctionProto.attribute_proto
    (_NODE, 5): _ATTR,  # NodeProto.attribute
    (_ATTR, 6): _GRAPH,  # AttributeProto.g
    (_ATTR, 11): _GRAPH,  # AttributeProto.graphs
}


class _Malformed(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Malformed
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def count_nodes_on_wire(buf: bytes, stop: int, max_stack: int = 512) -> int | None:
    """Count NodeProtos in a serialized ModelProto without decoding it.

    Walks only the messages that can hold nodes (graphs, nodes, attributes, functions,
    training info) and skips everything else by its length, so weights cost nothing.
    Depth-first, so memory stays proportional to the nesting, not to the node count.
    Stops once the count passes ``stop``. Returns None for bytes that are not valid
    protobuf or nest deeper than ``max_stack`` messages; the decoder then reports them.
    """
    count = 0
    stack: list[tuple[int, int, int]] = []
    pos, end, kind = 0, len(buf), _MODEL
    try:
        while True:
            if pos >= end:
                if pos > end:
                    return None
                if not stack:
                    return count
                pos, end, kind = stack.pop()
                continue
            tag, pos = _varint(buf, pos, end)
            wire = tag & 7
            if wire == 0:
                _, pos = _varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length, pos = _varint(buf, pos, end)
                child = _CHILDREN.get((kind, tag >> 3))
                if child is None:
                    pos += length
                    continue
                if pos + length > end or len(stack) >= max_stack:
                    return None
                if child == _NODE:
                    count += 1
                    if count > stop:
                        return count
                # resume this message after the child, and descend into the child now
                stack.append((pos + length, end, kind))
                end, kind = pos + length, child
            else:
                return None  # groups do not occur in ONNX
    except _Malformed:
        return None


def _is_depth_error(exc: BaseException) -> bool:
    """protobuf's decoder refuses nesting past 100 messages ("Exceeded ...MaxDepth")."""
    if isinstance(exc, RecursionError):
        return True
    message = _one_line(exc).lower()
    return any(word in message for word in ("recursion", "nest", "maxdepth", "max_depth"))


def _fail(
    result: LoadedModel, rule: type[load_rules.LoadRule], message_id: str, **args: object
) -> LoadedModel:
    result.model = None
    result.diagnostics.append(rule.make(Location(), message_id, **args))
    return result


def _looks_like_text(data: bytes) -> bool:
    head = data[:256].lstrip()
    return head.startswith(b"<") or head.startswith(b"ir_version")


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _one_line(exc: BaseException) -> str:
    # onnx.parser raises with a bytes argument; show its text, not "b'...'"
    raw = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], bytes) else None
    text = " ".join((raw.decode("utf-8", "replace") if raw is not None else str(exc)).split())
    return (text[:300] + "...") if len(text) > 300 else (text or type(exc).__name__)
