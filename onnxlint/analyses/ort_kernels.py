"""What the installed onnxruntime's CPU EP has kernels for.

ORT's kernel registry is read once per ORT build and kept in the cache folder
(``ort-kernels/``, keyed like the ORT limits by the build: version, location, size and
mtime of its native libraries), so that a lint does not import onnxruntime (about
0.15 s) to look up one operator. ``ONNXLINT_NO_CACHE`` turns the file off; an entry
that is unreadable, of another schema or another build is read from ORT again and
rewritten.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from onnxlint.ep_names import CPU_EP

KERNELS_SCHEMA = "onnxlint-ort-cpu-kernels/1"
#: a kernel table is a few KB; anything larger in its place is not one
MAX_ENTRY_BYTES = 1 << 20

Kernels = dict[str, list[tuple[int, int]]]


@functools.cache
def _cpu_kernels() -> Kernels | None:
    """ai.onnx op -> CPU kernel version ranges of the installed onnxruntime (None if unknown)."""
    from onnxlint.runtime.identity import cache_enabled, ort_identity

    identity = ort_identity()
    use_disk = identity is not None and cache_enabled(None)
    path = _kernels_file(identity) if identity is not None else None
    if use_disk and path is not None:
        stored = _stored(path, identity)
        if stored is not None:
            return stored
    found = _from_ort()
    if use_disk and path is not None and found is not None and _imported_is(identity):
        from onnxlint.cachefs import make_private_dir
        from onnxlint.fsutil import atomic_write_text

        record = {"schema": KERNELS_SCHEMA, "ort": identity, "kernels": found}
        try:
            make_private_dir(path.parent)
            atomic_write_text(path, json.dumps(record, sort_keys=True))
        except OSError:
            pass  # a read-only cache folder: ORT is asked again by the next process
    return found


def _from_ort() -> Kernels | None:
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

        out: Kernels = {}
        for k in ort_state.get_all_opkernel_def():
            if k.provider == CPU_EP and k.domain in ("", "ai.onnx"):
                lo, hi = k.version_range
                out.setdefault(k.op_name, []).append((int(lo), int(hi)))
        return out
    except Exception:
        return None


def _imported_is(identity: dict[str, Any] | None) -> bool:
    """Whether the onnxruntime this process imported is the build ``identity`` names
    (a folder of that name in the working directory could shadow it here, not in the
    isolated worker the identity describes): only its table is stored under that key."""
    import sys

    mod = sys.modules.get("onnxruntime")
    where = getattr(mod, "__file__", None)
    return bool(identity and where and str(Path(where).parent) == identity.get("package"))


def _kernels_file(identity: dict[str, Any]) -> Path:
    from onnxlint.cachefs import keyed_file

    return keyed_file("ort-kernels", {"schema": KERNELS_SCHEMA, "ort": identity})


def _stored(path: Path, identity: dict[str, Any] | None) -> Kernels | None:
    """The table stored at ``path`` for this ORT build; None when there is none to trust."""
    from onnxlint.cachefs import UnusableEntry, read_entry

    try:
        data = read_entry(path, MAX_ENTRY_BYTES)
        if data is None:
            return None
        record = json.loads(data)
        if record.get("schema") != KERNELS_SCHEMA or record.get("ort") != identity:
            return None
        out: Kernels = {}
        for op, ranges in record["kernels"].items():
            pairs = [(lo, hi) for lo, hi in ranges]
            if not isinstance(op, str) or not all(
                type(lo) is int and type(hi) is int for lo, hi in pairs
            ):
                return None
            out[op] = pairs
        return out
    except (UnusableEntry, OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # read from ORT again and rewritten


def ort_registers(op_type: str) -> bool | None:
    """Whether the installed onnxruntime's CPU EP has a kernel for ``op_type`` in the
    ai.onnx domain at some version, ONNX's operators or not (ORT registers some contrib
    kernels there, such as SimplifiedLayerNormalization); None when it cannot tell."""
    kernels = _cpu_kernels()
    return None if kernels is None else op_type in kernels


def cpu_has_kernel(op_type: str, since: int | None) -> bool:
    kernels = _cpu_kernels()
    if kernels is None:
        return True  # cannot tell: assume ORT runs the op as it is, not expanded
    ranges = kernels.get(op_type, [])
    return any(lo <= (since or lo) <= hi for lo, hi in ranges)
