"""Tables read from the installed onnxruntime once per ORT build and kept in the cache
folder (keyed like the ORT limits by the build: version, location, size and mtime of its
native libraries), so that a lint does not import onnxruntime to look one fact up.
``ONNXLINT_NO_CACHE`` turns the files off; an entry that is unreadable, of another schema
or another build, or that its reader does not accept, is read from ORT again and
rewritten. Only a table of the onnxruntime this process imported is stored under its
build's key (a folder of that name in the working directory could shadow it here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def ort_table(
    kind: str,
    schema: str,
    field: str,
    ask: Callable[[], T | None],
    parse: Callable[[Any], T | None],
    max_bytes: int,
) -> T | None:
    """The table ``ask`` reads from onnxruntime, kept in the cache folder ``kind`` as
    ``{"schema": schema, "ort": <build>, field: <table>}``; ``parse`` turns a stored table
    back into one (None, or a ValueError/TypeError/KeyError/AttributeError, when it does
    not trust it). None when ORT cannot tell."""
    from onnxlint.runtime.identity import cache_enabled, ort_identity

    identity = ort_identity()
    use_disk = identity is not None and cache_enabled(None)
    path = _file(kind, schema, identity) if identity is not None else None
    if use_disk and path is not None:
        stored = _stored(path, schema, identity, field, parse, max_bytes)
        if stored is not None:
            return stored
    found = ask()
    if use_disk and path is not None and found is not None and imported_is(identity):
        from onnxlint.cachefs import make_private_dir
        from onnxlint.fsutil import atomic_write_text

        record = {"schema": schema, "ort": identity, field: found}
        try:
            make_private_dir(path.parent)
            atomic_write_text(path, json.dumps(record, sort_keys=True))
        except OSError:
            pass  # a read-only cache folder: ORT is asked again by the next process
    return found


def imported_is(identity: dict[str, Any] | None) -> bool:
    """Whether the onnxruntime this process imported is the build ``identity`` names."""
    import sys

    mod = sys.modules.get("onnxruntime")
    where = getattr(mod, "__file__", None)
    return bool(identity and where and str(Path(where).parent) == identity.get("package"))


def _file(kind: str, schema: str, identity: dict[str, Any]) -> Path:
    from onnxlint.cachefs import keyed_file

    return keyed_file(kind, {"schema": schema, "ort": identity})


def _stored(
    path: Path,
    schema: str,
    identity: dict[str, Any] | None,
    field: str,
    parse: Callable[[Any], T | None],
    max_bytes: int,
) -> T | None:
    """The table stored at ``path`` for this ORT build; None when there is none to trust."""
    from onnxlint.cachefs import UnusableEntry, read_entry

    try:
        data = read_entry(path, max_bytes)
        if data is None:
            return None
        record = json.loads(data)
        if record.get("schema") != schema or record.get("ort") != identity:
            return None
        return parse(record[field])
    except (UnusableEntry, OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # read from ORT again and rewritten
