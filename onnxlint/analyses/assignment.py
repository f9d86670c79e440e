"""Per-node EP verdicts and the first-claimer assignment, computed once per model.

For the EP list of a lint (``ctx.eps``, priority order, CPU implied last) this
analysis builds the :class:`~onnxlint.analyses.capability.NodeFacts` of every
node the partitioner sees, asks each EP profile for its verdict, applies ORT's
CPU preference for shape computations (``GetCpuPreferredNodes``) to the EPs
whose profile asks for it, and records which EP claims each node first.

It does so for up to two versions of the graph:

- ``exported``: the model as the user wrote it (what ORT partitions with
  ``graph_optimization_level`` disabled);
- ``optimized``: the graph after ORT's level-1 (basic) optimizations, which is
  what ORT partitions in a default deployment. It is obtained by running a
  CPU-only session at the basic level with ``optimized_model_filepath`` in a
  temporary folder (never with a compiling EP, which cannot be serialized).

The final placement (which claimed nodes a compiling EP actually keeps) is the
partition simulation's job (:mod:`onnxlint.analyses.partition`).

ORT facts this relies on (EP-BEHAVIOUR.md): Constant nodes become initializers
before any EP is asked, so they are not partitioned; nodes inside If/Loop/Scan
bodies are partitioned on their own, before the node that owns the body.

The parts, one module each: the graph of one level and its value types
(:mod:`~onnxlint.analyses.level_graph`, :mod:`~onnxlint.analyses.session_types`,
:mod:`~onnxlint.analyses.value_types`), function inlining and expansion
(:mod:`~onnxlint.analyses.function_inlining`, :mod:`~onnxlint.analyses.ort_kernels`),
the facts of a node (:mod:`~onnxlint.analyses.node_facts`), the per-node result
(:mod:`~onnxlint.analyses.level_assignment`), the fused patterns
(:mod:`~onnxlint.analyses.fusions`) and the CPU preference
(:mod:`~onnxlint.analyses.cpu_preference`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import onnx

from onnxlint.analyses.capability import (
    NodeFacts,
    Verdict,
    evaluate,
    node_count_cap,
    sized_ops,
    symbols_of,
)
from onnxlint.analyses.cpu_preference import apply_cpu_preference
from onnxlint.analyses.declared_merge import has_conflict, merged_names
from onnxlint.analyses.function_inlining import (
    collapse_ort_inlined,
    expand_unclaimed_function_ops,
    inline_functions,
)
from onnxlint.analyses.fusions import apply_fusions
from onnxlint.analyses.inserted_casts import drop_inserted_casts
from onnxlint.analyses.integer_tensors import apply_quantized_input_claims
from onnxlint.analyses.layout_outputs import apply_layout_output_claims
from onnxlint.analyses.level_assignment import LevelAssignment, NodeAssignment, first_claimer
from onnxlint.analyses.level_graph import EXPORTED, OPTIMIZED, LevelGraph, build_level_graph
from onnxlint.analyses.node_facts import node_facts
from onnxlint.analyses.session_types import (
    infer_session_types_without_weights,
    session_types_differ,
)
from onnxlint.ep_names import CPU_EP
from onnxlint.heap import TRIM_MIN_NODES, release_freed
from onnxlint.rewrites import override_dims

if TYPE_CHECKING:
    from onnxlint.analyses.level1 import GraphRefusal, Level1Outcome, WorkerFailure
    from onnxlint.context import LintContext
    from onnxlint.profiles import Profile

__all__ = ["Assignment", "assign_level", "optimized_model"]


def optimized_model(
    model: onnx.ModelProto, timeout_s: float = 120.0
) -> tuple[onnx.ModelProto | None, str]:
    """The graph after ORT's basic (level-1) optimizations, and a note on how it was made.

    From the level-1 cache, or a CPU-only ORT session in an isolated worker reading a
    copy in a temporary folder (never next to the user's model); see
    :mod:`onnxlint.analyses.level1`. Returns ``(None, reason)`` when ORT cannot load
    the model or it is not built (external data, above ``level1.OPTIMIZED_MAX_NODES``).
    """
    from onnxlint.analyses.level1 import Level1Job, cache_enabled

    job = Level1Job(model, use_cache=cache_enabled(), timeout_s=timeout_s)
    try:
        return job.result()
    finally:
        job.close()


def _with_cpu(profiles: Sequence[Profile]) -> list[Profile]:
    from onnxlint import profiles as prof

    out = list(profiles)
    if not any(p.ep == CPU_EP for p in out):
        # the CPU profile ships with onnxlint; without it CPU simply takes what is left
        with contextlib.suppress(prof.ProfileError):
            out.append(prof.get_profile("cpu"))
    return out


def assign_level(lg: LevelGraph, profiles: Sequence[Profile]) -> LevelAssignment:
    """Verdicts of every EP for every partitioned node, plus the CPU preference rule."""
    eps = _with_cpu(profiles)
    result = LevelAssignment(graph=lg, profiles=eps)
    # evaluate() is pure: nodes with equal facts (most of a large graph) share one
    # evaluation per EP, and one facts object and one tuple of verdicts in memory
    # a second memo keyed without symbolic dim names: shape inference names unknown dims
    # one by one (unk__17), which makes most nodes of a transformer unique. An EP's verdict
    # from there is reused unless its reason names a symbol; only those EPs are re-asked.
    # graph sizes matter only up to the largest size a profile asks about: without the cap
    # every control-flow body (its own node count) would need evaluations of its own
    cap = node_count_cap(eps)
    sized = sized_ops(eps)
    exact, by_class = _memos(eps, cap)
    first = _FirstClaimers(eps)
    shared = _SharedVerdicts()
    for g in lg.graphs():
        nodes = lg.nodes(g)
        count = len(nodes)
        # a graph_nodes_at_most constraint asks about the graph's first node in ORT's order
        # only (OpenVINO's lone-op check reads that one node); the others see a graph
        # larger than any such constraint
        lead = lg.order(g)[0].path if nodes else None
        other = max(count, cap + 1)
        # ORT asks EPs that need static control flow nothing about body nodes: they run on CPU.
        static_cf = tuple(p.ep for p in eps if p.requires_static_control_flow and g.depth > 0)
        for n in nodes:
            facts = node_facts(lg, n, count if n.path == lead else other)
            verdicts, facts = _verdicts(
                eps, facts, cap, exact, by_class, shared, (facts.domain, facts.op_type) in sized
            )
            result.nodes[n.path] = NodeAssignment(
                node=n,
                facts=facts,
                verdicts=verdicts,
                first_claimer=first(verdicts, (), static_cf),
                in_body_refused_by=static_cf,
            )
    apply_fusions(lg, result)
    apply_layout_output_claims(lg, result)
    apply_quantized_input_claims(lg, result)
    _apply_requantized_failures(lg, result)
    for p in eps:
        if p.cpu_preferred_shape_nodes:
            apply_cpu_preference(lg, result, p)
    _fill_first_claimer(result, first)
    return result


class _FirstClaimers:
    """``level_assignment.first_claimer`` for one EP list, once per distinct verdicts tuple
    (most nodes of a large graph share theirs through the verdict memos) and withdrawals."""

    def __init__(self, eps: Sequence[Profile]) -> None:
        self.eps = tuple(p.ep for p in eps)
        #: (id of the verdicts, withdrawals) -> (the verdicts, held so the id stays theirs, EP)
        self.memo: dict[tuple[Any, ...], tuple[tuple[Verdict, ...], str]] = {}

    def __call__(
        self,
        verdicts: tuple[Verdict, ...],
        cpu_preferred_by: tuple[str, ...],
        in_body_refused_by: tuple[str, ...],
    ) -> str:
        key = (id(verdicts), cpu_preferred_by, in_body_refused_by)
        hit = self.memo.get(key)
        if hit is None or hit[0] is not verdicts:
            ep = first_claimer(self.eps, verdicts, cpu_preferred_by, in_body_refused_by)
            hit = self.memo[key] = (verdicts, ep)
        return hit[1]


_Exact = dict[tuple[Any, ...], tuple[NodeFacts, tuple[Verdict, ...]]]
_ByClass = dict[tuple[Any, ...], tuple[tuple[Verdict, ...], tuple[bool, ...]]]
#: the two memos kept across lints (``keep_verdicts``), per EP list and size cap, with the
#: profiles they were made with; None: each lint has its own
_KEPT: dict[tuple[int, ...], tuple[tuple[Profile, ...], _Exact, _ByClass]] | None = None
#: entries kept across lints at most (then both memos start afresh)
KEPT_LIMIT = 200_000


def keep_verdicts(enabled: bool) -> None:
    """Keep the verdict memos across lints in this process (the language server): a
    re-lint of an edited model evaluates only the nodes whose facts are new.
    ``evaluate`` is pure, so a kept verdict is what a new evaluation would say."""
    global _KEPT
    _KEPT = {} if enabled else None


def _memos(eps: Sequence[Profile], cap: int) -> tuple[_Exact, _ByClass]:
    if _KEPT is None:
        return {}, {}
    key = (cap, *map(id, eps))
    # the entry holds its profiles: while it lives, no other object can have their ids
    kept = _KEPT.get(key)
    if kept is None:
        _drop_superseded(cap, eps)
        kept = _KEPT[key] = (tuple(eps), {}, {})
    if len(kept[1]) + len(kept[2]) > KEPT_LIMIT:
        kept[1].clear()
        kept[2].clear()
    return kept[1], kept[2]


#: EP lists whose memos are kept at most (then the oldest list's are dropped)
KEPT_LISTS = 8


def _drop_superseded(cap: int, eps: Sequence[Profile]) -> None:
    """Before memos for new profile objects are kept: drop those of profiles with the same
    ids (a user profile loaded again after its file changed: the old objects and their
    verdicts would never be asked again), and the oldest lists past ``KEPT_LISTS``."""
    assert _KEPT is not None
    ids = [p.id for p in eps]
    for key, (profiles, _, _) in list(_KEPT.items()):
        if key[0] == cap and [p.id for p in profiles] == ids:
            del _KEPT[key]
    while len(_KEPT) >= KEPT_LISTS:
        del _KEPT[next(iter(_KEPT))]


class _SharedVerdicts:
    """One object per distinct verdict an EP is asked again for, and per distinct tuple of
    verdicts, in one assignment. Re-asked because its reason may name a node's own
    symbolic dim, the answer is most often the same text (a dim every node has): on a
    100k-node graph with every EP, 111k verdicts and 45k tuples held 552 and 78 values."""

    def __init__(self) -> None:
        self.verdicts: dict[Verdict, Verdict] = {}
        #: the ids of a tuple's verdicts -> that tuple (which holds them: the ids stay theirs)
        self.tuples: dict[tuple[int, ...], tuple[Verdict, ...]] = {}

    def one(self, verdict: Verdict) -> Verdict:
        return self.verdicts.setdefault(verdict, verdict)

    def all(self, verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
        """``verdicts``, each already shared, as the one tuple of them."""
        return self.tuples.setdefault(tuple(map(id, verdicts)), verdicts)


def _verdicts(
    eps: Sequence[Profile],
    facts: NodeFacts,
    cap: int,
    exact: dict[tuple[Any, ...], tuple[NodeFacts, tuple[Verdict, ...]]],
    by_class: dict[tuple[Any, ...], tuple[tuple[Verdict, ...], tuple[bool, ...]]],
    shared: _SharedVerdicts | None = None,
    sizes: bool = False,
) -> tuple[tuple[Verdict, ...], NodeFacts]:
    """Every EP's verdict for ``facts`` through the two memos; also the facts object to keep
    (an equal one already kept, so that identical nodes share it). ``shared``: the verdicts
    evaluated here are the objects already made for equal ones. ``sizes``: a constraint
    reads the node's dimension values, so they are part of its keys."""
    share = shared if shared is not None else _SharedVerdicts()

    def ask(p: Profile) -> Verdict:
        return _epcontext_verdict(p, facts) or evaluate(p, facts)

    try:
        key = facts.key(cap, sizes=sizes)
        hit = exact.get(key)
    except TypeError:  # an attribute value that does not hash: evaluate the node alone
        return tuple(ask(p) for p in eps), facts
    if hit is not None:
        return hit[1], (hit[0] if hit[0] == facts else facts)
    ckey = facts.key(cap, symbols=False, sizes=sizes)
    known = by_class.get(ckey)
    if known is None:
        verdicts = share.all(tuple(share.one(ask(p)) for p in eps))
        symbols = symbols_of(facts)
        names = tuple(
            bool(symbols)
            and any(sym in t for t in (v.reason, v.fails_after_claim) if t for sym in symbols)
            for v in verdicts
        )
        by_class[ckey] = (verdicts, names)
    else:
        verdicts = share.all(
            tuple(
                share.one(ask(p)) if named else v for p, v, named in zip(eps, *known, strict=True)
            )
        )
    exact[key] = (facts, verdicts)
    return verdicts, facts


def _epcontext_verdict(p: Profile, facts: NodeFacts) -> Verdict | None:
    """An EPContext node holds one EP's compiled binary: ORT gives it to the EP named by its
    ``source`` attribute and to no other (the compiled-model rules check the node itself)."""
    if facts.op_type != "EPContext" or facts.domain != "com.microsoft":
        return None
    source = str(facts.attributes.get("source") or "").lower()
    names = {p.ep.lower(), p.ep.lower().removesuffix("executionprovider")}
    mine = bool(source) and source in names
    reason = (
        f"{p.label} runs its own compiled EPContext binary"
        if mine
        else f"{p.label} does not run an EPContext node compiled for '{source or 'no source'}'"
    )
    return Verdict(
        ep=p.ep, profile=p.id, claimed=mine, kind="supported" if mine else "domain", reason=reason
    )


#: EPs that claim a node they refuse alone when it is part of a pattern they fuse.
#: QNN HTP: the exporters' erf-form Gelu ``x * 0.5 * (1 + erf(x / sqrt(2)))`` is


def _apply_requantized_failures(lg: LevelGraph, result: LevelAssignment) -> None:
    """Claimed nodes that a profile's ``requantized_constant_failures`` say fail to compile
    (OpenVINO CPU): their verdict gets ``fails_after_claim`` (see analyses/requantized)."""
    from dataclasses import replace

    from onnxlint.analyses.requantized import match_node, requantized_failure_ops

    wanted = [(p, requantized_failure_ops(p)) for p in result.profiles]
    wanted = [(p, ops) for p, ops in wanted if ops]
    if not wanted:
        return
    for na in list(result.nodes.values()):
        hits = {}
        for p, ops in wanted:
            v = na.verdict_for(p.ep)
            if na.node.op_type not in ops or v is None or not v.claimed or v.fails_after_claim:
                continue
            m = match_node(lg, na.node, p)
            if m is not None:
                hits[p.ep] = m
        if not hits:
            continue
        verdicts = tuple(
            replace(
                v,
                fails_after_claim=f"{v.reason} but session creation fails: {hits[v.ep].describe()}",
                provenance=hits[v.ep].failure.provenance or v.provenance,
            )
            if v.ep in hits
            else v
            for v in na.verdicts
        )
        result.nodes[na.path] = replace(na, verdicts=verdicts)


def _fill_first_claimer(result: LevelAssignment, first: _FirstClaimers) -> None:
    """The first claimer again for the nodes whose verdicts or withdrawals changed after
    they were made (fusions, failures after claim, CPU preference): only those are copied."""
    from dataclasses import replace

    for path, na in list(result.nodes.items()):
        ep = first(na.verdicts, na.cpu_preferred_by, na.in_body_refused_by)
        if ep != na.first_claimer:
            result.nodes[path] = replace(na, first_claimer=ep)


def level_graph(ctx: LintContext, model: onnx.ModelProto, level: str, **kwargs: Any) -> LevelGraph:
    """:func:`build_level_graph` for this lint, with the If conditions the lint's dataflow
    knows before the run marked (:func:`mark_known_conditions`): every level graph an
    assignment reads is built here."""
    lg = build_level_graph(model, level, **kwargs)
    mark_known_conditions(lg, ctx)
    return lg


def mark_known_conditions(lg: LevelGraph, ctx: LintContext) -> None:
    """Record in ``lg.known_values`` each If condition of ``lg`` that the lint's dataflow
    analysis finds known before the run (computed from constants and static shapes
    alone: a comparison of a rank, or of a static dim). OpenVINO folds such an If and
    compiles the branch it takes (measured, ``ov-if-known-condition``). A level-1 graph's
    value is looked up by its name in the graph of the same path in the model as
    written: ORT keeps the names of the values it does not fold."""
    from onnxlint.analyses.dataflow import Dataflow

    source = {g.path: g for g in ctx.index.graphs}
    dataflow: Dataflow | None = None
    for g in lg.graphs():
        known: set[str] = set()
        for n in g.nodes:
            if n.op_type != "If" or n.domain != "ai.onnx" or not n.input_names:
                continue
            cond = n.input_names[0]
            src = source.get(g.path)
            if not cond or src is None or lg.is_initializer(g, cond):
                continue
            if dataflow is None:
                dataflow = ctx.analysis(Dataflow)
            if dataflow.foldable(cond, src):
                known.add(cond)
        if known:
            lg.known_values[g.path] = frozenset(known)


class ExportedGraph:
    """``ctx.analysis(ExportedGraph).graph``: the exported graph level (functions inlined,
    ``assume-dims`` applied) with its types, which every EP's assignment reads. It depends
    on the model and the configuration only (``model_only``): lints of one model with
    different EPs share it (:class:`~onnxlint.context.SharedModel`)."""

    model_only = True

    def __init__(self, ctx: LintContext) -> None:
        from onnxlint.analyses.shapes import Shapes

        source = override_dims(ctx.model, ctx.config.assume_dims)
        model = inline_functions(source)
        inferred = None
        left: dict[str, onnx.TensorProto] = {}
        if model is ctx.model and model.ir_version >= 4:
            # the exported graph as the user wrote it: the Shapes analysis has inferred it
            # already (below IR 4 the inference here reads initializers differently); its
            # types are read, the weights only if the level graph keeps the copy
            shapes = ctx.analysis(Shapes)
            if session_types_differ(model):
                # the Shapes analysis may have propagated shape values ORT does not; its
                # first pass (no propagation) is the session types' first pass too
                first = shapes.take_unpropagated()
                shapes.take_inferred(weights=False)  # not read: not kept either
                conflicts = has_conflict(shapes.errors)  # ORT merges them: declared_merge
                inferred, left = infer_session_types_without_weights(model, first, conflicts)
                del first  # the level graph reads its types from ``inferred`` alone
            else:
                inferred, left = shapes.take_inferred(weights=False), shapes.weights_left_out()
        self.graph = level_graph(
            ctx,
            model,
            EXPORTED,
            source=ctx.index if model is not source else None,
            inferred=inferred,
            source_index=ctx.index if inferred is not None else None,
            weights_left_out=left,
        )
        if inferred is not None and len(ctx.index.nodes) >= TRIM_MIN_NODES:
            del inferred  # read: the level graph keeps the types, not the copy
            release_freed()


class Assignment:
    """``ctx.analysis(Assignment)``: verdicts per node and EP, per graph level, computed once.

    ``level("exported")`` is always available; ``level("optimized")`` runs ORT
    (CPU only) the first time it is asked for and returns None when ORT cannot
    load the model (``optimized_note`` says why).
    """

    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx
        self.profiles: list[Profile] = list(ctx.eps)
        self._levels: dict[str, LevelAssignment | None] = {}
        self.optimized_note: str | None = None
        #: the level-1 worker's failure (hung, crashed, ...), reported as OL605
        self.optimized_failure: WorkerFailure | None = None
        #: ORT's own type and shape inference rejecting the graph in the level-1 worker
        #: (the error, deterministic), reported as OL606: no default session with these
        #: dims loads (no session at all when ``every_level``)
        self.optimized_refusal: GraphRefusal | None = None
        self._outcome: Level1Outcome | None = None

    def level1_outcome(self) -> Level1Outcome:
        """ORT's level-1 graph of the model (``assume-dims`` applied), or why there is
        none: collected once from the worker the engine started right after loading, or
        the cache's copy. Reading it builds no assignment (a CPU-only lint asks for it
        only to report ORT's own refusal)."""
        if self._outcome is None:
            from onnxlint.analyses.level1 import graph_for

            source = override_dims(self.ctx.model, self.ctx.config.assume_dims)
            got = graph_for(self.ctx.model, self.ctx.config, source, self.ctx.loaded.base_dir)
            self._outcome = got
            self.optimized_note = got.note
            self.optimized_failure = got.failure
            self.optimized_refusal = got.refusal
        return self._outcome

    @property
    def exported(self) -> LevelAssignment:
        got = self.level(EXPORTED)
        assert got is not None
        return got

    def level(self, level: str) -> LevelAssignment | None:
        if level not in self._levels:
            self._levels[level] = self._build(level)
        return self._levels[level]

    def _build(self, level: str) -> LevelAssignment | None:
        note: str | None = None
        if level == EXPORTED:
            lg = self.ctx.analysis(ExportedGraph).graph
        elif level == OPTIMIZED:
            outcome = self.level1_outcome()
            got, note = outcome.graph, outcome.note
            if got is None:
                return None
            got = collapse_ort_inlined(drop_inserted_casts(got), self.ctx.index)
            from onnxlint.analyses.shapes import Shapes

            # a value ORT merged keeps the union in ORT's graph: not inferred again
            merged = has_conflict(self.ctx.analysis(Shapes).errors)
            cut = merged_names(self.ctx.model, None) if merged else frozenset()
            lg = level_graph(self.ctx, got, level, source=self.ctx.index, cut=cut)
        else:
            raise ValueError(f"unknown graph level {level!r}")
        la = assign_level(lg, self.profiles)
        expanded = expand_unclaimed_function_ops(lg, la)
        if expanded is not None:
            model, positions = expanded
            lg = level_graph(self.ctx, model, level, source=self.ctx.index)
            lg.inlined_late = frozenset(n.path for n in lg.index.main.nodes if n.index in positions)
            la = assign_level(lg, self.profiles)
        if note is not None:
            lg.note = note  # the optimized level's own graph (the exported one is shared)
        return la
