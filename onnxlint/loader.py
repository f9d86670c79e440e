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
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

import onnx

from onnxlint.diagnostics import Diagnostic, Location
from onnxlint.limits import Limits
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
        with path.open("rb") as fh:
            data = fh.read()
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
        try:
            model = onnx.parser.parse_model(text)
        except Exception as exc:
            return _fail(result, load_rules.TextParseError, "default", error=_one_line(exc))
    else:
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except RecursionError:
            return _fail(
                result, load_rules.NestingTooDeep, "parse", limit=limits.max_subgraph_depth
            )
        except Exception as exc:
            message = _one_line(exc)
            if "recursion" in message.lower() or "nest" in message.lower():
                return _fail(
                    result, load_rules.NestingTooDeep, "parse", limit=limits.max_subgraph_depth
                )
            return _fail(result, load_rules.NotOnnx, "decode", error=message)
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
    result.diagnostics += list(check_external_data(model, result.base_dir))
    return result


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
        for i, node in enumerate(graph.node):
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t, where
                elif attr.type == onnx.AttributeProto.TENSORS:
                    for t in attr.tensors:
                        yield t, where
                elif attr.type == onnx.AttributeProto.GRAPH:
                    stack.append(
                        (attr.g, f"{where}/{node.name or f'{node.op_type}_{i}'}:{attr.name}")
                    )
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for k, g in enumerate(attr.graphs):
                        label = node.name or f"{node.op_type}_{i}"
                        stack.append((g, f"{where}/{label}:{attr.name}[{k}]"))


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
    text = " ".join(str(exc).split())
    return (text[:300] + "...") if len(text) > 300 else (text or type(exc).__name__)
