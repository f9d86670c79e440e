"""Validation of profile JSON: the schema (``rules/schema/ep-profile.schema.json``,
``jsonschema`` imported only when a profile is validated) and the checks it cannot
express; every problem is reported with its JSON path."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from typing import Any

from onnxlint.data import data_dir
from onnxlint.profiles.model import ProfileError

SCHEMA_FILE = "schema/ep-profile.schema.json"


def json_path(parts: Iterable[str | int]) -> str:
    """``['ops', 12, 'versions', 0, 'from']`` -> ``ops[12].versions[0].from``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(root)"


@cache
def _validator() -> Any:
    import jsonschema  # lazy: only needed when a profile is actually loaded

    schema = json.loads((data_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _leaf_errors(error: Any) -> list[Any]:
    """Descend into if/then, anyOf and allOf wrappers to the errors a user can act on."""
    if error.context:
        out: list[Any] = []
        for sub in error.context:
            out.extend(_leaf_errors(sub))
        return out
    return [error]


def validate_profile_data(data: Any, source: str = "<profile>") -> None:
    """Raise :class:`ProfileError` naming the JSON path of every problem in ``data``."""
    errors: list[tuple[str, str]] = []
    for err in _validator().iter_errors(data):
        for leaf in _leaf_errors(err):
            errors.append((json_path(leaf.absolute_path), leaf.message))
    if not errors and isinstance(data, dict):
        errors.extend(_semantic_errors(data))
    if errors:
        unique = sorted(set(errors), key=lambda e: _path_sort_key(e[0]))
        raise ProfileError(source, [f"{p}: {m}" for p, m in unique])


def _path_sort_key(path: str) -> tuple[Any, ...]:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"[\[\].]+", path) if t)


def _semantic_errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Checks the schema cannot express: references, duplicates, ordered ranges."""
    errors: list[tuple[str, str]] = []
    prov_ids = [p["id"] for p in data.get("provenance", [])]
    for i, pid in enumerate(prov_ids):
        if prov_ids.index(pid) != i:
            errors.append((json_path(["provenance", i, "id"]), f"duplicate provenance id {pid!r}"))
    known = set(prov_ids)

    def check_constraints(items: list[dict[str, Any]], path: list[str | int]) -> None:
        for j, c in enumerate(items):
            ref = c.get("provenance")
            if ref is not None and ref not in known:
                errors.append(
                    (json_path([*path, j, "provenance"]), f"unknown provenance id {ref!r}")
                )
            if c.get("kind") == "attribute" and not (
                "allowed" in c or "forbidden" in c or c.get("absent")
            ):
                errors.append(
                    (
                        json_path([*path, j]),
                        "an attribute constraint needs 'allowed', 'forbidden' or 'absent'",
                    )
                )

    check_constraints(data.get("global_constraints", []), ["global_constraints"])
    for i, r in enumerate(data.get("requantized_constant_failures", [])):
        ref = r.get("provenance")
        if ref is not None and ref not in known:
            path: list[str | int] = ["requantized_constant_failures", i, "provenance"]
            errors.append((json_path(path), f"unknown provenance id {ref!r}"))
    ref = data.get("refusal_consequence", {}).get("provenance")
    if ref is not None and ref not in known:
        errors.append(
            (json_path(["refusal_consequence", "provenance"]), f"unknown provenance id {ref!r}")
        )
    if data.get("cpu_preferred_shape_nodes") and not data.get("kernel_memory", {}).get(
        "cpu_outputs"
    ):
        errors.append(
            (
                json_path(["cpu_preferred_shape_nodes"]),
                "ORT's CPU preference starts from the outputs a kernel leaves in CPU memory: "
                "give kernel_memory.cpu_outputs (e.g. Shape and Size, output 0)",
            )
        )
    if data.get("partitioning", {}).get("cluster_breakers") and (
        data.get("partitioning", {}).get("grouping") != "clusters"
    ):
        errors.append(
            (
                json_path(["partitioning", "cluster_breakers"]),
                "cluster_breakers apply only with partitioning.grouping 'clusters'",
            )
        )
    seen: dict[tuple[str, str], int] = {}
    for i, op in enumerate(data.get("ops", [])):
        key = (op["domain"], op["op"])
        if key in seen:
            errors.append(
                (json_path(["ops", i]), f"duplicate entry for {key[0]}.{key[1]} (ops[{seen[key]}])")
            )
        seen.setdefault(key, i)
        if op["provenance"] not in known:
            errors.append(
                (json_path(["ops", i, "provenance"]), f"unknown provenance id {op['provenance']!r}")
            )
        check_constraints(op.get("constraints", []), ["ops", i, "constraints"])
        for k, r in enumerate(op.get("versions", [])):
            if "to" in r and r["to"] < r["from"]:
                errors.append(
                    (
                        json_path(["ops", i, "versions", k, "to"]),
                        f"range ends ({r['to']}) before it starts ({r['from']})",
                    )
                )
            check_constraints(r.get("constraints", []), ["ops", i, "versions", k, "constraints"])
    return errors
