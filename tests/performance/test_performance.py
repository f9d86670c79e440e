"""The performance fixes keep behaviour, and the benchmark harness computes what it reports.

Fast tests only: no timing assertions (figures live in benchmarks/results/), small
generated models, one short subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from benchmarks import corpus
from benchmarks.__main__ import Measurement, markdown, ratios, run_child, scaling, targets
from onnxlint.analyses import assignment, level_graph, node_facts
from onnxlint.analyses.level1 import eligibility
from onnxlint.index import ModelIndex
from onnxlint.render import text

# -- the findings table: same lines as tabulate's own wrapping ---------------------------

LONG_PATH = "main/Loop_3:body/If_7:then_branch/" + "Add_" * 12
CELLS = [
    ("short", "main/Add_1", "qnn-htp", "a short message"),
    ("long word", LONG_PATH, "", "x" * 200),
    ("hyphens", "tensor 'gpu_0/queue_f22e83c9-22cd-4a8b-a66d-113af6b832b4_0'", "", "a-b-c " * 30),
    (
        "fix line",
        "main/Conv_0 (Conv)",
        "openvino-cpu",
        "message\nfix: replace it with " + "y " * 60,
    ),
    ("non-ascii", "main/Résumé_ノード_" * 3, "cpu", "claimed → refused … " * 8),
    ("empty", "", "", ""),
    ("spaces", "a  b   c" * 9, "   ", "  leading and trailing  " * 5),
    ("number", "12345", "1.5", "42"),
]


@pytest.mark.parametrize("case", CELLS, ids=[c[0] for c in CELLS])
def test_table_matches_tabulate_wrapping(case: tuple[str, str, str, str]) -> None:
    _, where, ep, message = case
    rows = [["OL501", "warning", where, ep, message], ["OL103", "info", "main", "", "ok"]]
    # every column is text (codes, paths, EP ids, messages): number parsing is off, which
    # only changes the alignment of a cell that reads as a number
    expected = tabulate(
        rows,
        headers=text._HEADERS,
        tablefmt="simple",
        maxcolwidths=text._WIDTHS,
        disable_numparse=True,
    )
    assert text._table(rows) == expected


_CELL = st.text(alphabet=st.sampled_from("ab Z0-/_:.,'()\n"), max_size=120)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["OL1", "OL501"]),
            st.sampled_from(["error", "\033[31merror\033[0m", "hint"]),
            _CELL,
            _CELL,
            _CELL,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_own_layout_is_tabulates_simple_format(rows: list[tuple[str, ...]]) -> None:
    """ASCII tables are laid out without tabulate: byte for byte its "simple" format
    (with tabulate's wrapping, ANSI colours measured as invisible)."""
    cells = [list(r) for r in rows]
    try:
        expected = tabulate(
            cells,
            headers=text._HEADERS,
            tablefmt="simple",
            maxcolwidths=text._WIDTHS,
            disable_numparse=True,
        )
    except ValueError:  # tabulate's own wrapping fails on some blank cells ("\n")
        assume(False)
    assert text._table(cells) == expected


@settings(max_examples=300, deadline=None)
@given(
    line=st.text(alphabet=st.sampled_from("abcXYZ09 -/_:.,'()"), min_size=1, max_size=200),
    width=st.sampled_from([14, 40, 80]),
)
def test_greedy_wrap_is_the_wrappers(line: str, width: int) -> None:
    wrapper = text._PlainWrap(width=width)
    assert text._wrap_plain(wrapper, line) == wrapper.wrap(line)


# -- index lookups ------------------------------------------------------------------------


def test_node_by_path_finds_every_node_including_bodies() -> None:
    model = corpus.synthetic(400, seed=3)
    index = ModelIndex(model)
    assert any(n.graph.depth > 0 for n in index.nodes), "the corpus graph must have bodies"
    for n in index.nodes:
        assert index.node_by_path(n.path) is n
    assert index.node_by_path("main/no_such_node") is None


def test_node_by_path_sees_nodes_added_after_the_first_lookup() -> None:
    index = ModelIndex(corpus.synthetic(50, seed=1))
    first = index.nodes[0]
    assert index.node_by_path(first.path) is first
    extra = ModelIndex(corpus.synthetic(50, seed=2)).nodes[-1]
    index.nodes.append(extra)
    assert index.node_by_path(extra.path) is not None


# -- ORT work that a static lint skips ------------------------------------------------------


def test_symbolic_inference_loads_without_onnxruntime_or_torch() -> None:
    code = (
        "import sys\n"
        "from onnxlint.analyses import shapes\n"
        "cls = shapes._symbolic_class()\n"
        "assert cls is not None and cls.__name__ == 'SymbolicShapeInference'\n"
        "print(sorted(m for m in ('onnxruntime', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


def test_level1_graph_is_not_built_above_the_node_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    model = corpus.synthetic(120, seed=5)
    monkeypatch.setattr(eligibility, "OPTIMIZED_MAX_NODES", 100)
    got, note = assignment.optimized_model(model)
    assert got is None
    assert "limit 100" in note


# -- the corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [60, 600])
def test_synthetic_graphs_reach_their_size_and_pass_the_checker(target: int) -> None:
    model = corpus.synthetic(target, seed=0)
    assert target <= corpus.count_nodes(model.graph) < target + 40
    onnx.checker.check_model(model, full_check=True)
    dims = [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims[:2] == ["batch", "seq"]


def test_bert_layer_passes_strict_shape_inference() -> None:
    model = corpus.bert_base(layers=1, hidden=64, heads=4, ffn=128)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    assert sum(n.op_type == "LayerNormalization" for n in model.graph.node) == 3


def test_external_weights_are_sparse_and_never_read(tmp_path: Path) -> None:
    model, size = corpus.external_weights(tmp_path)
    assert size == 4 * 2**30
    data = tmp_path / "weights.bin"
    with open(data, "wb") as fh:
        os.truncate(fh.fileno(), size)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    assert data.stat().st_blocks * 512 < 2**20, "truncate must leave the file sparse"
    cmd = [sys.executable, "-m", "onnxlint", str(path), "--ep", "qnn", "--isolated"]
    _, rss_mib, rc, out = run_child(cmd, 300, capture=True)
    assert rc in (0, 1), out
    assert rss_mib < 0.10 * size / 2**20, "the linter must not load the external weights"


# -- the harness' arithmetic ----------------------------------------------------------------


def _m(scenario: str, model: str, tool: str, runs: list[float], rss: float) -> Measurement:
    return Measurement(scenario, model, tool, "cmd", runs=runs, peak_rss_mb=rss)


def _models() -> dict[str, corpus.CorpusModel]:
    p = Path("x.onnx")
    return {
        "light_resnet50": corpus.CorpusModel("light_resnet50", p, 415, "light"),
        "synth_1k": corpus.CorpusModel("synth_1k", p, 1000, "gen"),
        "synth_10k": corpus.CorpusModel("synth_10k", p, 10_000, "gen"),
        "synth_100k": corpus.CorpusModel("synth_100k", p, 100_000, "gen"),
        "external_4gb": corpus.CorpusModel("external_4gb", p, 33, "gen", 4 * 2**30),
    }


def test_ratios_targets_and_scaling_from_measurements() -> None:
    ms = [
        _m("startup", "-", "onnxlint", [0.1, 0.1, 0.1], 15),
        _m("lint-1ep", "light_resnet50", "onnxlint", [0.4, 0.3, 0.5], 100),
        _m("lint-1ep", "light_resnet50", "onnxlint-warm", [0.6, 0.7, 0.6], 100),
        _m("lint-1ep", "light_resnet50", "ort-mobile", [2.0, 2.5, 3.0], 200),
        _m("lint-1ep", "light_resnet50", "floor", [0.2], 50),
        _m("lint-all-eps", "synth_1k", "onnxlint", [1.1], 60),
        _m("lint-all-eps", "synth_10k", "onnxlint", [10.1], 300),
        _m("lint-all-eps", "synth_100k", "onnxlint", [100.1], 3000),
        _m("lint-all-eps", "synth_100k", "floor", [40.0], 1000),
        _m("lint-all-eps", "external_4gb", "onnxlint", [0.5], 300),
    ]
    rows = {(r["model"], r["peer"]): r for r in ratios(ms) if r["scenario"] == "lint-1ep"}
    assert rows[("light_resnet50", "ort-mobile")]["time_ratio"] == pytest.approx(0.4 / 2.5, 1e-3)
    assert rows[("light_resnet50", "floor")]["rss_ratio"] == 2.0
    warm = {(r["model"], r["peer"]): r for r in ratios(ms) if r["scenario"] == "lint-1ep-warm"}
    assert warm[("light_resnet50", "ort-mobile")]["time_ratio"] == pytest.approx(0.6 / 2.5, 1e-3)
    got = {t["target"]: t for t in targets(ms, {}, _models())}
    assert got["lint one EP, light_resnet50, whole CLI (cold)"]["met"] is True
    assert got["vs ORT mobile usability checker (cold)"]["met"] is True  # 6.25x
    # the warm row is judged on its own figures (0.6 s, 4.17x), not the cold ones
    assert got["lint one EP, light_resnet50, whole CLI (warm)"]["met"] is False
    assert got["vs ORT mobile usability checker (warm)"]["met"] is False
    assert got["100k nodes, all EPs: time vs floor"]["met"] is False  # 2.5x
    assert got["100k nodes, all EPs: peak RSS vs floor"]["met"] is False  # 3x
    assert got["4 GiB external weights: peak RSS / weights"]["met"] is True  # 300 MiB of 4 GiB
    assert got["scaling 1k/10k/100k (s per 1k nodes)"]["met"] is True  # 1.0 s per 1k each
    per = [r["s_per_1k_nodes"] for r in scaling(ms, _models()) if r["tool"] == "onnxlint"]
    assert per == [1.0, 1.0, 1.0]


def test_markdown_has_every_section() -> None:
    ms = [_m("lint-1ep", "light_resnet50", "onnxlint", [0.4], 100)]
    ms[0].extra["onnxruntime_imported"] = False
    data = {
        "mode": "quick",
        "started": "s",
        "finished": "f",
        "duration_s": 1.0,
        "machine": {"cpu": "cpu", "cores": 2, "memory_gib": 1.0, "os": "os", "python": "3"},
        "load_average_end": [0, 0, 0],
        "versions": {"onnx": "1"},
        "corpus": {"light_resnet50": {"nodes": 415, "origin": "light", "external_bytes": 0}},
        "targets": targets(ms, {}, _models()),
        "ratios": [],
        "scaling": [],
        "lsp": {"error": "boom"},
        "measurements": [m.to_dict() for m in ms],
    }
    data["machine"]["load_average"] = [0, 0, 0]
    md = markdown(data)
    for heading in ("## Budget", "## Ratios", "## Scaling", "## Language server", "## Corpus"):
        assert heading in md
    assert "imports onnxruntime: no" in md
    assert "Failed: boom" in md


def test_run_child_reports_exit_code_and_peak_memory() -> None:
    wall, rss, rc, out = run_child(
        [sys.executable, "-c", "x = bytearray(64 * 2**20); print('hi'); raise SystemExit(3)"],
        60,
        capture=True,
    )
    assert rc == 3
    assert "hi" in out
    assert rss >= 64
    assert wall > 0


# -- the exported level reuses the lint's index ---------------------------------------------


def test_exported_level_on_the_lints_own_index_has_the_same_types() -> None:
    model = corpus.synthetic(400, seed=3)
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    own = ModelIndex(model)
    shared = level_graph.build_level_graph(model, "exported", inferred=inferred, source_index=own)
    fresh = level_graph.build_level_graph(model, "exported", inferred=inferred)
    assert shared.index is own and fresh.index is not own
    assert shared.types == fresh.types
    assert sum(map(len, shared.types.values())) > len(model.graph.value_info)
    assert shared.source_path == fresh.source_path


def test_exported_level_indexes_anew_when_the_graphs_differ() -> None:
    model = corpus.synthetic(50, seed=1)
    other = corpus.synthetic(60, seed=2)
    own = ModelIndex(model)
    lg = level_graph.build_level_graph(other, "exported", inferred=other, source_index=own)
    assert lg.index is not own
    assert [n.op_type for n in lg.index.nodes] == [n.op_type for n in ModelIndex(other).nodes]


def test_shared_verdicts_equal_evaluating_every_node_alone() -> None:
    """The assignment's memos (equal facts, static dims as classes, graph sizes past every
    profile's limit, symbolic names) never change a verdict, on a graph with bodies and
    symbolic dims, for every shipped profile."""
    from onnxlint import profiles
    from onnxlint.analyses.capability import evaluate

    model = corpus.synthetic(1500, seed=5)
    lg = level_graph.build_level_graph(model, "exported")
    eps = [profiles.get_profile(info.id) for info in profiles.list_profiles()]
    la = assignment.assign_level(lg, eps)
    past_limits = assignment.node_count_cap(la.profiles) + 1
    checked = 0
    for na in la:
        # facts shared between nodes are the facts each node would have alone: the graph's
        # size for its first node in ORT's order, a size past every profile's limit for
        # the others (a graph_nodes_at_most constraint asks about the first node only)
        g = na.node.graph
        count = len(lg.nodes(g))
        if na.node is not lg.order(g)[0]:
            count = max(count, past_limits)
        assert na.facts == node_facts.node_facts(lg, na.node, count), na.path
        if na.node.op_type == "Erf":  # fusion rules adjust Erf verdicts afterwards
            continue
        alone = tuple(evaluate(p, na.facts) for p in la.profiles)
        assert na.verdicts == alone, na.path
        checked += 1
    assert checked > 1000
