"""Reading a model safely: the one guarded entrance for model bytes.

Accepts a path (binary ``.onnx`` or ONNX text ``.onnxtxt``), raw bytes or an
``onnx.ModelProto``. External weights are never read: each external-data reference
is validated instead (:mod:`onnxlint.modelfile.external`). Bad input becomes
:class:`~onnxlint.modelfile.problem.LoadProblem` records, never an exception;
``onnxlint.loader.load`` turns them into the load rules' diagnostics. Nothing here
writes to disk.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

from onnxlint.index import stored_graphs
from onnxlint.limits import Limits
from onnxlint.modelfile.external import check_external_data
from onnxlint.modelfile.measure import (
    MAX_TYPE_NESTING,
    count_declarations,
    count_expansion,
    deepest_type,
    first_string_problem,
    measure,
    node_within_limits,
    serialized_size,
)
from onnxlint.modelfile.prescan import (
    _varint,
    over_limits_on_wire,
    text_nesting,
    text_nesting_limit,
)
from onnxlint.modelfile.problem import LoadProblem
from onnxlint.tensors import has_external_data, node_has_external_data

if TYPE_CHECKING:
    from onnxlint.diagnostics import Diagnostic

TEXT_SUFFIXES = (".onnxtxt", ".onnxtext")


@dataclass
class LoadedModel:
    model: onnx.ModelProto | None
    path: Path | None = None
    content_hash: str = ""
    #: bytes of the file, or of the serialised ModelProto (0: a ModelProto read with
    #: ``hash_proto=False`` is not measured)
    size: int = 0
    #: what was wrong, as records (a fatal one makes ``model`` None)
    problems: list[LoadProblem] = field(default_factory=list)
    is_text: bool = False
    #: the problems as the load rules' diagnostics (``onnxlint.loader.load`` fills them)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: the protobuf bytes ``model`` was parsed from, while the lint may still hand them
    #: to a consumer that would otherwise serialise the model again (the checker);
    #: None for ONNX text and a ModelProto. ``release_wire()`` drops them, so that they
    #: do not stay in memory beside the model for the whole lint
    wire: bytes | None = field(default=None, repr=False)
    #: whether some tensor keeps its data in another file (None: not looked at); the load
    #: walks every tensor once to tell, so that later consumers need not walk again
    external: bool | None = None

    @property
    def fatal(self) -> bool:
        """True when the model could not be read at all (exit code 2)."""
        return self.model is None

    def release_wire(self) -> None:
        """Drop the parsed bytes (``wire``): after the checker, nothing reads them."""
        self.wire = None

    #: the model file with every symlink resolved (set once the path was found)
    real_path: Path | None = None

    @property
    def base_dir(self) -> Path | None:
        """The folder external data and sidecars resolve against: the real file's folder,
        as ORT sees it when given the resolved path (never the working directory)."""
        if self.real_path is not None:
            return self.real_path.parent
        return self.path.parent if self.path is not None else None


def read(
    source: str | os.PathLike[str] | bytes | onnx.ModelProto,
    limits: Limits | None = None,
    root: str | os.PathLike[str] | None = None,
    *,
    hash_proto: bool = True,
    keep_wire: bool = False,
) -> LoadedModel:
    """Read a model from a path, bytes or a ModelProto; never raises for bad input.

    What was wrong is in ``problems`` (records); ``diagnostics`` stays empty here.

    ``hash_proto=False``: a ModelProto's ``content_hash`` stays empty (and its ``size``
    0) instead of hashing its serialised bytes (for a model made inside onnxlint, e.g. a what-if's pinned copy,
    whose report nobody keys anything by).

    ``root`` (paths only) is the folder being linted: a model path whose real file lies
    outside it (a symlink leading elsewhere) is reported and never read. It defaults to
    the folder the path names.

    ``keep_wire``: keep the protobuf bytes a binary model was parsed from in
    ``LoadedModel.wire`` (for a lint, which releases them after its checker).
    """
    limits = limits or Limits()
    if isinstance(source, onnx.ModelProto):
        # measured before ByteSize(): protobuf's C code recurses per level and crashes
        # (SIGSEGV) on a ModelProto nested tens of thousands deep
        depth, _ = measure(source, limits)
        if depth > limits.max_subgraph_depth:
            return _fail(
                LoadedModel(model=None),
                "OL005",
                "default",
                depth=depth,
                limit=limits.max_subgraph_depth,
            )
        type_depth = deepest_type(source, MAX_TYPE_NESTING)
        if type_depth > MAX_TYPE_NESTING:  # ByteSize() recursed into it and crashed
            return _fail(
                LoadedModel(model=None),
                "OL005",
                "type",
                depth=type_depth,
                limit=MAX_TYPE_NESTING,
            )
        # upb's ByteSize() serialises the message: on a model with hundreds of MB of
        # weights it costs as much as SerializeToString (serialized_size does not). The
        # size only decides whether to hash: unhashed, it is not measured either
        size = serialized_size(source) if hash_proto else 0
        if not hash_proto:
            digest = ""
        elif size < limits.max_file_bytes:
            digest = _hash(source.SerializeToString(deterministic=True))
        else:
            digest = _hash(b"")
        result = LoadedModel(model=source, content_hash=digest, size=size)
        return _post_checks(result, limits)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        result = LoadedModel(model=None, content_hash=_hash(data), size=len(data))
        loaded = _parse(result, data, is_text=looks_like_text(data), limits=limits)
    else:
        loaded = read_path(Path(source), limits, Path(root) if root is not None else None)
    if not keep_wire:
        loaded.wire = None
    return loaded


#: comments and blank lines before the first token of an ONNX text document
_LEADING_COMMENTS = re.compile(rb"(?:[ \t\r\n]*#[^\n]*)*")
#: leading line breaks that fit the 256-byte look at the start (``looks_like_text``)
_KEPT_BREAKS = 200


def read_text(data: bytes, limits: Limits, label: str = "<document>") -> LoadedModel:
    """An ONNX text document (an editor buffer, or a ``.onnxtxt`` file's bytes) through the
    same guards as :func:`read`, with what was wrong as records.

    :func:`read` tells text from protobuf bytes by their first 256 bytes (``<`` or
    ``ir_version`` first), and a document may begin with comments, so those are dropped
    first, their line breaks kept (a parse error keeps its line) unless there are more
    than ``_KEPT_BREAKS`` of them. A document that is blank is empty (OL003, named by
    ``label``); one without a model header is refused as ONNX text (OL006), never
    decoded as protobuf.
    """
    if not data.strip():
        result = LoadedModel(model=None, content_hash=_hash(data), size=len(data))
        result.is_text = True
        return _fail(result, "OL003", "default", path=label)
    masked = text_payload(data)
    if masked is None:
        result = LoadedModel(model=None, content_hash=_hash(data), size=len(data))
        result.is_text = True
        error = 'no model header: ONNX text begins with <ir_version: ..., opset_import: ["" : ...]>'
        return _fail(result, "OL006", "default", error=error)
    return read(masked, limits)


def text_payload(data: bytes) -> bytes | None:
    """The bytes :func:`read_text` parses and hashes: ``data`` without its leading comments
    (their line breaks kept, up to ``_KEPT_BREAKS``); None when no model header follows
    them (not ONNX text). ``LoadedModel.content_hash`` and ``size`` describe these bytes."""
    match = _LEADING_COMMENTS.match(data)
    head = match.end() if match else 0
    breaks = data.count(b"\n", 0, head)
    masked = (b"\n" * breaks if breaks <= _KEPT_BREAKS else b"") + data[head:]
    if not masked.lstrip().startswith((b"<", b"ir_version")):
        return None
    return masked


def text_payload_hash(payload: bytes) -> str:
    """The ``content_hash`` :func:`read_text` gives a document with this payload."""
    return _hash(payload)


def _checked_file(
    path: Path, limits: Limits, root: Path | None
) -> tuple[LoadedModel, os.stat_result | None]:
    """The record of ``path`` before it is read, with its stat when it may be read (a
    regular file inside ``root``, by default the folder the path names, not empty and
    within the size limit); else the record says why not."""
    result = LoadedModel(model=None, path=path)
    fatal = "OL001"  # file-unreadable
    try:
        st = path.stat()
    except FileNotFoundError:
        return _fail(result, fatal, "missing", path=str(path)), None
    except OSError as exc:
        error = exc.strerror or str(exc)
        return _fail(result, fatal, "os_error", path=str(path), error=error), None
    if not stat.S_ISREG(st.st_mode):
        return _fail(result, fatal, "not_regular", path=str(path)), None
    real = Path(os.path.realpath(path))
    folder = Path(os.path.realpath(root if root is not None else path.parent))
    if folder not in real.parents:
        # a symlink to a credentials file would otherwise be parsed, and ONNX text
        # parse errors quote the offending line into the report
        return _fail(result, fatal, "outside", path=str(path)), None
    result.real_path = real
    result.size = st.st_size
    if st.st_size == 0:
        return _fail(result, "OL003", "default", path=str(path)), None
    if st.st_size > limits.max_file_bytes:
        limit = limits.max_file_bytes
        return _fail(result, "OL004", "default", size=st.st_size, limit=limit), None
    return result, st


def read_path(path: Path, limits: Limits, root: Path | None = None) -> LoadedModel:
    result, st = _checked_file(path, limits, root)
    if st is None:
        return result
    real = result.real_path
    assert real is not None
    fatal = "OL001"  # file-unreadable
    try:
        data = _read_regular_file(real, (st.st_dev, st.st_ino))
    except _NotRegular:
        return _fail(result, fatal, "not_regular", path=str(path))
    except OSError as exc:
        return _fail(result, fatal, "os_error", path=str(path), error=exc.strerror or str(exc))
    digest = _hash_beside(data)
    is_text = path.suffix.lower() in TEXT_SUFFIXES or (
        path.suffix.lower() != ".onnx" and looks_like_text(data)
    )
    parsed = _parse(result, data, is_text=is_text, limits=limits)
    parsed.content_hash = digest()
    return parsed


def read_node_edit(
    path: Path,
    data: bytes,
    digest: str,
    node: tuple[int, int],
    limits: Limits,
    external: bool | None,
) -> LoadedModel | None:
    """The binary model file ``path`` as :func:`read` reads it (its wire kept), from
    ``data``, its bytes as the caller read them (``digest``: their SHA-256), when they
    differ from bytes that loaded with no problem under ``limits`` (``external``: whether
    those had an external tensor) in one main-graph node only: ``data[node[0]:node[1]]``,
    that node's field, tag included. The caller vouches for all that (it compared the two
    files' wire layouts).

    The whole-model checks the other bytes passed are run on that node alone: the path's,
    the node's own strings, inputs and outputs and type nesting, its tensors' locations,
    and, for a model with functions, the count of their expansion. None when that cannot
    show the load would find nothing: the node holds a graph (more nodes, deeper), some
    check fails, or an external tensor is involved; then read the file as usual, and
    the full load words what is wrong."""
    result, st = _checked_file(path, limits, None)
    if st is None or st.st_size != len(data) or len(data) > limits.max_file_bytes:
        return None
    try:
        _, at = _varint(data, node[0], node[1])  # past the field's tag
        _, at = _varint(data, at, node[1])  # and its length
        edited = onnx.NodeProto.FromString(data[at : node[1]])
    except Exception:
        return None
    if next(stored_graphs(edited.attribute), None) is not None:
        return None
    if not node_within_limits(edited, limits):
        return None
    if external is not False or node_has_external_data(edited):
        return None
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:
        return None
    if model.functions and count_expansion(model, limits) is not None:
        return None
    result.model, result.content_hash, result.wire = model, digest, data
    result.external = False
    return result


#: binary files larger than this are counted on the wire before decoding (see ``_parse``)
WIRE_COUNT_FROM_BYTES = 4 << 20


def _parse(result: LoadedModel, data: bytes, is_text: bool, limits: Limits) -> LoadedModel:
    if not data:
        return _fail(result, "OL003", "default", path=str(result.path or "<bytes>"))
    if len(data) > limits.max_file_bytes:
        return _fail(result, "OL004", "default", size=len(data), limit=limits.max_file_bytes)
    result.is_text = is_text
    if is_text:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _fail(result, "OL006", "default", error=f"not UTF-8: {exc}")
        # onnx.parser recurses in C++ and overflows the stack (SIGSEGV) a few thousand
        # brackets deep, so absurd nesting is refused before the parser sees it
        if text_nesting(text, stop=text_nesting_limit(limits)) > text_nesting_limit(limits):
            return _fail(result, "OL005", "parse", limit=limits.max_subgraph_depth)
        try:
            model = onnx.parser.parse_model(text)
        except Exception as exc:
            if _is_depth_error(exc):
                return _fail(result, "OL005", "parse", limit=limits.max_subgraph_depth)
            return _fail(result, "OL006", "default", error=_one_line(exc))
        type_depth = deepest_type(model, MAX_TYPE_NESTING)
        if type_depth > MAX_TYPE_NESTING:
            return _fail(result, "OL005", "type", depth=type_depth, limit=MAX_TYPE_NESTING)
    else:
        # a node, an initializer, a value_info or an input costs at least 2 bytes on the
        # wire but ~150-500 bytes once decoded, so a file that could hold more than the
        # limits allow is counted before it is decoded (smaller files decode harmlessly)
        if len(data) > min(2 * limits.max_nodes, WIRE_COUNT_FROM_BYTES):
            over = over_limits_on_wire(data, limits)
            if over is not None and over[0] == "nodes":
                return _fail(result, "OL007", "default", **over[1])
            if over is not None:
                return _fail(result, "OL008", over[0], **over[1])
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except RecursionError:
            return _fail(result, "OL005", "parse", limit=limits.max_subgraph_depth)
        except Exception as exc:
            if _is_depth_error(exc):
                return _fail(result, "OL005", "parse", limit=limits.max_subgraph_depth)
            return _fail(result, "OL002", "decode", error=_one_line(exc))
        if not model.HasField("graph") or (model.ir_version <= 0 and not model.opset_import):
            return _fail(result, "OL002", "no_graph")
        result.wire = data
    result.model = model
    return _post_checks(result, limits)


def _post_checks(result: LoadedModel, limits: Limits) -> LoadedModel:
    model = result.model
    assert model is not None
    depth, node_count = measure(model, limits)
    if depth > limits.max_subgraph_depth:
        return _fail(
            result,
            "OL005",
            "default",
            depth=depth,
            limit=limits.max_subgraph_depth,
        )
    if node_count > limits.max_nodes:
        return _fail(result, "OL007", "default", count=node_count, limit=limits.max_nodes)
    over = count_declarations(model, limits) or count_expansion(model, limits)
    if over is not None:
        message_id, args = over
        return _fail(result, "OL008", message_id, **args)
    # type nesting: a decoded file nests at most ~100 messages (protobuf's limit), so
    # only a parsed text and a ModelProto given to the API are measured (_parse, load)
    problem = first_string_problem(model, limits.max_name_length)
    if problem is not None:
        field_name, length = problem
        if length is None:
            # upb hands such fields back as bytes, and every consumer expects str
            error = f"{field_name} is not valid UTF-8"
            return _fail(result, "OL002", "decode", error=error)
        return _fail(
            result,
            "OL008",
            "name_length",
            field=field_name,
            count=length,
            limit=limits.max_name_length,
        )
    result.external = has_external_data(model)
    if result.external:
        result.problems += check_external_data(model, result.base_dir)
    return result


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


def _is_depth_error(exc: BaseException) -> bool:
    """protobuf's decoder refuses nesting past 100 messages ("Exceeded ...MaxDepth")."""
    if isinstance(exc, RecursionError):
        return True
    message = _one_line(exc).lower()
    return any(word in message for word in ("recursion", "nest", "maxdepth", "max_depth"))


def _fail(result: LoadedModel, code: str, message_id: str, **args: Any) -> LoadedModel:
    result.model = None
    result.wire = None
    result.problems.append(LoadProblem(code, message_id, args))
    return result


def looks_like_text(data: bytes) -> bool:
    """Whether bytes given without a path (or a path with another suffix than ``.onnx``)
    are read as ONNX text: their first 256 bytes begin with a model header."""
    head = data[:256].lstrip()
    return head.startswith(b"<") or head.startswith(b"ir_version")


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: files at least this large are hashed in a thread while they are decoded
HASH_BESIDE_FROM_BYTES = 8 << 20


def _hash_beside(data: bytes) -> Callable[[], str]:
    """The SHA-256 of ``data``, as a call that returns it: for a large file, computed in a
    thread while the caller decodes and checks the same bytes (hashlib releases the GIL
    while it hashes, so a second core does it: most of a second on a model with hundreds
    of MB of weights). Small files are hashed at once; a thread that failed (out of
    memory) is made up for in the call."""
    if len(data) < HASH_BESIDE_FROM_BYTES:
        digest = _hash(data)
        return lambda: digest
    box: list[str] = []

    def work() -> None:
        with contextlib.suppress(Exception):
            box.append(_hash(data))

    thread = threading.Thread(target=work, name="onnxlint-hash", daemon=True)
    thread.start()

    def result() -> str:
        thread.join()
        return box[0] if box else _hash(data)

    return result


def _one_line(exc: BaseException) -> str:
    # onnx.parser raises with a bytes argument; show its text, not "b'...'"
    raw = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], bytes) else None
    text = " ".join((raw.decode("utf-8", "replace") if raw is not None else str(exc)).split())
    return (text[:300] + "...") if len(text) > 300 else (text or type(exc).__name__)
