"""ORT's CPU preference for shape computations (``GetCpuPreferredNodes``)."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.level_graph import LevelGraph
from onnxlint.index import GraphRef, NodeRef

if TYPE_CHECKING:
    from onnxlint.profiles import Profile

#: ORT's GetCpuPreferredNodes treats initializers up to this many elements as small CPU values.
SMALL_INITIALIZER_ELEMENTS = 100
#: element types that GetCpuPreferredNodes never moves to CPU
_NO_CPU_PREFERENCE_DTYPES = frozenset({"float16", "bfloat16", "float8e4m3fn", "float8e5m2"})


def apply_cpu_preference(lg: LevelGraph, result: LevelAssignment, profile: Profile) -> None:
    """ORT's GetCpuPreferredNodes for one kernel EP, per graph.

    Seeds: consumers of outputs the EP's kernels leave in CPU memory (the profile's
    ``kernel_memory.cpu_outputs``: Shape, Size). A candidate the EP would run moves to CPU when every input is a
    CPU value (a seed output, an output of a node already moved), a graph
    input or a small initializer, none is float16/bfloat16, and no CPU input
    lands on a slot the EP's kernel reads from CPU anyway; the move then
    propagates to its consumers. Candidates are taken in topological order.
    """
    from dataclasses import replace

    ep = profile.ep
    cpu_outputs = profile.kernel_cpu_outputs
    cpu_inputs = profile.kernel_cpu_inputs
    for g in lg.graphs():
        nodes = lg.nodes(g)
        seeds = [n for n in nodes if n.op_type in cpu_outputs and n.domain == "ai.onnx"]
        if not seeds:
            continue  # nothing leaves a value in CPU memory: nothing to move
        topo = lg.order(g)
        order = lg.positions(g)

        def is_tentative(path: str) -> bool:
            na = result.nodes.get(path)
            return na is not None and na.claims(ep)

        cpu_values: set[str] = set()
        candidates: set[str] = set()

        def consumers(name: str, g: GraphRef = g, order: dict[str, int] = order) -> list[NodeRef]:
            return [c for c in g.consumers.get(name, []) if c.path in order]

        for n in seeds:
            if not is_tentative(n.path):
                continue
            for slot in cpu_outputs[n.op_type]:
                if slot < len(n.outputs) and n.outputs[slot]:
                    cpu_values.add(n.outputs[slot])
                    candidates.update(c.path for c in consumers(n.outputs[slot]))
        visited: set[str] = set()
        moved: set[str] = set()
        # a heap in topological position: taking the min of a set each time was quadratic
        heap = [(order.get(p, 0), p) for p in candidates]
        heapq.heapify(heap)
        while heap:
            cur = heapq.heappop(heap)[1]
            if cur in visited:
                continue
            visited.add(cur)
            if not is_tentative(cur):
                continue
            n = topo[order[cur]]
            cpu_slots = cpu_inputs.get(n.op_type, ()) if n.domain == "ai.onnx" else ()
            place = True
            for i, name in enumerate(n.inputs):
                if not name:
                    continue
                if lg.value_type(g, name).dtype in _NO_CPU_PREFERENCE_DTYPES:
                    place = False
                    break
                elems = lg.initializer_elements(g, name)
                if (elems is not None and elems <= SMALL_INITIALIZER_ELEMENTS) or lg.is_graph_input(
                    g, name
                ):
                    continue
                if name not in cpu_values or i in cpu_slots:
                    place = False
                    break
            if place:
                moved.add(cur)
                cpu_values.update(o for o in n.outputs if o)
                for o in n.outputs:
                    if o:
                        for c in consumers(o):
                            heapq.heappush(heap, (order.get(c.path, 0), c.path))
        for path in moved:
            na = result.nodes[path]
            result.nodes[path] = replace(na, cpu_preferred_by=(*na.cpu_preferred_by, ep))
