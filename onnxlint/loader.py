"""Loading a model safely.

Accepts a path (binary ``.onnx`` or ONNX text ``.onnxtxt``), raw bytes or an
``onnx.ModelProto``. External weights are never read: each external-data
reference is validated instead (location inside the model's folder, file is a
regular file, size covers offset + length). Bad input becomes load
diagnostics, never an exception. Nothing here writes to disk.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from onnxlint.diagnostics import Diagnostic, Location
from onnxlint.limits import Limits
from onnxlint.rules import load as load_rules
from onnxlint.tensors import iter_tensors as iter_tensors  # re-exported

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

    #: the model file with every symlink resolved (set once the path was found)
    real_path: Path | None = None

    @property
    def base_dir(self) -> Path | None:
        """The folder external data and sidecars resolve against: the real file's folder,
        as ORT sees it when given the resolved path (never the working directory)."""
        if self.real_path is not None:
            return self.real_path.parent
        return self.path.parent if self.path is not None else None


def load(
    source: str | os.PathLike[str] | bytes | onnx.ModelProto,
    limits: Limits | None = None,
    root: str | os.PathLike[str] | None = None,
) -> LoadedModel:
    """Load a model from a path, bytes or a ModelProto; never raises for bad input.

    ``root`` (paths only) is the folder being linted: a model path whose real file lies
    outside it (a symlink leading elsewhere) is reported and never read. It defaults to
    the folder the path names.
    """
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
        type_depth = deepest_type(source, MAX_TYPE_NESTING)
        if type_depth > MAX_TYPE_NESTING:  # ByteSize() recursed into it and crashed
            return _fail(
                LoadedModel(model=None),
                load_rules.NestingTooDeep,
                "type",
                depth=type_depth,
                limit=MAX_TYPE_NESTING,
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
    return load_path(Path(source), limits, Path(root) if root is not None else None)


def load_path(path: Path, limits: Limits, root: Path | None = None) -> LoadedModel:
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
    real = Path(os.path.realpath(path))
    folder = Path(os.path.realpath(root if root is not None else path.parent))
    if folder not in real.parents:
        # a symlink to a credentials file would otherwise be parsed, and ONNX text
        # parse errors quote the offending line into the report
        return _fail(result, fatal, "outside", path=str(path))
    result.real_path = real
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
        data = _read_regular_file(real, (st.st_dev, st.st_ino))
    except _NotRegular:
        return _fail(result, fatal, "not_regular", path=str(path))
    except OSError as exc:
        return _fail(result, fatal, "os_error", path=str(path), error=exc.strerror or str(exc))
    result.content_hash = _hash(data)
    is_text = path.suffix.lower() in TEXT_SUFFIXES or (
        path.suffix.lower() != ".onnx" and _looks_like_text(data)
    )
    return _parse(result, data, is_text=is_text, limits=limits)


#: binary files larger than this are counted on the wire before decoding (see ``_parse``)
WIRE_COUNT_FROM_BYTES = 4 << 20


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
        type_depth = deepest_type(model, MAX_TYPE_NESTING)
        if type_depth > MAX_TYPE_NESTING:
            return _fail(
                result, load_rules.NestingTooDeep, "type", depth=type_depth, limit=MAX_TYPE_NESTING
            )
    else:
        # a node, an initializer, a value_info or an input costs at least 2 bytes on the
        # wire but ~150-500 bytes once decoded, so a file that could hold more than the
        # limits allow is counted before it is decoded (smaller files decode harmlessly)
        if len(data) > min(2 * limits.max_nodes, WIRE_COUNT_FROM_BYTES):
            over = over_limits_on_wire(data, limits)
            if over is not None and over[0] == "nodes":
                return _fail(result, load_rules.TooManyNodes, "default", **over[1])
            if over is not None:
                return _fail(result, load_rules.LimitExceeded, over[0], **over[1])
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
    over = _count_declarations(model, limits) or _count_expansion(model, limits)
    if over is not None:
        message_id, args = over
        return _fail(result, load_rules.LimitExceeded, message_id, **args)
    # type nesting: a decoded file nests at most ~100 messages (protobuf's limit), so
    # only a parsed text and a ModelProto given to the API are measured (_parse, load)
    problem = first_string_problem(model, limits.max_name_length)
    if problem is not None:
        field_name, length = problem
        if length is None:
            # upb hands such fields back as bytes, and every consumer expects str
            error = f"{field_name} is not valid UTF-8"
            return _fail(result, load_rules.NotOnnx, "decode", error=error)
        return _fail(
            result,
            load_rules.LimitExceeded,
            "name_length",
            field=field_name,
            count=length,
            limit=limits.max_name_length,
        )
    result.diagnostics += list(check_external_data(model, result.base_dir))
    return result


#: types nest (sequence of map of optional ...) at most this deep; real models use 2 or 3,
#: and protobuf's C code and onnxlint's type printing recurse per level
MAX_TYPE_NESTING = 32


def deepest_type(model: onnx.ModelProto, stop: int) -> int:
    """The deepest TypeProto nesting of any value, stopping once past ``stop``.

    Looks at graph inputs, outputs and value_info of every graph and function, and at
    ``TYPE_PROTO(S)`` attributes; iterative, so a 50,000-deep type cannot overflow, and
    each type is measured as it is met (no list of a million wrappers).
    """
    graphs = [model.graph] + [
        g for t in model.training_info for g in (t.initialization, t.algorithm)
    ]
    node_lists: list[Sequence[onnx.NodeProto]] = [f.node for f in model.functions]
    deepest = 0
    for f in model.functions:
        for v in f.value_info:
            deepest = max(deepest, _type_depth(v.type, stop))
    while (graphs or node_lists) and deepest <= stop:
        if graphs:
            g = graphs.pop()
            for values in (g.input, g.output, g.value_info):
                for v in values:
                    deepest = max(deepest, _type_depth(v.type, stop))
            node_lists.append(g.node)
            continue
        for node in node_lists.pop():
            for attr in node.attribute:
                if attr.HasField("tp"):
                    deepest = max(deepest, _type_depth(attr.tp, stop))
                for tp in attr.type_protos:
                    deepest = max(deepest, _type_depth(tp, stop))
                if attr.HasField("g"):
                    graphs.append(attr.g)
                graphs += list(attr.graphs)
    return deepest


def _type_depth(tp: onnx.TypeProto, stop: int) -> int:
    depth = 0
    while depth <= stop:
        kind = tp.WhichOneof("value")
        if kind == "sequence_type":
            tp = tp.sequence_type.elem_type
        elif kind == "map_type":
            tp = tp.map_type.value_type
        elif kind == "optional_type":
            tp = tp.optional_type.elem_type
        else:
            break
        depth += 1
    return depth


def _count_declarations(
    model: onnx.ModelProto, limits: Limits
) -> tuple[str, dict[str, object]] | None:
    """The first count over its limit: initializers, value_info, graph and node I/O.

    Iterative over every graph (subgraphs, function bodies, training graphs); run after
    the depth and node-count checks, so the walk itself is bounded.
    """
    bodies: list[onnx.FunctionProto] = list(model.functions)
    graphs: list[tuple[onnx.GraphProto, str]] = [(model.graph, "main")]
    for info in model.training_info:
        graphs += [(info.initialization, "training"), (info.algorithm, "training")]
    initializers = value_info = 0
    while graphs or bodies:
        nodes: Sequence[onnx.NodeProto]
        if graphs:
            graph, where = graphs.pop()
            io = len(graph.input) + len(graph.output)
            initializers += len(graph.initializer) + len(graph.sparse_initializer)
            value_info += len(graph.value_info)
            nodes = graph.node
        else:
            func = bodies.pop()
            where = f"fn:{func.domain}.{func.name}"
            io = len(func.input) + len(func.output)
            value_info += len(func.value_info)
            nodes = func.node
        if io > limits.max_graph_io:
            return "graph_io", {"where": where, "count": io, "limit": limits.max_graph_io}
        if initializers > limits.max_initializers:
            return "initializers", {"count": initializers, "limit": limits.max_initializers}
        if value_info > limits.max_value_info:
            return "value_info", {"count": value_info, "limit": limits.max_value_info}
        for node in nodes:
            node_io = len(node.input) + len(node.output)
            if node_io > limits.max_node_io:
                args = {"where": where, "count": node_io, "limit": limits.max_node_io}
                return "node_io", args
            for attr in node.attribute:
                if attr.HasField("g"):
                    graphs.append((attr.g, f"{where}/{node.op_type}:{attr.name}"))
                graphs += [(g, f"{where}/{node.op_type}:{attr.name}") for g in attr.graphs]
    return None


def _count_expansion(
    model: onnx.ModelProto, limits: Limits
) -> tuple[str, dict[str, object]] | None:
    """Nodes once every call of a model-local function is expanded, bounded by max-nodes.

    A function that calls the next twice per level is 30 levels of 2^30 call sites in a
    few KB; shape inference and ORT expand them all. Counted bottom-up over the call
    graph (a function's size is computed once); a call cycle counts as the node itself.
    """
    local = {(f.domain, f.name): f for f in model.functions}
    if not local:
        return None
    limit = limits.max_nodes
    size: dict[tuple[str, str], int] = {}

    def calls(nodes: Sequence[onnx.NodeProto]) -> list[tuple[str, str]]:
        out = []
        stack = [nodes]
        while stack:
            for node in stack.pop():
                if (node.domain, node.op_type) in local:
                    out.append((node.domain, node.op_type))
                for attr in node.attribute:
                    if attr.HasField("g"):
                        stack.append(attr.g.node)
                    stack += [g.node for g in attr.graphs]
        return out

    def expanded(key: tuple[str, str]) -> int:
        # iterative post-order over the call graph; ``size`` memoizes, ``-1`` marks a
        # function in progress (a call cycle, which onnx rejects: counted as one node)
        todo: list[tuple[tuple[str, str], bool]] = [(key, False)]
        while todo:
            current, ready = todo.pop()
            if ready:
                total = _count_all(local[current].node)  # subgraphs included
                for callee in calls(local[current].node):
                    got = size.get(callee, 1)
                    total += max(got, 1) - 1  # the call node is replaced by the body
                size[current] = min(total, limit + 1)
                continue
            if current in size:
                continue
            size[current] = -1
            todo.append((current, True))
            todo += [(c, False) for c in set(calls(local[current].node)) if c not in size]
        return size[key]

    total = 0
    roots = [model.graph.node] + [info.algorithm.node for info in model.training_info]
    for nodes in roots:
        total += _count_all(nodes)
        for callee in calls(nodes):
            total += max(expanded(callee), 1) - 1
            if total > limit:
                return "expansion", {"count": total, "limit": limit}
    return None


def _count_all(nodes: Sequence[onnx.NodeProto]) -> int:
    count, stack = 0, [nodes]
    while stack:
        batch = stack.pop()
        count += len(batch)
        for node in batch:
            for attr in node.attribute:
                if attr.HasField("g"):
                    stack.append(attr.g.node)
                stack += [g.node for g in attr.graphs]
    return count


def first_non_utf8_string(model: onnx.ModelProto) -> str | None:
    """The full name of the first string field holding invalid UTF-8, or None.

    ONNX is proto2, so the decoder accepts any bytes in ``string`` fields and returns
    them as ``bytes`` instead of ``str``; iterative, so deep models cannot overflow.
    """
    problem = first_string_problem(model, None)
    return problem[0] if problem is not None and problem[1] is None else None


#: free text, not names: exempt from max-name-length
_FREE_TEXT_FIELDS = frozenset({"doc_string", "onnx.StringStringEntryProto.value"})


def first_string_problem(
    model: onnx.ModelProto, max_length: int | None
) -> tuple[str, int | None] | None:
    """The first string field holding invalid UTF-8 (``(field, None)``) or, with
    ``max_length``, a name longer than that (``(field, length)``); None when all are fine.

    Doc strings and key/value entries' values are free text and not length-checked.
    """
    string, message = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
    limit = max_length if max_length is not None else -1
    stack: list[Message] = [model]
    while stack:
        msg = stack.pop()
        for fd, value in msg.ListFields():
            # the value's own type says whether the field is repeated (works on every
            # protobuf release, unlike FieldDescriptor.label / .is_repeated)
            if fd.type == string:
                if isinstance(value, str):
                    longest = len(value)
                elif isinstance(value, bytes):
                    return fd.full_name, None
                else:
                    if not all(isinstance(v, str) for v in value):
                        return fd.full_name, None
                    longest = max(map(len, value), default=0)
                # the cheap comparison first: free text is rare, long names rarer
                if (
                    0 <= limit < longest
                    and fd.name not in _FREE_TEXT_FIELDS
                    and fd.full_name not in _FREE_TEXT_FIELDS
                ):
                    return fd.full_name, longest
            elif fd.type == message:
                if isinstance(value, Message):
                    stack.append(value)
                else:
                    stack.extend(value)
    return None


def _measure(model: onnx.ModelProto, limits: Limits) -> tuple[int, int]:
    """Deepest subgraph nesting and total node count, iteratively (no recursion).

    Function bodies and training graphs count as top-level graphs; a subgraph is
    entered whether or not the attribute's type names it (a hostile model may set both).
    """
    stack: list[tuple[Sequence[onnx.NodeProto], int]] = [(model.graph.node, 0)]
    stack += [(f.node, 0) for f in model.functions]
    for info in model.training_info:
        stack += [(info.initialization.node, 0), (info.algorithm.node, 0)]
    max_depth = count = 0
    while stack:
        nodes, depth = stack.pop()
        max_depth = max(max_depth, depth)
        if depth > limits.max_subgraph_depth or count > limits.max_nodes:
            break
        count += len(nodes)
        for node in nodes:
            for attr in node.attribute:
                if attr.HasField("g"):
                    stack.append((attr.g.node, depth + 1))
                stack.extend((g.node, depth + 1) for g in attr.graphs)
    return max_depth, count


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


def external_data_files(loaded: LoadedModel) -> list[Path]:
    """The external-data files a loaded model references inside its folder (resolved; the
    ones that exist), so that a writer never replaces a model's weights. Nothing is opened."""
    base = loaded.base_dir
    if loaded.model is None or base is None:
        return []
    out: dict[Path, None] = {}
    for tensor, _ in iter_tensors(loaded.model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        if not location or unsafe_location(location):
            continue
        try:
            real = (base / location).resolve()
        except (OSError, RuntimeError):
            continue
        if real.is_file():
            out.setdefault(real)
    return list(out)


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
        if location not in checked:
            checked[location] = None
            try:
                # ORT and onnx resolve the location against the model's folder; both it
                # and the target are resolved so a symlinked folder cannot lead outside
                root = base_dir.resolve(strict=True)
                real = (root / location).resolve()
                if root != real and root not in real.parents:
                    yield rules.ExternalDataOutsideFolder.make(
                        loc,
                        "default",
                        location=location,
                        why="resolves outside the model folder (symlink)",
                    )
                    continue
                # stat only, never opened; the resolved path has no link left to follow
                st = os.stat(real, follow_symlinks=False)
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
    """The path was swapped for a FIFO, device, folder, link or another file between
    stat and open."""


def _read_regular_file(path: Path, identity: tuple[int, int] | None = None) -> bytes:
    """Read a file that must be regular; a FIFO or device is never read from.

    ``O_NONBLOCK`` keeps ``open`` from blocking if the path became a FIFO after the
    ``stat`` above, and ``O_NOFOLLOW`` from following a link planted in its place
    (``path`` is already resolved); ``fstat`` on the open descriptor then decides, and
    must name the file that was stat'ed (``identity``: device and inode).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link swapped in after realpath
            raise _NotRegular(str(path)) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular(str(path))
        if identity is not None and (st.st_dev, st.st_ino) != identity:
            raise _NotRegular(str(path))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


#: nesting beyond this is refused in ONNX text whatever the configured limit, because
#: onnx.parser overflows the C stack somewhere between 2,000 and 5,000 levels
TEXT_NESTING_CAP = 1000

#: the characters the nesting scan stops at; strings and comments are skipped with
#: str.find (a regex for a whole quoted string used ~150 bytes per character of it)
_TEXT_SPECIAL = re.compile(r'["#{}()\[\]]')


def _text_nesting_limit(limits: Limits) -> int:
    # each subgraph level costs one brace, plus a few for types and attribute lists
    return min(TEXT_NESTING_CAP, 4 * limits.max_subgraph_depth + 16)


def text_nesting(text: str, stop: int) -> int:
    """Deepest bracket nesting (``{``, ``(``, ``[``) outside strings and comments.

    Returns as soon as the depth passes ``stop``; unbalanced closers never go below 0.
    Linear in time and constant in memory. A quote with no closing quote is skipped
    alone, so brackets after it still count.
    """
    depth = deepest = pos = 0
    search = _TEXT_SPECIAL.search
    while (match := search(text, pos)) is not None:
        char, at = match.group(), match.start()
        pos = at + 1
        if char == '"':
            end = _string_end(text, at + 1)
            if end >= 0:
                pos = end + 1
        elif char == "#":
            newline = text.find("\n", pos)
            if newline < 0:
                break
            pos = newline + 1
        elif char in "{([":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    break
        else:
            depth = max(0, depth - 1)
    return deepest


def _string_end(text: str, start: int) -> int:
    """Index of the quote closing a string that starts at ``start``, or -1."""
    at = start
    while (quote := text.find('"', at)) >= 0:
        backslashes = 0
        while quote - backslashes - 1 >= start and text[quote - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return quote
        at = quote + 1
    return -1


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


#: fields the wire walk counts: what they are, by (message kind, field number)
_COUNTED: dict[tuple[int, int], str] = {
    (_GRAPH, 5): "initializers",  # GraphProto.initializer
    (_GRAPH, 15): "initializers",  # GraphProto.sparse_initializer
    (_GRAPH, 13): "value_info",  # GraphProto.value_info
    (_FUNC, 12): "value_info",  # FunctionProto.value_info
    (_GRAPH, 11): "io",  # GraphProto.input
    (_GRAPH, 12): "io",  # GraphProto.output
    (_FUNC, 4): "io",  # FunctionProto.input
    (_FUNC, 5): "io",  # FunctionProto.output
    (_NODE, 1): "io",  # NodeProto.input
    (_NODE, 2): "io",  # NodeProto.output
}
#: how a wire-level limit message names where it is (no names are decoded there)
_WIRE_WHERE = {_GRAPH: "<subgraph>", _FUNC: "<function>", _NODE: "the model"}


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

    Stops once the count passes ``stop``. Returns None for bytes that are not valid
    protobuf or nest deeper than ``max_stack`` messages; the decoder then reports them.
    """
    others = ("max_initializers", "max_value_info", "max_graph_io", "max_node_io")
    counts = _WireCounts(Limits(max_nodes=stop, **dict.fromkeys(others, 2**63)))
    return counts.nodes if counts.walk(buf, max_stack) else None


def over_limits_on_wire(buf: bytes, limits: Limits) -> tuple[str, dict[str, object]] | None:
    """The first count of a serialized ModelProto over ``limits``, without decoding it.

    ``("nodes", {"count", "limit"})`` for ``max-nodes``, else an OL008 message id and
    its arguments (initializers, value_info, graph and node inputs plus outputs). None
    when nothing is over, or when the bytes are not valid protobuf (the decoder says so).
    Decoding costs about ten times the wire size for small messages (an If declaring
    10^6 typed outputs, 54 MB, peaked at 678 MB before it was refused after decoding).
    """
    counts = _WireCounts(limits)
    if not counts.walk(buf):
        return None
    return counts.over


class _WireCounts:
    """Walks only the messages that can hold nodes (graphs, nodes, attributes, functions,
    training info) and skips everything else by its length, so weights cost nothing;
    counts the fields it passes. Depth-first, so memory stays proportional to the
    nesting, not to the counts. Stops at the first count over its limit."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.nodes = self.initializers = self.value_info = 0
        self.over: tuple[str, dict[str, object]] | None = None

    def walk(self, buf: bytes, max_stack: int = 512) -> bool:
        """Count; False for bytes that are not valid protobuf or nest too deep."""
        limits = self.limits
        # (resume position, end, kind, inputs plus outputs seen) of the enclosing messages
        stack: list[tuple[int, int, int, int]] = []
        pos, end, kind, io = 0, len(buf), _MODEL, 0
        try:
            while True:
                if pos >= end:
                    if pos > end:
                        return False
                    if not stack:
                        return True
                    pos, end, kind, io = stack.pop()
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
                    field = (kind, tag >> 3)
                    counted = _COUNTED.get(field)
                    if counted is not None and self._count(counted, kind, io + 1, len(stack)):
                        return True
                    if counted == "io":
                        io += 1
                    child = _CHILDREN.get(field)
                    if child is None:
                        pos += length
                        continue
                    if pos + length > end or len(stack) >= max_stack:
                        return False
                    if child == _NODE:
                        self.nodes += 1
                        if self.nodes > limits.max_nodes:
                            self.over = ("nodes", {"count": self.nodes, "limit": limits.max_nodes})
                            return True
                    # resume this message after the child, and descend into the child now
                    stack.append((pos + length, end, kind, io))
                    end, kind, io = pos + length, child, 0
                else:
                    return False  # groups do not occur in ONNX
        except _Malformed:
            return False

    def _count(self, counted: str, kind: int, io: int, depth: int) -> bool:
        """Count one field; True (with ``over`` set) when that passes a limit."""
        limits = self.limits
        if counted == "initializers":
            self.initializers += 1
            count, limit = self.initializers, limits.max_initializers
            args: dict[str, object] = {}
        elif counted == "value_info":
            self.value_info += 1
            count, limit, args = self.value_info, limits.max_value_info, {}
        elif kind == _NODE:
            counted, count, limit = "node_io", io, limits.max_node_io
            args = {"where": _WIRE_WHERE[kind]}
        else:
            counted, count, limit = "graph_io", io, limits.max_graph_io
            main = kind == _GRAPH and depth == 1
            args = {"where": "main" if main else _WIRE_WHERE[kind]}
        if count > limit:
            self.over = (counted, {**args, "count": count, "limit": limit})
        return self.over is not None


def _is_depth_error(exc: BaseException) -> bool:
    """protobuf's decoder refuses nesting past 100 messages ("Exceeded ...MaxDepth")."""
    if isinstance(exc, RecursionError):
        return True
    message = _one_line(exc).lower()
    return any(word in message for word in ("recursion", "nest", "maxdepth", "max_depth"))


def _fail(
    result: LoadedModel, rule: type[load_rules.LoadRule], message_id: str, **args: Any
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
