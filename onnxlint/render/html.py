"""``--report partitions --html out.html``: a self-contained page of the graph coloured by EP.

The page has no external resources (no scripts or fonts fetched at view
time): inline CSS, inline SVG and a few lines of inline JavaScript for zoom.
The layout is a layered (Sugiyama-style) drawing computed here: layers by
longest path from the inputs, a few barycentre sweeps to reduce crossings,
then straight coordinates. No layout library is used: the JavaScript ones
(dagre, elkjs) would have to be copied into the repository to be inlined,
which this project does not do with upstream code, and grandalf, the
pure-Python option, has had no release since 2023. The layout is small and
tested here instead. Each node is a rectangle in its EP's colour with a
tooltip (name, op, EP, partition); edges that cross between EPs are drawn
thick and dashed, with the bytes they carry per inference.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from onnxlint.ep_names import CPU_EP, short_ep
from onnxlint.render.partitions import ep_verdict
from onnxlint.report import Report
from onnxlint.version import __version__

NODE_W = 132
NODE_H = 30
GAP_X = 24
GAP_Y = 46
SWEEPS = 4

_PALETTE = {
    CPU_EP: "#b9bec7",
    "QNNExecutionProvider": "#4e9a5b",
    "OpenVINOExecutionProvider": "#4a78c2",
    "CUDAExecutionProvider": "#7aa83b",
    "TensorrtExecutionProvider": "#2f8f83",
    "DmlExecutionProvider": "#b5651d",
    "CoreMLExecutionProvider": "#c2497a",
    "NnapiExecutionProvider": "#8a5cc2",
}
_EXTRA = ["#d08c2f", "#3aa0c8", "#9b4dca", "#c24a4a", "#5b8c5a"]


def _color(ep: str, others: list[str]) -> str:
    if ep in _PALETTE:
        return _PALETTE[ep]
    if ep not in others:
        others.append(ep)
    return _EXTRA[others.index(ep) % len(_EXTRA)]


# ---------------------------------------------------------------------------
# Layout


def layered_layout(
    nodes: Sequence[str], edges: Sequence[tuple[str, str]]
) -> dict[str, tuple[float, float]]:
    """Top-left corner of every node: layers by longest path, barycentre ordering.

    ``nodes`` must be in a topological order; edges whose ends are unknown are ignored.
    Runs in O((V + E) * SWEEPS) plus sorting, fine for thousands of nodes.
    """
    known = set(nodes)
    preds: dict[str, list[str]] = {n: [] for n in nodes}
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in known and b in known and a != b:
            preds[b].append(a)
            succs[a].append(b)
    layer: dict[str, int] = {}
    for n in nodes:
        layer[n] = 1 + max((layer[p] for p in preds[n] if p in layer), default=-1)
    layers: list[list[str]] = []
    for n in nodes:
        while len(layers) <= layer[n]:
            layers.append([])
        layers[layer[n]].append(n)
    pos = {n: float(i) for row in layers for i, n in enumerate(row)}
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        order = layers[1:] if down else list(reversed(layers[:-1]))
        for row in order:
            for n in row:
                ref = preds[n] if down else succs[n]
                if ref:
                    pos[n] = sum(pos[r] for r in ref) / len(ref)
            row.sort(key=lambda n: pos[n])
            for i, n in enumerate(row):
                pos[n] = float(i)
    width = max((len(r) for r in layers), default=1)
    coords: dict[str, tuple[float, float]] = {}
    for li, row in enumerate(layers):
        offset = (width - len(row)) * (NODE_W + GAP_X) / 2
        for i, n in enumerate(row):
            coords[n] = (offset + i * (NODE_W + GAP_X) + GAP_X, li * (NODE_H + GAP_Y) + GAP_Y)
    return coords


# ---------------------------------------------------------------------------
# Page


def _plan_svg(plan: Any, others: list[str]) -> str:
    lg = plan.graph
    if lg is None:
        return "<p>no graph</p>"
    main = lg.index.main
    nodes = [n for n in main.nodes if n.path in plan.node_ep]
    from onnxlint.index import topological_order

    order = topological_order(main, nodes)
    part_of = {n: p for p in plan.partitions for n in p.nodes}
    edges: list[tuple[str, str, str]] = []
    producers = {o: n.path for n in order for o in n.outputs if o}
    for n in order:
        for name in n.inputs:
            src = producers.get(name)
            if src is not None:
                edges.append((src, n.path, name))
    coords = layered_layout([n.path for n in order], [(a, b) for a, b, _ in edges])
    crossing = {
        (c.tensor, c.src_partition, d): c
        for c in plan.crossings
        if c.crosses_eps
        for d in c.dst_partitions
    }
    w = max((x for x, _ in coords.values()), default=0) + NODE_W + 2 * GAP_X
    h = max((y for _, y in coords.values()), default=0) + NODE_H + 2 * GAP_Y
    out = [
        f'<svg class="graph" viewBox="0 0 {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    for a, b, name in edges:
        x1, y1 = coords[a]
        x2, y2 = coords[b]
        pa, pb = part_of.get(a), part_of.get(b)
        c = crossing.get((name, pa.id if pa else None, pb.id if pb else None))
        cls = "edge cross" if c is not None else "edge"
        sx, sy, ex, ey = x1 + NODE_W / 2, y1 + NODE_H, x2 + NODE_W / 2, y2
        my = (sy + ey) / 2
        tip = html.escape(name)
        if c is not None:
            tip += html.escape(f" — {c.bytes.describe()} per inference ({c.kind})")
        out.append(
            f'<path class="{cls}" d="M{sx:.0f},{sy:.0f} C{sx:.0f},{my:.0f} {ex:.0f},{my:.0f} '
            f'{ex:.0f},{ey:.0f}"><title>{tip}</title></path>'
        )
        if c is not None:
            out.append(
                f'<text class="elabel" x="{(sx + ex) / 2 + 4:.0f}" y="{my:.0f}">'
                f"{html.escape(c.bytes.describe())}</text>"
            )
    for n in order:
        x, y = coords[n.path]
        ep = plan.node_ep.get(n.path, "")
        p = part_of.get(n.path)
        why = plan.released.get(n.path, "")
        tip = f"{n.label} ({n.op_type})\nEP: {short_ep(ep)}" + (f"\npartition {p.id}" if p else "")
        if why:
            tip += f"\n{why}"
        label = n.op_type if len(n.op_type) <= 16 else n.op_type[:15] + "…"
        out.append(
            f'<g class="node"><rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" '
            f'rx="5" fill="{_color(ep, others)}"/><text x="{x + NODE_W / 2:.0f}" '
            f'y="{y + NODE_H / 2 + 4:.0f}">{html.escape(label)}</text>'
            f"<title>{html.escape(tip)}</title></g>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _table(plan: Any) -> str:
    from onnxlint.render.partitions import plan_rows

    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "id",
            "EP",
            "graph",
            "nodes",
            "first",
            "last",
            "inputs in",
            "outputs out",
            "bytes/inference",
            "note",
        )
    )
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        for row in plan_rows(plan)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.6em}
.verdict{font-family:ui-monospace,monospace;background:#f3f5f8;padding:.5em .8em;border-radius:4px}
.legend span{display:inline-block;margin-right:1.2em}
.legend i{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin-right:.35em;vertical-align:-1px}
.wrap{overflow:auto;border:1px solid #ddd;max-height:80vh;margin-top:.6em}
svg.graph text{font:11px ui-monospace,monospace;text-anchor:middle;fill:#111;pointer-events:none}
svg.graph text.elabel{text-anchor:start;fill:#b00020;font-size:10px}
.edge{fill:none;stroke:#8a8f98;stroke-width:1.2}
.edge.cross{stroke:#b00020;stroke-width:2.6;stroke-dasharray:6 3}
.node rect{stroke:#333;stroke-width:.6}
table{border-collapse:collapse;margin-top:.6em;font-size:12px}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
"""

_JS = """
document.querySelectorAll('.wrap').forEach(function(w){
  var s=w.querySelector('svg'); if(!s) return; var k=1, W=+s.getAttribute('width'), H=+s.getAttribute('height');
  w.addEventListener('wheel',function(e){ if(!e.ctrlKey) return; e.preventDefault();
    k=Math.min(4,Math.max(0.1,k*(e.deltaY<0?1.15:0.87)));
    s.setAttribute('width',W*k); s.setAttribute('height',H*k); },{passive:false});
});
"""


def render_html(reports: Sequence[Report]) -> str:
    """One page for every model: verdicts, legend, drawing and table per graph level."""
    others: list[str] = []
    parts: list[str] = []
    for report in reports:
        parts.append(f"<h1>{html.escape(report.path or 'model')}</h1>")
        plans = [p for p in report.partitions if hasattr(p, "partitions")]
        if not plans:
            parts.append("<p>No partition prediction (no accelerator EP given).</p>")
            continue
        for plan in plans:
            title = (
                "Graph after ORT level-1 optimizations (default session)"
                if plan.level == "optimized"
                else "Graph as exported (optimizations disabled)"
            )
            parts.append(f"<h2>{html.escape(title)}</h2>")
            lines = "<br>".join(
                html.escape(ep_verdict(plan, ep, report)) for ep in plan.accelerators
            )
            parts.append(f'<p class="verdict">{lines}</p>')
            svg = _plan_svg(plan, others)
            legend = "".join(
                f'<span><i style="background:{_color(ep, others)}"></i>{html.escape(short_ep(ep))}</span>'
                for ep in plan.eps
            )
            parts.append(
                f'<p class="legend">{legend}<span>red dashed edge: crosses between EPs '
                "(bytes per inference)</span><span>ctrl + wheel: zoom</span></p>"
            )
            parts.append(f'<div class="wrap">{svg}</div>')
            parts.append(_table(plan))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>onnxlint partitions</title><style>{_CSS}</style></head><body>"
        + "\n".join(parts)
        + f'<p style="color:#777">onnxlint {html.escape(__version__)}</p>'
        + f"<script>{_JS}</script></body></html>\n"
    )
