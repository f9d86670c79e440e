"""External data: where a model's weights live outside it, checked without opening them.

A location must be a plain relative path inside the model's folder that names a regular
file long enough for the tensor; each problem is an OL010-OL012 record. Nothing here
reads a weights file; a stat is the most it does.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

import onnx

from onnxlint import lintdeps
from onnxlint.diagnostics import Location
from onnxlint.modelfile.problem import LoadProblem
from onnxlint.tensors import has_external_data, iter_tensors

if TYPE_CHECKING:
    from onnxlint.modelfile.read import LoadedModel


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


def external_locations(model: onnx.ModelProto) -> list[str]:
    """The distinct external-data locations ``model``'s tensors name, as written."""
    out: dict[str, None] = {}
    for tensor, _ in iter_tensors(model, paths=False):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            out.setdefault(location)
    return list(out)


def external_data_files(loaded: LoadedModel) -> list[Path]:
    """The external-data files a loaded model references inside its folder (resolved; the
    ones that exist), so that a writer never replaces a model's weights. Nothing is opened."""
    base = loaded.base_dir
    if loaded.model is None or base is None:
        return []
    out: dict[Path, None] = {}
    for tensor, _ in iter_tensors(loaded.model, paths=False):
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


def check_external_data(model: onnx.ModelProto, base_dir: Path | None) -> Iterator[LoadProblem]:
    """Validate each external-data reference without ever opening the data file."""
    checked: dict[str, int | None] = {}
    if not has_external_data(model):
        return  # the walk that names each tensor's graph is for the external ones only
    for tensor, where in iter_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        loc = Location(graph=where, tensor=tensor.name or None)
        location = info.get("location", "")
        why = unsafe_location(location)
        if why:
            yield _problem("OL011", loc, "default", location=location, why=why)
            continue
        if base_dir is None:
            yield _problem("OL010", loc, "no_folder", location=location)
            continue
        if location not in checked:
            checked[location] = None
            lintdeps.looked_at(base_dir / location)
            try:
                # ORT and onnx resolve the location against the model's folder; both it
                # and the target are resolved so a symlinked folder cannot lead outside
                root = base_dir.resolve(strict=True)
                real = (root / location).resolve()
                if root != real and root not in real.parents:
                    yield _problem(
                        "OL011",
                        loc,
                        "default",
                        location=location,
                        why="resolves outside the model folder (symlink)",
                    )
                    continue
                # stat only, never opened; the resolved path has no link left to follow
                st = os.stat(real, follow_symlinks=False)
            except FileNotFoundError:
                yield _problem("OL010", loc, "default", location=location)
                continue
            except (OSError, RuntimeError) as exc:
                yield _problem("OL010", loc, "os_error", location=location, error=str(exc))
                continue
            if not stat.S_ISREG(st.st_mode):
                yield _problem(
                    "OL011",
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
            yield _problem("OL012", loc, "bad_numbers", location=location)
            continue
        if length is None:
            length = _expected_nbytes(tensor)
        if length is not None and (offset < 0 or offset + length > size):
            yield _problem(
                "OL012", loc, "default", location=location, offset=offset, length=length, size=size
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


def _problem(code: str, where: Location, message_id: str, **args: Any) -> LoadProblem:
    return LoadProblem(code, message_id, args, where)
