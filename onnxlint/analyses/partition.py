"""Partition prediction: simulate ONNX Runtime's graph partitioner for an EP list.

Starting from the per-node verdicts of :mod:`onnxlint.analyses.assignment`,
each EP in priority order takes the nodes it claims among those still
unassigned, grouped the way ORT groups them, and CPU takes the rest:

- compiling EPs that use ORT's shared partitioning utility (QNN, CoreML,
  NNAPI, XNNPACK, ...): a greedy Kahn-style topological sweep over node units
  (a QDQ group is one unit), adding claimed units to the current group until
  only unclaimed nodes that consume the group's outputs are left; those wait
  for the next group. The profile's ``drop_single_op_partitions`` then drops
  groups that are a single Q or DQ node (QNN);
- OpenVINO (profiles with ``drop_if_output_used_outside``): a fully supported
  graph is one cluster; otherwise the topological order is cut at every
  unsupported node (and at TopK/NonZero), each run is split into connected
  clusters, and clusters smaller than ``min_partition_nodes``, clusters whose
  Conv/Identity output is used outside, and clusters without a non-constant
  input are dropped;
- kernel EPs (CUDA, DML, CPU, ...) keep every node they claim; their
  "partitions" are the same greedy groups, for reporting.

Control-flow bodies are partitioned on their own, as ORT does. Every edge that
crosses between partitions is recorded with its bytes per inference (symbolic
dims kept as names unless ``assume-dims`` gives them a value).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.level_assignment import LevelAssignment
from onnxlint.analyses.level_graph import EXPORTED, OPTIMIZED, LevelGraph
from onnxlint.analyses.value_types import dtype_bytes
from onnxlint.ep_names import CPU_EP
from onnxlint.index import GraphRef, NodeRef, node_edges
from onnxlint.tensors import inline_array, inline_scalar_int

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.profiles import ChainLink, LayoutPassFailure, Profile

__all__ = [
    "ByteCount",
    "Crossing",
    "Partition",
    "PartitionPlan",
    "Partitions",
    "plan_level",
    "short_ep",
]

#: A byte count above this is reported as "at least this much": shapes from a
#: hostile model (2^62 dims) must not make the arithmetic or the output explode.
BYTES_CAP = 1 << 64
#: ops that always end an OpenVINO cluster (the EP refuses to put them inside one)
OV_CLUSTER_BREAKERS = frozenset({"TopK", "NonZero"})
DEFAULT_ISLAND_MAX_NODES = 3
DEFAULT_MAX_PARTITIONS = 5
_QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})
_LOOP_OPS = frozenset({"Loop", "Scan"})


def short_ep(ep: str) -> str:
    """``QNNExecutionProvider`` -> ``QNN``."""
    return ep[: -len("ExecutionProvider")] if ep.endswith("ExecutionProvider") else ep


# ---------------------------------------------------------------------------
# Byte counts with symbolic dims


@dataclass(frozen=True)
class ByteCount:
    """A sum of monomials ``coefficient * dim_a * dim_b``; exact when there are no dims.

    ``unknown`` counts tensors whose size nobody knows (unknown rank or dtype);
    ``capped`` is set when the sum passed :data:`BYTES_CAP`.
    """

    terms: tuple[tuple[tuple[str, ...], float], ...] = ()
    unknown: int = 0
    capped: bool = False

    @classmethod
    def of(
        cls, dtype: str | None, shape: Sequence[Any] | None, assume: Mapping[str, int]
    ) -> ByteCount:
        size = dtype_bytes(dtype)
        if size is None or shape is None:
            return cls(unknown=1)
        coef: float = size
        syms: list[str] = []
        for d in shape:
            if isinstance(d, int):
                coef *= max(d, 0)
            elif isinstance(d, str) and d in assume:
                coef *= assume[d]
            elif isinstance(d, str) and d:
                syms.append(d)
            else:
                return cls(unknown=1)
            if coef > BYTES_CAP:
                return cls(terms=(((), float(BYTES_CAP)),), capped=True)
        return cls(terms=((tuple(sorted(syms)), coef),))

    def __add__(self, other: ByteCount) -> ByteCount:
        return ByteCount.total((self, other))

    @classmethod
    def total(cls, counts: Iterable[ByteCount]) -> ByteCount:
        """The sum of many counts in one pass (adding them pairwise re-sorts every step)."""
        acc: dict[tuple[str, ...], float] = {}
        unknown = 0
        capped = False
        for c in counts:
            for k, v in c.terms:
                acc[k] = acc.get(k, 0) + v
            unknown += c.unknown
            capped = capped or c.capped
        for k, v in acc.items():
            if v > BYTES_CAP:
                acc[k] = float(BYTES_CAP)
                capped = True
        return cls(terms=tuple(sorted(acc.items())), unknown=unknown, capped=capped)

    @property
    def exact(self) -> int | None:
        """The byte count when it has no symbolic dims and nothing unknown."""
        if self.unknown or any(k for k, _ in self.terms):
            return None
        return int(sum(v for _, v in self.terms))

    @property
    def static_part(self) -> int:
        return int(sum(v for k, v in self.terms if not k))

    def describe(self) -> str:
        """``1.2 MiB``, ``3 KiB·batch + 12 B``, ``unknown``."""
        parts: list[str] = []
        for syms, coef in sorted(self.terms, key=lambda t: (len(t[0]), t[0])):
            if coef == 0:
                continue
            text = human_bytes(coef)
            if syms:
                text += "·" + "·".join(syms)
            parts.append(text)
        out = " + ".join(parts) if parts else ("0 B" if not self.unknown else "")
        if self.capped:
            out = f"≥ {out}"
        if self.unknown:
            extra = f"{self.unknown} tensor{'s' if self.unknown != 1 else ''} of unknown size"
            out = f"{out} + {extra}" if out else extra
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.exact,
            "static_bytes": self.static_part,
            "symbolic": [{"dims": list(k), "bytes": v} for k, v in self.terms if k],
            "unknown_tensors": self.unknown,
            "capped": self.capped,
            "text": self.describe(),
        }


def human_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            if unit == "B":
                return f"{n:.0f} B" if n == int(n) else f"{n:.1f} B"
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"  # pragma: no cover


# ---------------------------------------------------------------------------
# Results


@dataclass
class Crossing:
    """A tensor that leaves one partition (or the graph inputs) and enters another."""

    tensor: str
    graph: str
    src_partition: int | None  # None: a graph input (or a value captured from outside)
    src_ep: str | None
    dst_partitions: list[int]
    dst_eps: list[str]
    dtype: str | None
    shape: tuple[Any, ...] | None
    bytes: ByteCount
    #: "memcpy" (device memory on one side), "partition-switch" (host-memory EPs) or "none"
    kind: str
    #: note when the edge sits inside a Loop/Scan body: it is paid once per iteration
    repeat: str | None = None

    @property
    def crosses_eps(self) -> bool:
        return self.src_ep is not None and any(e != self.src_ep for e in self.dst_eps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "graph": self.graph,
            "from_partition": self.src_partition,
            "from_ep": self.src_ep,
            "to_partitions": self.dst_partitions,
            "to_eps": self.dst_eps,
            "dtype": self.dtype,
            "shape": list(self.shape) if self.shape is not None else None,
            "bytes": self.bytes.to_dict(),
            "kind": self.kind,
            "repeat": self.repeat,
        }


@dataclass
class Partition:
    """One group of nodes ORT runs on one EP (a fused subgraph for compiling EPs)."""

    id: int
    ep: str
    graph: str
    nodes: list[str]
    op_types: list[str]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    bytes: ByteCount = field(default_factory=ByteCount)
    #: source-model node paths (differs from ``nodes`` on the optimized graph)
    source_nodes: list[str | None] = field(default_factory=list)
    fails: str | None = None

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def first(self) -> str:
        return self.nodes[0] if self.nodes else ""

    @property
    def last(self) -> str:
        return self.nodes[-1] if self.nodes else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ep": self.ep,
            "graph": self.graph,
            "node_count": self.size,
            "first": self.first,
            "last": self.last,
            "nodes": self.nodes,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "bytes": self.bytes.to_dict(),
            "fails": self.fails,
        }


@dataclass
class PartitionPlan:
    """The predicted partitioning of one graph level for one EP list."""

    level: str
    eps: list[str]
    partitions: list[Partition] = field(default_factory=list)
    #: node path (this level) -> EP
    node_ep: dict[str, str] = field(default_factory=dict)
    #: node path -> why a claimed node went to a later EP (partition quirk, CPU preference)
    released: dict[str, str] = field(default_factory=dict)
    crossings: list[Crossing] = field(default_factory=list)
    #: node path -> EP device memory kind ("host" or "device")
    memory: dict[str, str] = field(default_factory=dict)
    #: node path -> why its EP, which claimed it, refuses it after ORT's layout transform
    #: (session creation fails; ``partitioning.layout_pass_failures``)
    layout_failures: dict[str, str] = field(default_factory=dict)
    #: node path -> why its EP fails to compile the partition holding it (session creation
    #: fails): the first node of a ``partitioning.finalize_failures`` chain, or the node at
    #: a ``boundary_tensor_failures`` tensor
    finalize_failures: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    graph: LevelGraph | None = field(default=None, repr=False)

    # -- summaries ---------------------------------------------------------------
    @property
    def accelerators(self) -> list[str]:
        return [e for e in self.eps if e != CPU_EP]

    def partitions_on(self, ep: str, graph: str | None = None) -> list[Partition]:
        return [p for p in self.partitions if p.ep == ep and (graph is None or p.graph == graph)]

    def nodes_on(self, ep: str) -> int:
        return sum(1 for e in self.node_ep.values() if e == ep)

    def crossings_of(self, partition_id: int) -> list[Crossing]:
        """Crossings that leave or enter a partition, in plan order (indexed on first use:
        rules ask for every island, and a scan per island was quadratic on big graphs)."""
        cache = self.__dict__.get("_crossings_by_partition")
        if cache is None or cache[0] != len(self.crossings):
            index: dict[int, list[Crossing]] = {}
            for c in self.crossings:
                ids = dict.fromkeys(
                    [*([c.src_partition] if c.src_partition is not None else []), *c.dst_partitions]
                )
                for pid in ids:
                    index.setdefault(pid, []).append(c)
            cache = (len(self.crossings), index)
            self.__dict__["_crossings_by_partition"] = cache
        return cache[1].get(partition_id, [])

    def islands(self, max_nodes: int = DEFAULT_ISLAND_MAX_NODES) -> list[Partition]:
        """CPU partitions of at most ``max_nodes`` nodes fed by and feeding accelerator partitions."""
        # asked by the verdict line of every EP and by the rules: computed once per plan state
        key = (max_nodes, len(self.partitions), len(self.crossings))
        cache: dict[tuple[int, int, int], list[Partition]] = self.__dict__.setdefault(
            "_island_cache", {}
        )
        if key not in cache:
            cache[key] = self._islands(max_nodes)
        return list(cache[key])

    def _islands(self, max_nodes: int) -> list[Partition]:
        by_id = {p.id: p for p in self.partitions}
        feeds: dict[int, set[str]] = {}
        fed: dict[int, set[str]] = {}
        for c in self.crossings:
            if c.src_partition is None:
                continue
            for dst in c.dst_partitions:
                fed.setdefault(dst, set()).add(by_id[c.src_partition].ep)
                feeds.setdefault(c.src_partition, set()).add(by_id[dst].ep)
        out = []
        for p in self.partitions:
            if p.ep != CPU_EP or p.size > max_nodes:
                continue
            accel_in = any(e != CPU_EP for e in fed.get(p.id, ()))
            accel_out = any(e != CPU_EP for e in feeds.get(p.id, ()))
            if accel_in and accel_out:
                out.append(p)
        return out

    def crossing_bytes(self) -> ByteCount:
        """Bytes per inference on edges between partitions of different EPs (graph I/O excluded)."""
        counts = []
        for c in self.crossings:
            if c.crosses_eps:
                counts += [c.bytes] * len({e for e in c.dst_eps if e != c.src_ep})
        return ByteCount.total(counts)

    def verdict_line(self, ep: str, island_max_nodes: int = DEFAULT_ISLAND_MAX_NODES) -> str:
        """``QNN: 3 partitions, 97% of nodes, 2 CPU islands, 1.2 MiB crossing per inference``."""
        total = len(self.node_ep)
        on = self.nodes_on(ep)
        parts = len(self.partitions_on(ep))
        pct = (100.0 * on / total) if total else 0.0
        pct_text = f"{pct:.0f}%" if pct >= 1 or on == 0 else "<1%"
        islands = len(self.islands(island_max_nodes))
        crossing = self.crossing_bytes()
        moved = (
            "crossing"
            if any(self.memory.get(e) == "device" for e in self.accelerators)
            else "crossing (partition switches, no copies)"
        )
        return (
            f"{short_ep(ep)}: {parts} partition{'s' if parts != 1 else ''}, "
            f"{pct_text} of nodes ({on}/{total}), {islands} CPU island{'s' if islands != 1 else ''}, "
            f"{crossing.describe()} {moved} per inference"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "eps": self.eps,
            "note": self.note,
            "verdicts": {short_ep(e): self.verdict_line(e) for e in self.accelerators},
            "node_count": len(self.node_ep),
            "nodes_per_ep": {e: self.nodes_on(e) for e in self.eps},
            "partitions": [p.to_dict() for p in self.partitions],
            "crossings": [c.to_dict() for c in self.crossings if c.crosses_eps],
            "islands": [p.id for p in self.islands()],
            "assignment": dict(self.node_ep),
            "released": dict(self.released),
        }


# ---------------------------------------------------------------------------
# Node units (QDQ groups)


#: ops whose QDQ selector takes a third DequantizeLinear input (the bias) only when it
#: dequantizes int32 (ORT qdq_selectors.cc: Conv, ConvTranspose, Gemm, Instance- and
#: LayerNormalization); with any other bias type the unit does not form
_INT32_BIAS_OPS = frozenset(
    {"Conv", "ConvTranspose", "Gemm", "InstanceNormalization", "LayerNormalization"}
)


def qdq_units(
    g: GraphRef, nodes: Sequence[NodeRef], dtypes: Mapping[str, str | None] | None = None
) -> dict[str, list[str]]:
    """Target node path -> the nodes of its QDQ unit in order (DQs, target, Qs).

    A unit forms around a non-Q/DQ node whose inputs come from DequantizeLinear
    nodes used by it alone and whose outputs all go to QuantizeLinear nodes
    (ORT's QDQ selectors, simplified). ``dtypes`` (tensor name -> element type)
    enables the selectors' type checks: the first DQ's quantized type must be the
    Q's output type, and a bias DQ of the ops in ``_INT32_BIAS_OPS`` must be int32.
    Nodes outside any unit are their own unit.
    """
    paths = {n.path for n in nodes}
    outputs = set(g.outputs)
    units: dict[str, list[str]] = {}
    taken: set[str] = set()

    def only_consumer(name: str, who: NodeRef) -> bool:
        cons = [c for c in g.consumers.get(name, []) if c.path in paths]
        return name not in outputs and all(c is who for c in cons)

    for n in nodes:
        if n.op_type in _QDQ_OPS or n.domain != "ai.onnx":
            continue
        dqs: list[NodeRef] = []
        for name in n.inputs:
            p = g.producers.get(name) if name else None
            if (
                p is not None
                and p.path in paths
                and p.op_type == "DequantizeLinear"
                and p.path not in taken
                and only_consumer(name, n)
                and p not in dqs
            ):
                dqs.append(p)
        if not dqs:
            continue
        qs: list[NodeRef] = []
        ok = True
        for name in n.outputs:
            if not name:
                continue
            cons = [c for c in g.consumers.get(name, []) if c.path in paths]
            if name in outputs or not cons or any(c.op_type != "QuantizeLinear" for c in cons):
                ok = False
                break
            qs += [c for c in cons if c.path not in taken]
        if not ok or not qs or not _selector_types_match(n, dqs, qs, dtypes):
            continue
        members = [d.path for d in dqs] + [n.path] + [q.path for q in qs]
        units[n.path] = members
        taken.update(members)
    return units


def _selector_types_match(
    n: NodeRef,
    dqs: Sequence[NodeRef],
    qs: Sequence[NodeRef],
    dtypes: Mapping[str, str | None] | None,
) -> bool:
    if dtypes is None:
        return True
    members = [d.path for d in dqs]
    first = _dequantized_type(n, 0, members, dtypes)
    out = dtypes.get(qs[0].outputs[0]) if qs[0].outputs else None
    if first is not None and out is not None and first != out:
        return False
    bias = _dequantized_type(n, 2, members, dtypes) if n.op_type in _INT32_BIAS_OPS else None
    return bias is None or bias == "int32"


# ---------------------------------------------------------------------------
# Grouping algorithms


def greedy_groups(
    g: GraphRef,
    order: Sequence[NodeRef],
    supported: set[str],
    units: Mapping[str, list[str]] | None = None,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
) -> list[list[str]]:
    """ORT's greedy partition node groups (a wave per group over a Kahn topological sweep).

    ``order`` is the graph's topological order; ``supported`` the node paths
    the EP may take; ``units`` maps a unit's target node to its members.
    """
    units = units or {}
    unit_of: dict[str, str] = {}
    for target, members in units.items():
        for m in members:
            unit_of[m] = target
    for n in order:
        unit_of.setdefault(n.path, n.path)
    members_of: dict[str, list[str]] = {}
    for n in order:
        members_of.setdefault(unit_of[n.path], []).append(n.path)
    for target, members in units.items():
        members_of[target] = list(members)

    preds, succs = edges or node_edges(g, order)
    # unit-level edges with multiplicity, as ORT counts input edges
    in_degree: dict[str, int] = {}
    out_edges: dict[str, list[str]] = {}
    for u, members in members_of.items():
        mset = set(members)
        in_degree[u] = sum(1 for m in members for p in preds[m] if p not in mset)
        out_edges[u] = [unit_of[s] for m in members for s in succs[m] if s not in mset]
    roots = []
    seen_units: set[str] = set()
    for n in order:
        u = unit_of[n.path]
        if u in seen_units:
            continue
        seen_units.add(u)
        if in_degree[u] == 0:
            roots.append(u)
    to_process: deque[str] = deque(roots)
    next_group: deque[str] = deque()
    groups: list[list[str]] = []
    group: list[str] = []
    border: set[str] = set()
    while to_process or next_group:
        if not to_process:
            if group:
                groups.append(group)
            group, border = [], set()
            to_process, next_group = next_group, deque()
            continue
        u = to_process.popleft()
        ok = all(m in supported for m in members_of[u])
        if not ok and u in border:
            next_group.append(u)
            continue
        if ok:
            group.extend(members_of[u])
            border.discard(u)
        for d in out_edges[u]:
            if ok:
                border.add(d)
            in_degree[d] -= 1
            if in_degree[d] == 0:
                to_process.append(d)
    if group:
        groups.append(group)
    return groups


def ov_clusters(
    lg: LevelGraph,
    g: GraphRef,
    order: Sequence[NodeRef],
    supported: set[str],
    profile: Profile,
    edges: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None,
) -> tuple[list[list[str]], dict[str, str]]:
    """OpenVINO's clusters, and why claimed nodes outside every kept cluster were released."""
    released: dict[str, str] = {}
    paths = [n.path for n in order]
    by_path = {n.path: n for n in order}
    ep = short_ep(profile.ep)
    has_real_input = any(lg.is_graph_input(g, i) for i in g.inputs) or g.depth > 0
    if all(p in supported for p in paths):
        if not has_real_input or not paths:
            for p in paths:
                released[p] = f"{ep} claims nothing in a graph without non-constant inputs"
            return [], released
        return [list(paths)], released
    cuts = {p for p in paths if p not in supported or by_path[p].op_type in OV_CLUSTER_BREAKERS}
    for p in paths:
        if p in supported and p in cuts:
            released[p] = f"{ep} never keeps {by_path[p].op_type} inside a cluster"
    runs: list[list[str]] = []
    cur: list[str] = []
    for p in paths:
        if p in cuts:
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(p)
    if cur:
        runs.append(cur)
    preds, succs = edges or node_edges(g, order)
    clusters: list[list[str]] = []
    for run in runs:
        remaining = list(run)
        while remaining:
            comp: list[str] = []
            stack = [remaining[0]]
            rset = set(remaining)
            while stack:
                x = stack.pop()
                if x not in rset:
                    continue
                rset.discard(x)
                comp.append(x)
                stack.extend(reversed(succs[x]))
                stack.extend(reversed(preds[x]))
            remaining = [r for r in remaining if r in rset]
            clusters.append(sorted(comp, key=paths.index))
    part = profile.partitioning
    clusters = _merge_small_clusters(
        clusters, preds, succs, max(part.min_partition_nodes, 1), paths
    )
    kept: list[list[str]] = []
    for i, cl in enumerate(clusters):
        cset = set(cl)
        why: str | None = None
        last_kept = part.keeps_last_small_cluster and i == len(clusters) - 1
        if len(cl) < max(part.min_partition_nodes, 1) and not last_kept:
            why = f"{ep} drops clusters of fewer than {part.min_partition_nodes} nodes"
        else:
            for p in cl:
                n = by_path[p]
                if n.op_type in part.drop_if_output_used_outside and n.outputs:
                    out0 = n.outputs[0]
                    if any(
                        c.path not in cset for c in g.consumers.get(out0, []) if c.path in by_path
                    ):
                        why = (
                            f"{ep} drops a cluster whose {n.op_type} output is used outside it "
                            f"({n.label})"
                        )
                        break
        if why is None:
            # initializers count as cluster inputs too (GetInputsOutputsOfCluster appends
            # them): only a cluster with no input at all is left to CPU's constant folding
            inputs = {
                name
                for p in cl
                for name in by_path[p].inputs
                if name and not (g.producers.get(name) and g.producers[name].path in cset)
            }
            if not inputs:
                why = f"{ep} drops a cluster that has no inputs"
        if why is None:
            kept.append(cl)
        else:
            for p in cl:
                released[p] = why
    return kept, released


def _merge_small_clusters(
    clusters: list[list[str]],
    preds: Mapping[str, list[str]],
    succs: Mapping[str, list[str]],
    min_nodes: int,
    order: list[str],
) -> list[list[str]]:
    """A cluster below the minimum joins the next cluster it has an edge with (else an earlier one).

    Measured with onnxruntime-openvino 1.24.1 (profile note): Relu -> {NonZero, Sigmoid, Cast}
    with NonZero and Cast refused keeps Relu + Sigmoid as one cluster although the
    topological cut leaves them in two single-node runs.
    """
    if min_nodes <= 1:
        return clusters
    out = [list(c) for c in clusters]
    changed = True
    while changed:
        changed = False
        for i, cl in enumerate(out):
            if len(cl) >= min_nodes:
                continue
            mine = set(cl)
            linked = {x for p in cl for x in (*preds[p], *succs[p])} - mine
            targets = [j for j in range(len(out)) if j != i and linked & set(out[j])]
            if not targets:
                continue
            j = next((t for t in targets if t > i), targets[0])
            out[j] = sorted(out[j] + cl, key=order.index)
            del out[i]
            changed = True
            break
    return out


def _tensor_dtypes(la: LevelAssignment, order: Sequence[NodeRef]) -> dict[str, str | None]:
    """Element type of every tensor the nodes of ``order`` read or write, from their facts."""
    out: dict[str, str | None] = {}
    for n in order:
        na = la.get(n.path)
        if na is None:
            continue
        for names, types in (
            (n.inputs, na.facts.input_dtypes),
            (n.outputs, na.facts.output_dtypes),
        ):
            for name, t in zip(names, types, strict=False):
                if name and t is not None:
                    out.setdefault(name, t)
    return out


def _refused_units(
    units: Mapping[str, list[str]],
    by_path: Mapping[str, NodeRef],
    dtypes: Mapping[str, str | None],
    profile: Profile,
) -> dict[str, str]:
    """Unit target -> why the profile's ``refused_qdq_units`` refuse its whole unit."""
    rules = profile.partitioning.refused_qdq_units
    out: dict[str, str] = {}
    if not rules:
        return out
    for target in units:
        n = by_path.get(target)
        if n is None:
            continue
        for rule in rules:
            if rule.op != n.op_type or not all(
                _dequantized_type(n, slot, units[target], dtypes) in types
                for slot, types in rule.input_types.items()
            ):
                continue
            out[target] = f"{short_ep(profile.ep)} refuses this QDQ {n.op_type} unit: {rule.reason}"
            break
    return out


def _dequantized_type(
    n: NodeRef, slot: int, members: Sequence[str], dtypes: Mapping[str, str | None]
) -> str | None:
    """The element type the unit's DQ feeding input ``slot`` of ``n`` dequantizes."""
    if slot >= len(n.inputs) or not n.inputs[slot]:
        return None
    dq = n.graph.producers.get(n.inputs[slot])
    if dq is None or dq.path not in members or not dq.inputs:
        return None
    return dtypes.get(dq.inputs[0])


def _layout_pass_failures(
    kept: set[str],
    units: Mapping[str, list[str]],
    by_path: Mapping[str, NodeRef],
    la: LevelAssignment,
    profile: Profile,
) -> dict[str, str]:
    """Node path -> why the EP refuses the claimed node after ORT's layout transform.

    The profile's ``partitioning.layout_pass_failures`` name the layout-sensitive ops the
    EP takes in its first capability pass without validating them; a node that meets one
    of their conditions is refused when the EP sees it again in its own layout, and
    session creation fails (no EP is left for the rewritten node).
    """
    rules = profile.partitioning.layout_pass_failures
    out: dict[str, str] = {}
    if not rules:
        return out
    for path in kept:
        n = by_path[path]
        for rule in rules:
            if rule.op != n.op_type:
                continue
            problem = _layout_problem(rule, n, units.get(path), la)
            if problem is not None:
                out[path] = (
                    f"{short_ep(profile.ep)} takes this {n.op_type} before ORT rewrites it to "
                    f"{profile.layout} and refuses it afterwards ({problem}): {rule.reason}"
                )
                break
    return out


def _layout_problem(
    rule: LayoutPassFailure, n: NodeRef, unit: Sequence[str] | None, la: LevelAssignment
) -> str | None:
    """What about ``n`` meets ``rule``'s condition; None when it does not."""
    if rule.condition == "zero_sized_output":
        na = la.get(n.path)
        for i, shape in enumerate(na.facts.output_shapes if na is not None else ()):
            if shape is not None and 0 in shape:
                return f"output {i} has a zero-sized dimension {list(shape)}"
        return None
    if rule.condition == "computed_bias_in_qdq_unit" and unit is not None:
        slot = rule.slot if rule.slot is not None else 2
        if slot >= len(n.inputs) or not n.inputs[slot]:
            return None
        prod = n.graph.producers.get(n.inputs[slot])
        if prod is None or prod.path in unit or prod.op_type == "DequantizeLinear":
            return None
        return f"input {slot} of this QDQ unit is computed by {prod.op_type} {prod.label}"
    return None


def _finalize_failures(
    g: GraphRef, group: Sequence[str], by_path: Mapping[str, NodeRef], profile: Profile
) -> dict[str, str]:
    """First node path of each chain of ``partitioning.finalize_failures`` found inside one
    partition ``group`` -> why the EP fails to compile that partition."""
    rules = profile.partitioning.finalize_failures
    out: dict[str, str] = {}
    if not rules:
        return out
    members = set(group)
    for path in group:
        n = by_path[path]
        for rule in rules:
            found = _chain_from(g, n, rule.chain, members)
            if found is not None:
                ops = " -> ".join(m.op_type for m in found)
                out[path] = (
                    f"{short_ep(profile.ep)} fails to compile a partition holding the chain "
                    f"{ops} from {n.label}: {rule.reason}"
                )
                break
    return out


def _chain_from(
    g: GraphRef, n: NodeRef, chain: Sequence[ChainLink], members: set[str]
) -> list[NodeRef] | None:
    """The nodes of ``chain`` starting at ``n``, each feeding the next, all in ``members``."""
    link = chain[0]
    if n.op_type != link.op or n.path not in members:
        return None
    if link.constant is not None and not any(
        _scalar_constant(g, name) == link.constant for name in n.inputs if name
    ):
        return None
    if len(chain) == 1:
        return [n]
    for name in n.outputs:
        for c in g.consumers.get(name, []) if name else []:
            rest = _chain_from(g, c, chain[1:], members)
            if rest is not None:
                return [n, *rest]
    return None


def _scalar_constant(g: GraphRef, name: str) -> float | None:
    """The value of a one-element inline constant (initializer or Constant node)."""
    t = g.initializers.get(name)
    if t is None:
        p = g.producers.get(name)
        if p is None or p.op_type != "Constant":
            return None
        t = next((a.t for a in p.node.attribute if a.name == "value"), None)
    arr = inline_array(t, max_elements=1) if t is not None else None
    if arr is None or arr.size != 1 or arr.dtype.kind not in "fiu":
        return None
    return float(arr.reshape(-1)[0])


def _unfusable_group(
    groups: Sequence[list[str]], edges: tuple[dict[str, list[str]], dict[str, list[str]]]
) -> str | None:
    """The first node of a group that a path leaving the group re-enters, over all edges
    (captured values included); None when every group can be fused."""
    _preds, succs = edges
    for grp in groups:
        members = set(grp)
        stack = [s for m in grp for s in succs.get(m, []) if s not in members]
        seen: set[str] = set()
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            for s in succs.get(x, []):
                if s in members:
                    return s
                stack.append(s)
    return None


def _keep_group(group: list[str], by_path: Mapping[str, NodeRef], profile: Profile) -> str | None:
    """None to keep a greedy group, else why the EP's on-group-closed check drops it."""
    part = profile.partitioning
    ep = short_ep(profile.ep)
    if len(group) == 1 and by_path[group[0]].op_type in part.drop_single_op_partitions:
        return f"{ep} drops a partition that is a single {by_path[group[0]].op_type}"
    if len(group) < part.min_partition_nodes:
        return f"{ep} drops partitions of fewer than {part.min_partition_nodes} nodes"
    return None


def _uses_ov_clustering(profile: Profile) -> bool:
    return profile.ep.startswith("OpenVINO") or bool(
        profile.partitioning.drop_if_output_used_outside
    )


# ---------------------------------------------------------------------------
# The simulation


def plan_level(la: LevelAssignment, assume_dims: Mapping[str, int] | None = None) -> PartitionPlan:
    """Partition every graph of one level for the EP list of ``la``."""
    lg = la.graph
    assume = dict(assume_dims or {})
    eps = [p.ep for p in la.profiles]
    plan = PartitionPlan(level=lg.level, eps=eps, note=lg.note, graph=lg)
    memory = {p.ep: p.device_memory for p in la.profiles}
    plan.memory = memory
    groups_all: list[tuple[str, GraphRef, list[str]]] = []
    for g in lg.graphs():
        nodes = lg.nodes(g)
        if not nodes:
            continue
        owner = _compiled_with_parent(g, plan, la.profiles)
        if owner is not None:
            # the EP compiles the body as part of the node it claimed: no partition of its own
            for n in nodes:
                plan.node_ep[n.path] = owner
            continue
        order = lg.order(g)
        # the node edges of a graph are the same for every EP: built once, not once per EP
        edges = node_edges(g, order)
        by_path = {n.path: n for n in order}
        unassigned = set(by_path)
        for profile in la.profiles:
            ep = profile.ep
            claimed = {p for p in unassigned if (na := la.get(p)) is not None and na.claims(ep)}
            for p in unassigned:
                na = la.get(p)
                if na is not None and ep in na.cpu_preferred_by:
                    plan.released.setdefault(
                        p,
                        f"ORT moves this shape computation from {short_ep(ep)} to CPU "
                        "(GetCpuPreferredNodes: all its inputs are small CPU-side values)",
                    )
            if not claimed:
                continue
            if ep == CPU_EP or profile.kind != "compiling":
                groups = greedy_groups(g, order, claimed, edges=edges)
            elif _uses_ov_clustering(profile):
                groups, released = ov_clusters(lg, g, order, claimed, profile, edges)
                for p, why in released.items():
                    plan.released.setdefault(p, why)
            else:
                dtypes = _tensor_dtypes(la, order)
                units = qdq_units(g, order, dtypes)
                for target, why in _refused_units(units, by_path, dtypes, profile).items():
                    for p in units[target]:
                        if p in claimed:
                            claimed.discard(p)
                            plan.released.setdefault(p, why)
                groups = []
                blind = profile.partitioning.grouping_ignores_captured_inputs
                found = greedy_groups(
                    g,
                    order,
                    claimed,
                    units,
                    node_edges(g, order, captured=False) if blind else edges,
                )
                unfusable = _unfusable_group(found, edges) if blind else None
                if unfusable is not None:
                    # ORT's plugin host refuses the EP's whole answer for this graph
                    why = (
                        f"ORT refuses {short_ep(ep)}'s capability for this graph: "
                        f"{short_ep(ep)} groups nodes across a value an If/Loop body "
                        f"captures ({unfusable}), and a group with an unsupported node on "
                        "a path between its nodes cannot be fused"
                    )
                    for p in claimed:
                        plan.released.setdefault(p, why)
                    found = []
                for grp in found:
                    refusal = _keep_group(grp, by_path, profile)
                    if refusal is None:
                        groups.append(grp)
                    else:
                        for p in grp:
                            plan.released.setdefault(p, refusal)
                kept = {p for grp in groups for p in grp}
                plan.layout_failures.update(
                    _layout_pass_failures(kept, units, by_path, la, profile)
                )
                for grp in groups:
                    plan.finalize_failures.update(_finalize_failures(g, grp, by_path, profile))
            for grp in groups:
                for p in grp:
                    plan.node_ep[p] = ep
                    unassigned.discard(p)
                groups_all.append((ep, g, grp))
        # anything left (CPU refused it too) still runs nowhere else: report it on CPU
        if unassigned:
            rest = [p for p in (n.path for n in order) if p in unassigned]
            for p in rest:
                plan.node_ep[p] = CPU_EP
            for grp in greedy_groups(g, order, set(rest), edges=edges):
                groups_all.append((CPU_EP, g, grp))
    _number_partitions(plan, lg, groups_all)
    _crossings(plan, lg, assume)
    _constant_only(plan, la)
    _boundary_failures(plan, la)
    return plan


def _compiled_with_parent(
    g: GraphRef, plan: PartitionPlan, profiles: Sequence[Profile]
) -> str | None:
    """The EP that claimed ``g``'s parent node when its profile compiles such bodies whole."""
    parent = g.parent
    if parent is None:
        return None
    ep = plan.node_ep.get(parent.path)
    prof = next((p for p in profiles if p.ep == ep), None)
    if prof is None or parent.op_type not in prof.partitioning.bodies_compiled_with_node:
        return None
    return ep


def _number_partitions(
    plan: PartitionPlan, lg: LevelGraph, groups: list[tuple[str, GraphRef, list[str]]]
) -> None:
    graph_rank = {g.path: i for i, g in enumerate(lg.graphs())}
    pos: dict[str, int] = {}
    for g in lg.graphs():
        pos.update(lg.positions(g))
    by_path = {n.path: n for n in lg.index.nodes}
    groups.sort(key=lambda t: (graph_rank[t[1].path], min(pos[p] for p in t[2])))
    for i, (ep, g, grp) in enumerate(groups, 1):
        ordered = sorted(grp, key=lambda p: pos[p])
        plan.partitions.append(
            Partition(
                id=i,
                ep=ep,
                graph=g.path,
                nodes=ordered,
                op_types=[by_path[p].op_type for p in ordered],
                source_nodes=[lg.source_path.get(p) for p in ordered],
            )
        )


def _loop_note(lg: LevelGraph, g: GraphRef) -> str | None:
    """How often an edge inside ``g`` is paid per inference, when ``g`` is a loop body."""
    cur: GraphRef | None = g
    notes: list[str] = []
    while cur is not None and cur.parent is not None:
        owner = cur.parent
        if owner.op_type in _LOOP_OPS:
            trips = None
            if owner.op_type == "Loop" and owner.inputs and owner.inputs[0]:
                trips = _scalar_initializer(owner.graph, owner.inputs[0])
            notes.append(f"x{trips}" if trips is not None else f"x {owner.op_type} trip count")
        cur = owner.graph
    return " ".join(notes) + " per inference (inside a loop body)" if notes else None


def _scalar_initializer(g: GraphRef, name: str) -> int | None:
    # inline data only: an external location is never followed (it would resolve
    # against the working directory, and its bytes would reach the report)
    cur: GraphRef | None = g
    while cur is not None:
        t = cur.initializers.get(name)
        if t is not None:
            return inline_scalar_int(t)
        p = cur.producers.get(name)
        if p is not None:
            if p.op_type == "Constant":
                for a in p.node.attribute:
                    if a.name == "value":
                        return inline_scalar_int(a.t)
            return None
        cur = cur.outer
    return None


def _crossings(plan: PartitionPlan, lg: LevelGraph, assume: Mapping[str, int]) -> None:
    part_of: dict[str, Partition] = {}
    for p in plan.partitions:
        for path in p.nodes:
            part_of[path] = p
    by_path = {n.path: n for n in lg.index.nodes}
    for g in lg.graphs():
        nodes = lg.nodes(g)
        if not nodes:
            continue
        note = _loop_note(lg, g) if g.depth > 0 else None
        entering: dict[str, list[Partition]] = {}
        for n in nodes:
            dst = part_of.get(n.path)
            if dst is None:
                continue
            names = list(n.inputs)
            for sub in n.subgraphs.values():
                names += sorted(sub.captured)
            for name in names:
                if not name or lg.is_initializer(g, name):
                    continue
                prod = g.producers.get(name)
                src = part_of.get(prod.path) if prod is not None and prod.path in by_path else None
                if src is dst:
                    continue
                lst = entering.setdefault(name, [])
                if dst not in lst:
                    lst.append(dst)
        for name, dsts in entering.items():
            prod = g.producers.get(name)
            src = part_of.get(prod.path) if prod is not None else None
            vt = lg.value_type(g, name)
            src_ep = src.ep if src is not None else None
            dst_eps = [d.ep for d in dsts]
            mem = {plan.memory.get(e, "host") for e in [*dst_eps, *([src_ep] if src_ep else [])]}
            crosses = src_ep is not None and any(e != src_ep for e in dst_eps)
            kind = "none"
            if crosses:
                kind = "memcpy" if "device" in mem else "partition-switch"
            c = Crossing(
                tensor=name,
                graph=g.path,
                src_partition=src.id if src is not None else None,
                src_ep=src_ep,
                dst_partitions=[d.id for d in dsts],
                dst_eps=dst_eps,
                dtype=vt.dtype,
                shape=vt.shape,
                bytes=ByteCount.of(vt.dtype, vt.shape, assume),
                kind=kind,
                repeat=note,
            )
            plan.crossings.append(c)
            for d in dsts:
                if name not in d.inputs:
                    d.inputs.append(name)
                    d.bytes = d.bytes + c.bytes
            if src is not None and name not in src.outputs:
                src.outputs.append(name)
                src.bytes = src.bytes + c.bytes
        for name in g.outputs:
            prod = g.producers.get(name)
            src = part_of.get(prod.path) if prod is not None else None
            if src is not None and name not in src.outputs:
                vt = lg.value_type(g, name)
                src.outputs.append(name)
                src.bytes = src.bytes + ByteCount.of(vt.dtype, vt.shape, assume)


def _boundary_failures(plan: PartitionPlan, la: LevelAssignment) -> None:
    """Mark the node at each boundary tensor of a partition that the EP's
    ``partitioning.boundary_tensor_failures`` say it fails to compile (in
    ``plan.finalize_failures``: the consumer of an entering tensor, the producer of a
    leaving one)."""
    rules = {p.ep: p.partitioning.boundary_tensor_failures for p in la.profiles}
    graphs = {g.path: g for g in la.graph.graphs()}
    for part in plan.partitions:
        g = graphs.get(part.graph)
        if not rules.get(part.ep) or g is None:
            continue
        members = set(part.nodes)
        for direction, names in (("input", part.inputs), ("output", part.outputs)):
            for name in names:
                vt = la.graph.value_type(g, name)
                rule = next(
                    (
                        r
                        for r in rules[part.ep]
                        if r.direction == direction
                        and r.dtype == vt.dtype
                        and vt.shape is not None
                        and len(vt.shape) == r.rank
                    ),
                    None,
                )
                node = _boundary_node(g, name, direction, members)
                if rule is None or node is None:
                    continue
                plan.finalize_failures.setdefault(
                    node.path,
                    f"{short_ep(part.ep)} fails to compile partition {part.id}, which "
                    f"{'receives' if direction == 'input' else 'produces'} {name!r} "
                    f"({vt.dtype}, rank {rule.rank}) at its boundary: {rule.reason}",
                )


def _boundary_node(g: GraphRef, name: str, direction: str, members: set[str]) -> NodeRef | None:
    """The partition's node that reads (``input``) or writes (``output``) tensor ``name``."""
    if direction == "output":
        p = g.producers.get(name)
        return p if p is not None and p.path in members else None
    return next((c for c in g.consumers.get(name, []) if c.path in members), None)


def _constant_only(plan: PartitionPlan, la: LevelAssignment) -> None:
    """Partitions of EPs that fail on a partition fed only by constants ("zero graph inputs")."""
    fails = {p.ep for p in la.profiles if p.partitioning.constant_only_partition_fails}
    for part in plan.partitions:
        if part.ep in fails and not part.inputs:
            part.fails = (
                f"{short_ep(part.ep)} claims a partition that depends only on constants; "
                "session creation fails with 'zero graph inputs'"
            )


# ---------------------------------------------------------------------------
# The shared analysis


class Partitions:
    """``ctx.analysis(Partitions)``: the predicted partitioning per graph level, computed once.

    ``deployment_level`` is the level diagnostics talk about: the graph after
    ORT's level-1 optimizations (what a default session partitions) when ORT
    can produce it and ``[tool.onnxlint.partition] graph-level`` does not say
    ``exported``; otherwise the graph as exported.
    """

    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx
        self.assignment: Assignment = ctx.analysis(Assignment)
        self._plans: dict[str, PartitionPlan | None] = {}
        opts = ctx.config.partition or {}
        self.island_max_nodes = int(opts.get("island-max-nodes", DEFAULT_ISLAND_MAX_NODES))
        self.max_partitions = int(opts.get("max-partitions", DEFAULT_MAX_PARTITIONS))
        self.wanted_level = str(opts.get("graph-level", OPTIMIZED))

    def plan(self, level: str) -> PartitionPlan | None:
        if level not in self._plans:
            la = self.assignment.level(level)
            self._plans[level] = (
                plan_level(la, self.ctx.config.assume_dims) if la is not None else None
            )
        return self._plans[level]

    @property
    def deployment_level(self) -> str:
        if self.wanted_level == OPTIMIZED and self.plan(OPTIMIZED) is not None:
            return OPTIMIZED
        return EXPORTED

    @property
    def deployment(self) -> PartitionPlan:
        got = self.plan(self.deployment_level)
        assert got is not None
        return got

    def plans(self) -> list[PartitionPlan]:
        out = [p for p in (self.plan(EXPORTED),) if p is not None]
        if self.wanted_level == OPTIMIZED:
            opt = self.plan(OPTIMIZED)
            if opt is not None:
                out.append(opt)
            elif out and self.assignment.optimized_note:
                # say why the default-session graph is missing rather than omit it silently
                out[0].note = f"no level-1 graph: {self.assignment.optimized_note}"
        return out


def node_refs(plan: PartitionPlan) -> dict[str, NodeRef]:
    assert plan.graph is not None
    return {n.path: n for n in plan.graph.index.nodes}


def iter_fallbacks(plan: PartitionPlan) -> Iterable[tuple[str, str]]:
    """(node path, reason) for claimed nodes the partitioner released to a later EP."""
    for path, why in plan.released.items():
        if plan.node_ep.get(path) == CPU_EP:
            yield path, why
