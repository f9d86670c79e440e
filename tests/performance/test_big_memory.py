"""What a lint keeps in memory per node and per inference pass (issue 19, 100k nodes with
every EP): shared objects where equal values repeat, one parsed copy of the model at a
time. Checked by identity and by type, never by timing or by RSS."""

from __future__ import annotations

import dataclasses
import platform
import random
import sys
from collections import deque
from pathlib import Path
from typing import Any

import onnx
import pytest

from onnxlint import heap, tensors
from onnxlint.analyses import assignment, partition, partition_units
from onnxlint.analyses import shapes as shapes_module
from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.level_assignment import NodeAssignment
from onnxlint.analyses.level_graph import EXPORTED
from onnxlint.analyses.node_facts import slot_set
from onnxlint.analyses.shapes import Shapes
from onnxlint.config import Config
from onnxlint.engine import lint, resolve_eps
from onnxlint.ep_names import CPU_EP
from onnxlint.index import ModelIndex, node_edges, topological_order
from tests.conftest import parse
from tests.performance.test_big_inference import _context, _models
from tests.performance.test_stages import MODEL as DYNAMIC

#: nodes of different facts (op, inputs) with some equal slot sets (none absent, none constant)
PLAIN = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x, float[2,4] b) => (float[2,4] y) {
    r = Relu(x)
    s = Add(r, b)
    t = Sigmoid(s)
    y = Mul(t, b)
}
"""

EPS = ["qnn", "openvino", "cuda", "coreml"]


def test_slot_sets_are_one_object_per_value() -> None:
    assert slot_set((0, 2)) == frozenset({0, 2})
    assert slot_set((0, 2)) is slot_set((0, 2))
    assert slot_set(()) is slot_set(())


def test_node_facts_share_their_slot_sets() -> None:
    la = _context(parse(PLAIN), EPS).analysis(Assignment).exported
    facts = [na.facts for na in la]
    assert len({id(f) for f in facts}) == len(facts) == 4  # four different nodes
    for name in ("absent_inputs", "constant_inputs", "dequantized_inputs"):
        assert len({id(getattr(f, name)) for f in facts}) == 1, name
    # equal per-slot tuples are one object: every input and output is float[2,4] here
    # (one-input nodes and two-input nodes: two input tuples, one output tuple)
    for name, objects in (
        ("input_dtypes", 2),
        ("input_shapes", 2),
        ("output_dtypes", 1),
        ("output_shapes", 1),
        ("attributes", 1),
    ):
        assert len({id(getattr(f, name)) for f in facts}) == objects, name


@pytest.mark.parametrize("name", ["plain", *_models()])
def test_the_first_claimer_is_set_once_and_is_the_first_confirmed_claim(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made with each node (most share their verdicts: one answer per verdicts tuple), and
    copied afterwards only for a node a later step changed; the same EP as the first profile
    whose claim ``NodeAssignment.claims`` confirms."""
    model = parse(PLAIN) if name == "plain" else _models()[name]
    copies: list[Any] = []
    real = dataclasses.replace

    def counted(obj: Any, **changes: Any) -> Any:
        if isinstance(obj, NodeAssignment) and set(changes) == {"first_claimer"}:
            copies.append(obj)
        return real(obj, **changes)

    monkeypatch.setattr(dataclasses, "replace", counted)
    assignment = _context(model, EPS).analysis(Assignment)
    la = assignment.exported
    assert la.nodes
    for na in la:
        expected = next((p.ep for p in la.profiles if na.claims(p.ep)), CPU_EP)
        assert na.first_claimer == expected, na.path
    if name == "plain":  # no fusion, no CPU preference, no failure after claim
        assert copies == []


def test_the_kept_first_pass_waits_serialised_while_the_second_runs() -> None:
    """With an EP the Shapes analysis keeps the first inference pass for the session types;
    it is held as bytes (not a third parsed copy beside the second pass's answer) and
    handed out parsed, as ONNX's first pass answers."""
    model = parse(DYNAMIC)
    shapes = _context(model, ["qnn"]).analysis(Shapes)
    assert isinstance(shapes._unpropagated, bytes)
    kept = shapes.take_unpropagated()
    assert isinstance(kept, onnx.ModelProto)
    alone, errors = shapes_module._infer(model, data_prop=False)
    assert errors == []
    assert kept.SerializeToString(deterministic=True) == alone.SerializeToString(deterministic=True)
    assert shapes.take_unpropagated() is None


def _passes_seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[type, int, bool, bool]]:
    """Per inference pass of the Shapes analysis: the type and id of what ONNX is handed,
    ``data_prop``, and whether the analysis then holds a parsed light copy."""
    seen: list[tuple[type, int, bool, bool]] = []
    real = onnx.shape_inference.infer_shapes

    def spy(source: Any, *args: Any, **kwargs: Any) -> onnx.ModelProto:
        frame = sys._getframe(1)
        while frame.f_code.co_name != "_infer_passes_serialized":
            assert frame.f_back is not None
            frame = frame.f_back
        held = isinstance(frame.f_locals.get("light"), onnx.ModelProto)
        seen.append((type(source), id(source), bool(kwargs.get("data_prop")), held))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", spy)
    return seen


def test_the_passes_read_the_light_copy_serialised_once_and_the_second_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model with large weights is inferred from a copy without their data. ONNX reads
    it serialised: the bytes are made once for both passes, and the parsed copy is let go
    before the second pass (about 50 MB beside that pass, the lint's peak, on the 100k-node
    graph). The answer is the one inferred from the copy itself."""
    from tests.performance.test_model_copies import _weighted_model

    model = _weighted_model()
    seen = _passes_seen(monkeypatch)
    inferred, errors, left, first = shapes_module._infer_passes(model, keep_unpropagated=True)
    assert errors == [] and left and first is not None
    assert [s[2] for s in seen] == [False, True]
    assert all(s[0] is bytes for s in seen) and seen[0][1] == seen[1][1]
    assert [s[3] for s in seen] == [True, False]
    light, _ = tensors.dataless_copy(model)
    monkeypatch.undo()
    for got, data_prop in ((first, False), (inferred, True)):
        alone, _ = shapes_module._infer(light, data_prop=data_prop)
        assert got.SerializeToString(deterministic=True) == alone.SerializeToString(
            deterministic=True
        )


def test_a_second_pass_that_cannot_run_answers_the_light_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As before the copy was let go: the model without its weights' data, as a new object."""
    from tests.performance.test_model_copies import _weighted_model

    model = _weighted_model()
    real = onnx.shape_inference.infer_shapes

    def failing(source: Any, *args: Any, **kwargs: Any) -> onnx.ModelProto:
        if kwargs.get("data_prop"):
            raise onnx.shape_inference.InferenceError("no")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", failing)
    inferred, errors, _, _ = shapes_module._infer_passes(model, keep_unpropagated=False)
    assert errors == ["no", "no"]
    light, _ = tensors.dataless_copy(model)
    assert inferred is not model
    assert inferred.SerializeToString() == light.SerializeToString()


def test_eps_without_units_share_one_sweep_graph_per_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ORT's greedy grouping runs once per EP over each graph; the graph it sweeps (units,
    unit edges, roots) is the same for every EP without QDQ units: made once per graph."""
    made: list[str] = []
    real = partition_units.unit_graph

    def counted(g: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(g.path)
        return real(g, *args, **kwargs)

    monkeypatch.setattr(partition_units, "unit_graph", counted)
    monkeypatch.setattr(partition, "unit_graph", counted)
    ctx = _context(parse(PLAIN), EPS)
    plan = ctx.analysis(partition.Partitions).plan(EXPORTED)
    assert plan is not None and plan.partitions
    assert made == ["main"]


def _reference_groups(
    order: list[Any],
    supported: set[str],
    units: dict[str, list[str]],
    edges: tuple[dict[str, list[str]], dict[str, list[str]]],
) -> list[list[str]]:
    """The greedy grouping as it was written before the sweep graph was shared (a member
    list per unit, unit edges rebuilt per call): the reference the shared one must equal."""
    unit_of: dict[str, str] = {m: t for t, members in units.items() for m in members}
    for n in order:
        unit_of.setdefault(n.path, n.path)
    members_of: dict[str, list[str]] = {}
    for n in order:
        members_of.setdefault(unit_of[n.path], []).append(n.path)
    for target, members in units.items():
        members_of[target] = list(members)
    preds, succs = edges
    in_degree: dict[str, int] = {}
    out_edges: dict[str, list[str]] = {}
    for u, members in members_of.items():
        mset = set(members)
        in_degree[u] = sum(1 for m in members for p in preds[m] if p not in mset)
        out_edges[u] = [unit_of[s] for m in members for s in succs[m] if s not in mset]
    roots = list(dict.fromkeys(unit_of[n.path] for n in order if in_degree[unit_of[n.path]] == 0))
    to_process, next_group = deque(roots), deque[str]()
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


#: a graph with branches, a value read twice by one node, and chains to make units of
BRANCHY = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,4] y) {
    a = Relu(x)
    b = Sigmoid(a)
    c = Tanh(a)
    d = Add(b, c)
    e = Mul(d, a)
    f = Neg(e)
    h = Abs(c)
    k = Add(h, h)
    m = Exp(k)
    y = Sub(f, m)
}
"""


@pytest.mark.parametrize("with_units", [False, True])
def test_a_shared_sweep_graph_groups_as_the_reference(with_units: bool) -> None:
    """Random claims (and random units of consecutive nodes): the same groups from a
    prepared sweep graph, reused across calls, as from the grouping written per call, and
    the prepared graph unchanged by the sweeps."""
    index = ModelIndex(parse(BRANCHY))
    g = index.graphs[0]
    order = topological_order(g, g.nodes)
    edges = node_edges(g, order)
    paths = [n.path for n in order]
    rng = random.Random(19)
    for _ in range(40):
        units: dict[str, list[str]] = {}
        if with_units:
            start = rng.randrange(len(paths) - 2)
            members = paths[start : start + rng.randint(1, 3)]
            units[members[-1]] = members
        prepared = partition_units.unit_graph(g, order, units, edges)
        before = (dict(prepared.in_degree), {k: list(v) for k, v in prepared.out_edges.items()})
        for _ in range(10):
            claimed = {p for p in paths if rng.random() < 0.6}
            expected = _reference_groups(order, claimed, units, edges)
            assert partition_units.greedy_groups(g, order, claimed, units, edges) == expected
            shared = partition_units.greedy_groups(g, order, claimed, prepared=prepared)
            assert shared == expected
        assert (prepared.in_degree, prepared.out_edges) == before


def test_crossings_of_one_value_type_share_one_byte_count() -> None:
    ctx = _context(parse(PLAIN), ["qnn", "coreml", "xnnpack"])
    plan = ctx.analysis(partition.Partitions).plan(EXPORTED)
    assert plan is not None
    by_type: dict[tuple[Any, ...], set[int]] = {}
    for c in plan.crossings:
        by_type.setdefault((c.dtype, c.shape), set()).add(id(c.bytes))
    assert plan.crossings
    assert all(len(ids) == 1 for ids in by_type.values()), by_type


#: twelve values into one CPU partition (CoreML runs the Relus, not a 12-input Sum), one of
#: them a graph output too
FAN_IN = (
    """<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,16] y, float[1,16] r0, float[1,16] r5) {
"""
    + "".join(f"    r{i} = Relu(x)\n" for i in range(12))
    + "    y = Sum("
    + ", ".join(f"r{i}" for i in range(12))
    + ")\n}\n"
)


def _synthetic_plan(monkeypatch: pytest.MonkeyPatch, scanned: int) -> list[Any]:
    from benchmarks import corpus

    monkeypatch.setattr(partition, "_SCANNED_NAMES", scanned)
    plans = []
    for model, eps in (
        (corpus.synthetic(300, seed=5), ["qnn", "openvino", "cuda", "coreml", "xnnpack"]),
        (parse(FAN_IN), ["coreml"]),
    ):
        plans.append(_context(model, eps).analysis(partition.Partitions).plan(EXPORTED))
    return plans


def test_partition_names_searched_in_their_lists_or_sets_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A partition's inputs and outputs are searched in its list while short (a set for each
    of the 31k partitions of the 100k-node graph with every EP held 16 MB at the peak);
    the plan is the one made with a set for every partition, or none."""
    limit = partition._SCANNED_NAMES
    runs = [_synthetic_plan(monkeypatch, k) for k in (limit, -1, 10**9)]
    shown = [
        [(p.id, p.inputs, p.outputs, p.bytes) for plan in plans for p in plan.partitions]
        for plans in runs
    ]
    assert shown[0] == shown[1] == shown[2]
    partitions = [p for plan in runs[0] for p in plan.partitions]
    assert any(len(p.inputs) > limit for p in partitions)
    assert any(len(p.outputs) > limit for p in partitions)
    assert all(len(set(p.inputs)) == len(p.inputs) for p in partitions)
    assert all(len(set(p.outputs)) == len(p.outputs) for p in partitions)
    # equal totals are one object
    totals: dict[Any, set[int]] = {}
    for p in partitions:
        totals.setdefault(p.bytes, set()).add(id(p.bytes))
    assert any(len(ids) == 1 for ids in totals.values())
    assert all(len(ids) == 1 for b, ids in totals.items() if b.terms), totals


class _Tracked(dict):  # type: ignore[type-arg]
    """A dict a weak reference can follow."""


def test_a_graphs_partitioning_tables_are_let_go_before_the_numbering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The edges and sweep graphs of each graph (tens of MB on the 100k-node graph) are not
    held while the partitions are numbered and their crossings counted (the peak)."""
    import weakref

    made: list[weakref.ref[Any]] = []
    real_edges = partition.node_edges

    def tracked(*args: Any, **kwargs: Any) -> Any:
        preds, succs = real_edges(*args, **kwargs)
        out = _Tracked(preds), _Tracked(succs)
        made.extend(weakref.ref(d) for d in out)
        return out

    alive: list[int] = []
    real_number = partition._number_partitions

    def number(*args: Any) -> None:
        alive.append(sum(r() is not None for r in made))
        real_number(*args)

    monkeypatch.setattr(partition, "node_edges", tracked)
    monkeypatch.setattr(partition, "_number_partitions", number)
    ctx = _context(parse(PLAIN), ["qnn", "openvino", "cuda"])
    assert ctx.analysis(partition.Partitions).plan(EXPORTED) is not None
    assert made and alive == [0]


def test_a_lint_lets_its_analyses_go_without_a_collection() -> None:
    """The analyses refer back to the lint's context; a lint nobody observes forgets them, so
    that they are freed when it returns, not at the next full collection (on the 100k-node
    graph with every EP, 340k objects and about 70 MB held through the report's rendering).
    A lint whose context is observed keeps them for the observer."""
    import gc
    import weakref

    made: list[weakref.ref[Any]] = []
    real = Assignment.__init__

    def init(self: Assignment, ctx: Any) -> None:
        real(self, ctx)
        made.append(weakref.ref(self))

    seen: list[Any] = []
    was = gc.isenabled()
    gc.disable()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Assignment, "__init__", init)
            lint(parse(DYNAMIC), eps=["qnn"], config=Config(), what_if=False)
            assert len(made) == 1 and made[0]() is None
            lint(
                parse(DYNAMIC),
                eps=["qnn"],
                config=Config(),
                what_if=False,
                observe=lambda ctx, report: seen.append(ctx),
            )
            assert len(made) == 2 and made[1]() is not None
            assert seen[0].computed(Assignment) is made[1]()
    finally:
        if was:
            gc.enable()


def test_level_graph_types_are_a_table_per_graph() -> None:
    """The exported level's types are kept per graph, then per value name: one key tuple per
    value of the 100k-node graph held 6 MB through the assignment and the partitioning."""
    ctx = _context(_models()["dynamic"], ["qnn"])
    lg = ctx.analysis(Assignment).exported.graph
    assert set(lg.types) == {g.path for g in ctx.index.graphs}
    assert all(isinstance(name, str) for table in lg.types.values() for name in table)
    main = ctx.index.main
    assert lg.value_type(main, "y") is lg.types[main.path]["y"]


def test_the_c_allocator_is_asked_to_give_freed_memory_back() -> None:
    """glibc keeps what a process frees for its own later ``malloc`` calls; on Linux with
    glibc (the CI's and the benchmark's) ``malloc_trim`` is found and runs."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    assert heap.release_freed() is True


@pytest.mark.parametrize("nodes_at_least, trims", [(0, 2), (10**9, 0)])
def test_a_large_lint_trims_after_inference_and_after_the_exported_types(
    monkeypatch: pytest.MonkeyPatch, nodes_at_least: int, trims: int
) -> None:
    """Once after the Shapes analysis let its inference passes go, once after the exported
    level read the session types' copy; not for a model under ``TRIM_MIN_NODES``."""
    calls: list[str] = []
    monkeypatch.setattr(shapes_module, "TRIM_MIN_NODES", nodes_at_least)
    monkeypatch.setattr(assignment, "TRIM_MIN_NODES", nodes_at_least)
    monkeypatch.setattr(shapes_module, "release_freed", lambda: calls.append("shapes"))
    monkeypatch.setattr(assignment, "release_freed", lambda: calls.append("exported"))
    ctx = _context(parse(DYNAMIC), ["qnn"])
    assert ctx.analysis(Assignment).exported.nodes
    assert calls == ["shapes", "exported"][:trims]


def test_verdicts_asked_again_with_the_same_answer_share_one_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two nodes of one class (their facts differ in a symbolic dim's name only): the EP
    whose reason names a symbol is asked again for the second; an equal answer is the
    first's object, and the nodes share one tuple of verdicts."""
    from onnxlint.analyses.capability import NodeFacts, Verdict

    profiles = resolve_eps(["qnn", "cpu"], Config())

    def evaluate(p: Any, facts: NodeFacts) -> Verdict:
        claimed = p.ep == CPU_EP
        reason = f"{p.label} {'claims' if claimed else 'needs a static N'}"
        return Verdict(ep=p.ep, profile=p.id, claimed=claimed, kind="shape", reason=reason)

    monkeypatch.setattr(assignment, "evaluate", evaluate)
    exact: dict[Any, Any] = {}
    by_class: dict[Any, Any] = {}
    shared = assignment._SharedVerdicts()
    got = [
        assignment._verdicts(
            profiles,
            NodeFacts("Relu", input_shapes=(("N", dim),), output_shapes=(("N", dim),)),
            0,
            exact,
            by_class,
            shared,
        )[0]
        for dim in ("a", "b", "c")
    ]
    assert len(exact) == 3 and len(by_class) == 1  # three nodes, one class
    assert got[0] is got[1] is got[2]


def test_the_file_bytes_are_let_go_once_the_checker_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loader keeps a binary model's bytes for the checker (no second serialisation);
    once its verdict is made they are dropped, not held through the Shapes analysis's
    inference passes (on BERT-base, 435 MB beside the parsed model)."""
    path = tmp_path / "m.onnx"
    path.write_bytes(parse(DYNAMIC).SerializeToString())
    held: list[bool] = []
    real = Shapes.__init__

    def seen(self: Shapes, ctx: Any) -> None:
        held.append(ctx.loaded.wire is not None)
        real(self, ctx)

    monkeypatch.setattr(Shapes, "__init__", seen)
    report = lint(path, eps=["qnn"], config=Config(), what_if=False)
    assert not report.fatal
    assert held == [False]
