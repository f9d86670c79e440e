"""The curated EP facts (``rules/facts/``) and how they are merged into a profile.

The facts are JSON data beside the profiles; this module only reads and applies them:

- ``rules/facts/profiles/<id>.json``: the EP-wide header of profile ``<id>`` (``header``,
  copied into the profile as is) and the overlay parts it takes (``overlays``, in order);
  ``base`` names header fields several variants of one EP share
  (``rules/facts/bases/<name>.json``): the profile's own fields are laid over them;
- ``rules/facts/overlays/<part>.json``: per-op changes (``ops``): extra ``constraints``
  (appended), ``types``/``graph_io_types`` (merged per slot), ``versions`` (replace),
  ``remove`` (drop the op), ``add`` (a whole op entry when the op is absent), ``replace``
  (the whole op entry, whatever was made before); every constraint names its provenance
  record. ``adopted-<id>.json`` holds what ``gen_profiles.py adopt`` took over from a
  hand-edited profile, as whole-entry replacements to be moved to the part they belong to;
- ``rules/facts/fitted/<id>.json``: ops and element types fitted to a probe measurement
  (``gen_profiles.py fit``);
- ``rules/facts/sources/<id>.json``: what the upstream extraction read (op entries,
  provenance, source-derived header fields), written by the extraction commands of
  ``gen_profiles.py``, the only step that needs the upstream clones;
- ``rules/facts/names.json``: op-name sets the extractors need (contrib op names that op
  lists spell without a domain, the VitisAI op list).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

FACTS = Path(__file__).resolve().parent.parent / "rules" / "facts"

Key = tuple[str, str]


def _read(relative: str) -> Any:
    return json.loads((FACTS / relative).read_text(encoding="utf-8"))


@cache
def names() -> dict[str, Any]:
    return _read("names.json")  # type: ignore[no-any-return]


def ms_contrib_names() -> frozenset[str]:
    """Contrib (com.microsoft) op names that op lists spell without a domain."""
    return frozenset(names()["ms_contrib_names"])


def ov_contrib_ops() -> frozenset[str]:
    """OpenVINO's op list matches by op type only; these names are also contrib ops."""
    return frozenset(names()["ov_contrib_ops"])


def vitisai_ops() -> list[str]:
    return sorted(names()["vitisai_ops"])


def profile_ids() -> list[str]:
    return sorted(p.stem for p in (FACTS / "profiles").glob("*.json"))


def header(profile_id: str) -> dict[str, Any]:
    """The curated EP-wide header of a profile (a fresh copy): its base's fields, in the
    base's order, with the profile's own laid over them."""
    doc = _read(f"profiles/{profile_id}.json")
    base = base_header(doc["base"]) if "base" in doc else {}
    return copy.deepcopy({**base, **doc["header"]})


def base_header(name: str) -> dict[str, Any]:
    return dict(_read(f"bases/{name}.json")["header"])


def overlay_parts(profile_id: str) -> list[str]:
    return list(_read(f"profiles/{profile_id}.json").get("overlays", []))


def overlay(profile_id: str, parts: list[str] | None = None) -> dict[Key, dict[str, Any]]:
    """The per-op overlay of a profile: its parts (default: the profile's) merged in order."""
    out: dict[Key, dict[str, Any]] = {}
    for part in overlay_parts(profile_id) if parts is None else parts:
        for row in _read(f"overlays/{part}.json")["ops"]:
            cur = out.setdefault((row["domain"], row["op"]), {})
            for k, v in row.items():
                if k in ("domain", "op"):
                    continue
                if k == "constraints":
                    cur.setdefault("constraints", []).extend(v)
                elif k in ("types", "graph_io_types"):
                    cur.setdefault(k, {}).update(v)
                else:
                    cur[k] = v
    return out


def source_path(profile_id: str) -> Path:
    return FACTS / "sources" / f"{profile_id}.json"


def fitted_path(profile_id: str) -> Path:
    return FACTS / "fitted" / f"{profile_id}.json"


def _only_in_model_constraint() -> dict[str, Any]:
    return {
        "kind": "always",
        "reason": "OpenVINO does not take this op as the first node of a graph of at most "
        "3 nodes (it only works as an intermediate node)",
        "provenance": "ov-capability",
        "graph_nodes_at_most": 3,
    }


def apply_overlay(
    profile_id: str,
    ops: list[dict[str, Any]],
    extras: dict[str, Any],
    parts: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Merge the fitted measurement and the curated overlay (its ``parts``, default: the
    profile's) into extracted op entries."""
    by_key = {(o["domain"], o["op"]): o for o in copy.deepcopy(ops)}
    _apply_fitted(profile_id, by_key)
    for op in extras.get("only_in_model", []):
        if ("ai.onnx", op) in by_key:
            by_key[("ai.onnx", op)].setdefault("constraints", []).append(
                _only_in_model_constraint()
            )
    for key, change in overlay(profile_id, parts).items():
        if "replace" in change:
            by_key[key] = copy.deepcopy(change["replace"])
            continue
        entry = by_key.get(key)
        if change.get("remove"):
            by_key.pop(key, None)
            continue
        if entry is None:
            if "add" not in change:
                continue
            entry = copy.deepcopy(change["add"])
            by_key[key] = entry
        if "versions" in change:
            entry["versions"] = copy.deepcopy(change["versions"])
        for field in ("types", "graph_io_types"):
            if field in change:
                entry.setdefault(field, {}).update(change[field])
        for c in change.get("constraints", []):
            entry.setdefault("constraints", []).append(copy.deepcopy(c))
    return list(by_key.values())


def _apply_fitted(profile_id: str, by_key: dict[Key, dict[str, Any]]) -> None:
    """Ops and element types fitted to the probe measurement (``fitted/<id>.json``)."""
    path = fitted_path(profile_id)
    if not path.exists():
        return
    fit = json.loads(path.read_text(encoding="utf-8"))
    prov = names()["measured_provenance"].get(profile_id)
    for domain, op in fit["add_ops"]:
        if (domain, op) not in by_key and prov:
            by_key[(domain, op)] = {"domain": domain, "op": op, "provenance": prov}
    for domain, op in fit["remove_ops"]:
        by_key.pop((domain, op), None)
    for field in ("types", "graph_io_types"):
        for key, slots in fit.get(field, {}).items():
            domain, op = key.split("::")
            entry = by_key.get((domain, op))
            if entry is not None:
                entry.setdefault(field, {}).update(slots)
