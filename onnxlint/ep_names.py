"""EP names: ORT's provider names, their short forms, and the one table of names users type.

ORT names an EP by its provider name (``QNNExecutionProvider``); users type a short name or
an alias (``qnn``, ``htp``, ``trt``, ``openvino-gpu``). Every name resolves through one
table built from the shipped profile index (``rules/eps/index.json``): profile ids and
their aliases name a profile, and the EP's provider name, with or without the
``ExecutionProvider`` suffix, names the EP's default profile. ``--ep``, the runner
configuration and ``--confirm``'s sessions all read it, so a name means the same EP
everywhere.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from onnxlint.data import load_json

#: ORT's always-present fallback EP
CPU_EP = "CPUExecutionProvider"
_SUFFIX = "ExecutionProvider"


def short_ep(ep: str) -> str:
    """``QNNExecutionProvider`` -> ``QNN`` (other names unchanged)."""
    return ep[: -len(_SUFFIX)] if ep.endswith(_SUFFIX) else ep


def short_name(provider: str) -> str:
    """``QNNExecutionProvider`` -> ``qnn``: the lower-case short form (runner keys, probe files)."""
    return short_ep(provider).lower()


@cache
def _rows() -> tuple[dict[str, Any], ...]:
    return tuple(load_json("eps/index.json")["profiles"])


@cache
def alias_table() -> dict[str, str]:
    """Lower-cased name -> profile id. Profile ids and explicit aliases win over EP names."""
    table: dict[str, str] = {}
    rows = _rows()
    # EP names (full and without the suffix) point at the EP's default variant
    for row in sorted(rows, key=lambda r: not r.get("default_for_ep", False)):
        for name in (row["ep"], short_ep(row["ep"])):
            table.setdefault(name.lower(), row["id"])
    for row in rows:
        for name in row.get("aliases", []):
            table[name.lower()] = row["id"]
        table[row["id"].lower()] = row["id"]
    return table


def profile_id(name: str) -> str | None:
    """The profile a name or alias stands for (None: no shipped profile has it)."""
    return alias_table().get(name.strip().lower())


def providers() -> list[str]:
    """Every provider name a shipped profile describes, sorted."""
    return sorted({r["ep"] for r in _rows()})


def provider_for(name: str) -> str | None:
    """``qnn``/``htp``/``qnn-cpu`` -> ``QNNExecutionProvider``; provider names pass through;
    None for a name no profile has."""
    if name.endswith(_SUFFIX):
        return name
    pid = profile_id(name)
    return next((r["ep"] for r in _rows() if r["id"] == pid), None)


def names_for(provider: str) -> list[str]:
    """Every name that resolves to ``provider``, in the table's order."""
    ids = {r["id"] for r in _rows() if r["ep"] == provider}
    return [name for name, pid in alias_table().items() if pid in ids]


def variant_options(name: str) -> dict[str, str]:
    """The provider options of the variant a name picks, when it is not the EP's default
    (``qnn-cpu`` -> ``backend_type=cpu``); empty for a default variant or an unknown name."""
    pid = profile_id(name)
    row = next((r for r in _rows() if r["id"] == pid), None)
    if row is None or row.get("default_for_ep", False):
        return {}
    options = row.get("variant", {}).get("provider_options", {})
    return {str(k): str(v) for k, v in options.items()}
