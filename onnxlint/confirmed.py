"""Confirmed beats predicted: what the real sessions (``--confirm``) say about the findings.

The confirmation stage records, per EP, the nodes a real session placed differently from
the prediction (``report.stats["confirmation"]``, node for node on the exported graph,
i.e. the session with optimizations disabled). A prediction finding those placements
contradict (the EP was said to refuse a node, or a CPU island was predicted between its
partitions, and the session put the nodes on the EP) is *disproved*: it keeps its place
in the report, downgraded to a hint and marked ``disproved`` (a field, rendered as
"disproved by the real EP" by every front end), so it no longer gates or shows by default.

One implementation for the CLI, JSON/SARIF, the Python API and the language server: the
engine applies it to every report; front ends only render the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from onnxlint.diagnostics import Diagnostic, Severity
from onnxlint.ep_names import CPU_EP
from onnxlint.report import Report

#: the session level whose graph is the exported one (node for node comparable)
EXPORTED_LEVEL = "disabled"
#: prediction findings a real placement can contradict: "EP refuses this node" (OL501-OL505),
#: "EP claims it but ORT leaves it on CPU" (OL601), "a CPU island between partitions" (OL602)
_REFUSALS = ("OL501", "OL502", "OL503", "OL504", "OL505", "OL601")
_ISLANDS = ("OL602",)


def _moved(conf: Mapping[str, Any]) -> dict[str, str]:
    """Node path -> real EP, where one EP's exported-graph session differs from the prediction."""
    moved: dict[str, str] = {}
    for level in conf.get("levels") or []:
        if not isinstance(level, Mapping) or level.get("level") != EXPORTED_LEVEL:
            continue
        for node, pair in (level.get("mismatches") or {}).items():
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[1]:
                moved[str(node)] = str(pair[1])
    return moved


def _confirmations(report: Report) -> list[Mapping[str, Any]]:
    return [c for c in report.stats.get("confirmation") or [] if isinstance(c, Mapping)]


def real_placements(report: Report) -> dict[str, dict[str, str]]:
    """EP (profile id and ORT name) -> node path -> the EP a real session put that node on,
    for the nodes where it differs from the prediction."""
    out: dict[str, dict[str, str]] = {}
    for conf in _confirmations(report):
        moved = _moved(conf)
        for key in (conf.get("ep"), conf.get("profile_id")):
            if key:
                out.setdefault(str(key), {}).update(moved)
    return out


def real_eps(report: Report) -> dict[str, str]:
    """Node path -> the EP a real session put it on, where that differs from the prediction
    (every EP's confirmation together; what the editor's hover shows)."""
    out: dict[str, str] = {}
    for conf in _confirmations(report):
        out.update(_moved(conf))
    return out


def disproval(d: Diagnostic, placements: Mapping[str, Mapping[str, str]]) -> dict[str, Any] | None:
    """Why the real sessions contradict ``d`` (``{"ep": ..., "nodes": {path: ep}}``), or None."""
    if d.ep is None or d.disproved is not None:
        return None
    moved = placements.get(d.ep)
    if not moved:
        return None
    if d.code in _REFUSALS:
        path = d.location.node_path
        actual = moved.get(path) if path else None
        return {"ep": d.ep, "nodes": {path: actual}} if actual and actual != CPU_EP else None
    if d.code in _ISLANDS:
        paths = [p for p in (r.node_path for r in (d.location, *d.related)) if p]
        paths = list(dict.fromkeys(paths))
        actual_by_path = {p: moved.get(p) for p in paths}
        if paths and all(a and a != CPU_EP for a in actual_by_path.values()):
            return {"ep": d.ep, "nodes": actual_by_path}
    return None


def apply_confirmation(report: Report) -> int:
    """Downgrade and mark the findings the real sessions disprove; returns how many."""
    placements = real_placements(report)
    if not placements:
        return 0
    n = 0
    out = []
    for d in report.diagnostics:
        why = disproval(d, placements)
        if why is not None:
            d = replace(d, severity=Severity.HINT, disproved=why)
            n += 1
        out.append(d)
    if n:
        report.diagnostics = out
        report.stats["disproved"] = n
    return n
