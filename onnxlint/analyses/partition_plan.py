"""The result of the partition simulation: partitions, the crossings between them, and
a plan per graph level with its summaries (verdict line, islands, crossing bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onnxlint.analyses.bytecount import ByteCount
from onnxlint.ep_names import CPU_EP, short_ep

if TYPE_CHECKING:
    # a plan read back from the report cache has no graph: reading one needs no onnx
    from onnxlint.analyses.level_graph import LevelGraph

DEFAULT_ISLAND_MAX_NODES = 3


@dataclass(slots=True)
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
    #: node path -> the fix for a release whose cause has one of its own (else the
    #: generic one: join a larger partition)
    release_fixes: dict[str, str] = field(default_factory=dict)
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
    #: node path (any EP's) -> (EP, why): the Squeeze/Transpose of a shared initializer that
    #: ORT's layout transform gives this node is a graph of that EP with no input, and
    #: session creation fails (``partitioning.layout_constant_rewrite``)
    layout_constant_failures: dict[str, tuple[str, str]] = field(default_factory=dict)
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
        # the same for every EP's verdict line: summed once per state of the crossings
        cached = self.__dict__.get("_crossing_bytes")
        if cached is not None and cached[0] == len(self.crossings):
            return cached[1]
        counts = []
        for c in self.crossings:
            if c.crosses_eps:
                counts += [c.bytes] * len({e for e in c.dst_eps if e != c.src_ep})
        total = ByteCount.total(counts)
        self.__dict__["_crossing_bytes"] = (len(self.crossings), total)
        return total

    def _crossing_description(self) -> str:
        """``crossing_bytes().describe()``, once per total: every EP's verdict line shows it,
        and a large graph's total has thousands of symbolic terms to sort and print."""
        total = self.crossing_bytes()
        cached = self.__dict__.get("_crossing_text")
        if cached is not None and cached[0] is total:
            return str(cached[1])
        text = total.describe()
        self.__dict__["_crossing_text"] = (total, text)
        return text

    def verdict_line(self, ep: str, island_max_nodes: int = DEFAULT_ISLAND_MAX_NODES) -> str:
        """``QNN: 3 partitions, 97% of nodes, 2 CPU islands, 1.2 MiB crossing per inference``."""
        total = len(self.node_ep)
        on = self.nodes_on(ep)
        parts = len(self.partitions_on(ep))
        pct = (100.0 * on / total) if total else 0.0
        pct_text = f"{pct:.0f}%" if pct >= 1 or on == 0 else "<1%"
        islands = len(self.islands(island_max_nodes))
        crossing = self._crossing_description()
        moved = (
            "crossing"
            if any(self.memory.get(e) == "device" for e in self.accelerators)
            else "crossing (partition switches, no copies)"
        )
        return (
            f"{short_ep(ep)}: {parts} partition{'s' if parts != 1 else ''}, "
            f"{pct_text} of nodes ({on}/{total}), {islands} CPU island{'s' if islands != 1 else ''}, "
            f"{crossing} {moved} per inference"
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
