"""The language server's plain functions, without a client: settings, text maps,
diagnostic ranges, suppression edits, and the debounced/cached lint service."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import tomllib
from lsprotocol import types as lsp
from onnx import helper, numpy_helper

from onnxlint.diagnostics import Category, Diagnostic, Location, Severity
from onnxlint.index import ModelIndex
from onnxlint.lsp import features
from onnxlint.lsp.printer import render_graph_view
from onnxlint.lsp.service import LintService
from onnxlint.lsp.settings import Settings, parse_settings
from onnxlint.lsp.textmap import map_text_source
from onnxlint.lsp.workspace import analyse, graph_uri, path_to_uri, scan, uri_to_path
from tests.lsp.models import BAD, GOOD, NESTED, write_model

# -- settings -----------------------------------------------------------------------------

SETTINGS_CASES = [
    (None, Settings(), []),
    (
        {"showHints": True, "maxProblemsPerRule": 0},
        Settings(show_hints=True, max_problems_per_rule=0),
        [],
    ),
    ({"maxProblemsPerRule": -1}, Settings(), ["onnxlint.maxProblemsPerRule: expected an integer"]),
    ({"eps": ["QNN", "cpu"]}, Settings(eps=("qnn", "cpu")), []),
    (
        {"onnxlint": {"select": ["OL1"], "ignore": "OL105, OL103"}},
        Settings(select=("OL1",), ignore=("OL105", "OL103")),
        [],
    ),
    ({"confirm": True, "debounceMs": 0}, Settings(confirm=True, debounce_ms=0), []),
    (
        {"serverCommand": "/opt/py -m onnxlint lsp"},
        Settings(server_command=("/opt/py -m onnxlint lsp",)),
        [],
    ),
    ({"eps": 3}, Settings(), ["onnxlint.eps: expected a list of strings"]),
    (
        {"eps": ["qnn", "warp-drive"]},
        Settings(eps=("qnn",)),
        ["unknown execution provider(s) warp-drive ignored; checking for qnn"],
    ),
    # the Settings UI's empty list: what the configuration file says
    ({"select": [], "ignore": []}, Settings(), []),
    ({"confirm": "yes"}, Settings(), ["onnxlint.confirm: expected true or false"]),
    ({"debounceMs": -5}, Settings(), ["onnxlint.debounceMs: expected an integer"]),
    ({"colour": "blue"}, Settings(), ["onnxlint.colour: unknown setting"]),
    ([1, 2], Settings(), ["onnxlint: expected an object"]),
]


@pytest.mark.parametrize(("raw", "expected", "problems"), SETTINGS_CASES)
def test_parse_settings(raw: Any, expected: Settings, problems: list[str]) -> None:
    got = parse_settings(raw)
    assert got == expected
    assert len(got.problems) == len(problems)
    for want, have in zip(problems, got.problems, strict=True):
        assert want in have


def test_settings_override_the_configuration_file() -> None:
    from onnxlint.config import Config

    base = Config(select=("ALL",), ignore=("OL105",), eps=("cuda",), confirm={"mode": "run"})
    kept = Settings().apply(base)
    assert (kept.eps, kept.select, kept.ignore) == (base.eps, base.select, base.ignore)
    # real sessions only when the editor asks, whatever the file says
    assert kept.confirm == {"mode": "off"}
    applied = Settings(eps=("qnn",), ignore=("OL1",)).apply(base, confirm_mode="cache-only")
    assert (applied.eps, applied.select, applied.ignore) == (("qnn",), ("ALL",), ("OL1",))
    assert applied.confirm == {"mode": "cache-only"}


# -- graph view and text maps -------------------------------------------------------------


def _with_big_initializer() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((8, 8), np.float32), "big_w")
    b = numpy_helper.from_array(np.arange(3, dtype=np.int64), "small_b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "big_w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 8])],
        [w, b],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("text", [GOOD, BAD, NESTED], ids=["good", "bad", "nested"])
def test_graph_view_parses_back_to_the_same_graph(text: str) -> None:
    model = onnx.parser.parse_model(text)
    smap = render_graph_view(ModelIndex(model))
    again = onnx.parser.parse_model(smap.text)
    assert [n.op_type for n in again.graph.node] == [n.op_type for n in model.graph.node]
    assert [n.name for n in again.graph.node] == [n.name for n in model.graph.node]
    assert again.graph.input == model.graph.input


def test_graph_view_folds_initializer_blocks_and_nested_graphs(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    onnx.save(_with_big_initializer(), str(model))
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    smap = state.source
    assert smap is not None
    folds = features.folding_ranges(state)
    (block,) = [f for f in folds if f.kind == lsp.FoldingRangeKind.Imports]
    lines = smap.lines
    assert lines[block.start_line].strip() == "<" and lines[block.end_line].strip() == ">"
    between = lines[block.start_line + 1 : block.end_line]
    assert [ln.split(" = ")[0].split()[-1] for ln in between] == ["big_w", "small_b"]
    # the first node follows the folded block
    assert smap.nodes["main/mm"].line == block.end_line + 2
    nested = tmp_path / "nested.onnx"
    write_model(nested, NESTED)
    state = analyse(path_to_uri(nested), nested, nested.read_bytes(), Settings())
    assert state.source is not None
    if0 = state.source.nodes["main/if0"]
    assert any(f.start_line == if0.line and f.kind is None for f in features.folding_ranges(state))


def test_graph_view_elides_large_initializers_and_maps_every_node() -> None:
    index = ModelIndex(_with_big_initializer())
    smap = render_graph_view(index)
    lines = smap.lines
    assert any("float[8,8] big_w = {...}" in ln for ln in lines)
    assert any("int64[3] small_b = {0,1,2}" in ln for ln in lines)
    assert set(smap.nodes) == {n.path for n in index.nodes}
    assert "MatMul" in lines[smap.nodes["main/mm"].line]


@pytest.mark.parametrize("text", [BAD, NESTED], ids=["bad", "nested"])
def test_text_map_finds_nodes_in_the_users_text(text: str) -> None:
    index = ModelIndex(onnx.parser.parse_model(text))
    smap = map_text_source(text, index)
    lines = text.split("\n")
    assert set(smap.nodes) == {n.path for n in index.nodes}
    for ref in index.nodes:
        entry = smap.nodes[ref.path]
        assert lines[entry.line][entry.op_start : entry.op_end] == ref.op_type
        assert f"[{ref.name}]" in lines[entry.line]


def test_definition_follows_scopes_into_enclosing_graphs() -> None:
    index = ModelIndex(onnx.parser.parse_model(NESTED))
    smap = render_graph_view(index)
    # 'n' read inside else_branch is produced by neg0 in the main graph
    tok = next(t for t in smap.tokens if t.name == "n" and t.graph.endswith("else_branch"))
    target = smap.definition_of(tok.name, tok.graph)
    assert target is not None and target.node == "main/neg0"


# -- diagnostic ranges ----------------------------------------------------------------------


def _diag(code: str, loc: Location, message: str = "m") -> Diagnostic:
    return Diagnostic(code, "r", Category.STRUCTURE, Severity.WARNING, message, location=loc)


RANGE_CASES = [
    ("node", _diag("OL204", Location(node_name="mystery0", node_index=1, op_type="FancyOp")), 3),
    ("tensor", _diag("OL105", Location(tensor="r")), 2),
    ("graph input", _diag("OL301", Location(tensor="x")), 1),
    ("model", _diag("OL101", Location()), 1),
    ("parse error", _diag("OL006", Location(), "[ParseError at position (line: 4 column: 3)]"), 3),
]


@pytest.mark.parametrize(("what", "diag", "line"), RANGE_CASES, ids=[c[0] for c in RANGE_CASES])
def test_diagnostic_range_in_text(what: str, diag: Diagnostic, line: int) -> None:
    index = ModelIndex(onnx.parser.parse_model(BAD))
    smap = map_text_source(BAD, index)
    assert features.diagnostic_range(diag, smap, is_text=True).start.line == line


def test_binary_file_diagnostics_name_the_node() -> None:
    d = _diag(
        "OL204", Location(node_name="mystery0", node_index=1, op_type="FancyOp"), "no such op"
    )
    out = features.to_lsp(
        d, None, is_text=False, model_uri="file:///m.onnx", with_location_prefix=True
    )
    assert out.message == "main/mystery0 (FancyOp): no such op"
    assert out.range.start.line == 0 and out.data["node_path"] == "main/mystery0"


# -- suppression edits ---------------------------------------------------------------------

IGNORE_CASES = [
    ("empty file", "", "per-node-ignores", '[per-node-ignores]\n"main/a" = ["OL1"]\n'),
    (
        "table exists",
        'select = ["ALL"]\n\n[per-node-ignores]\n"main/b" = ["OL2"]\n',
        "per-node-ignores",
        'select = ["ALL"]\n\n[per-node-ignores]\n"main/a" = ["OL1"]\n"main/b" = ["OL2"]\n',
    ),
    (
        "key exists",
        '[per-node-ignores]\n"main/a" = ["OL2"]\n',
        "per-node-ignores",
        '[per-node-ignores]\n"main/a" = ["OL2", "OL1"]\n',
    ),
    (
        "pyproject",
        '[project]\nname = "x"\n\n[tool.onnxlint]\neps = ["qnn"]\n',
        "tool.onnxlint.per-node-ignores",
        '[project]\nname = "x"\n\n[tool.onnxlint]\neps = ["qnn"]\n\n'
        '[tool.onnxlint.per-node-ignores]\n"main/a" = ["OL1"]\n',
    ),
]


@pytest.mark.parametrize(
    ("what", "before", "table", "after"), IGNORE_CASES, ids=[c[0] for c in IGNORE_CASES]
)
def test_add_ignore(what: str, before: str, table: str, after: str) -> None:
    assert features.add_ignore(before, table, "main/a", "OL1") == after


def test_add_ignore_refuses_what_would_break_the_file() -> None:
    # an inline table already defines the key: adding a [table] would be invalid TOML
    text = 'per-node-ignores = { "main/b" = ["OL2"] }\n'
    assert features.add_ignore(text, "per-node-ignores", "main/a", "OL1") is None


def test_code_actions_offer_node_and_file_suppressions(tmp_path: Path) -> None:
    model = write_model(tmp_path / "bad.onnx", BAD)
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    diags = features.diagnostics_for(state, view="file")
    ol204 = [d for d in diags if d.code == "OL204"]
    cfg = tmp_path / "pyproject.toml"
    actions = features.code_actions(state, ol204, cfg, "[tool.onnxlint]\n", "bad.onnx")
    assert [a.title for a in actions] == [
        "Ignore OL204 for node main/mystery0 (pyproject.toml)",
        "Ignore OL204 in bad.onnx (pyproject.toml)",
    ]
    for action in actions:
        (edit,) = action.edit.changes[path_to_uri(cfg)]
        parsed = tomllib.loads(edit.new_text)["tool"]["onnxlint"]
        assert "OL204" in next(
            iter(next(v for k, v in parsed.items() if k.startswith("per-")).values())
        )


# -- workspace and URIs --------------------------------------------------------------------


def test_graph_uri_round_trips_and_scan_skips_hidden(tmp_path: Path) -> None:
    p = tmp_path / "a dir" / "m.onnx"
    assert uri_to_path(graph_uri(p)) == p
    assert uri_to_path(path_to_uri(p)) == p
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.onnx").write_bytes(b"")
    (tmp_path / "keep.onnxtxt").write_text(GOOD)
    (tmp_path / "notes.txt").write_text("")
    assert [f.name for f in scan([tmp_path])] == ["keep.onnxtxt"]


def test_analyse_never_raises_on_bad_input(tmp_path: Path) -> None:
    p = tmp_path / "junk.onnx"
    p.write_bytes(b"\x00\x01garbage")
    state = analyse(path_to_uri(p), p, p.read_bytes(), Settings())
    assert state.report.fatal and [d.code for d in state.report.diagnostics] == ["OL002"]
    t = tmp_path / "broken.onnxtxt"
    state = analyse(
        path_to_uri(t),
        t,
        b"<ir_version: 8>\ng (float x) => (float y) {\n y = Relu(x\n}",
        Settings(),
    )
    assert [d.code for d in state.report.diagnostics] == ["OL006"]
    (d,) = features.diagnostics_for(state, view="text")
    assert d.range.start.line == 3


# -- the lint service: debounce, stale runs, cache ------------------------------------------


def test_service_debounces_drops_stale_runs_and_caches(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    published: list[str] = []

    async def scenario() -> None:
        svc = LintService(
            lambda s: published.append(s.content_hash), lambda _u: None, Settings(debounce_ms=50)
        )
        # three quick changes: one run, one publish
        for _ in range(3):
            svc.schedule(uri, model)
        await svc.drain()
        assert svc.runs == 1 and len(published) == 1
        # unchanged content: answered from the cache
        svc.schedule(uri, model, delay=0)
        await svc.drain()
        assert svc.runs == 1 and len(published) == 2
        # a change while a run is in the worker: the older result is never published
        write_model(model, GOOD)
        first = svc.schedule(uri, model, delay=0)
        await asyncio.sleep(0)
        write_model(model, NESTED)
        svc.schedule(uri, model, delay=0)
        await svc.drain()
        await asyncio.gather(first, return_exceptions=True)
        assert published[-1] == svc.states[uri].content_hash
        assert svc.states[uri].index is not None
        assert [n.name for n in svc.states[uri].index.main.nodes] == ["neg0", "if0"]
        svc.shutdown()

    asyncio.run(scenario())


def test_hover_reports_predicted_ep_when_the_partition_analysis_fills_it(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    state.report.assignment = {
        "main/relu0": "QNNExecutionProvider",
        "main/mystery0": "CPUExecutionProvider",
    }
    smap = state.source
    assert smap is not None
    entry = smap.nodes["main/relu0"]
    hov = features.hover(state, lsp.Position(entry.line, entry.op_start))
    assert hov is not None and "predicted EP: **QNNExecutionProvider**" in hov.contents.value
    hints = features.inlay_hints(state, lsp.Range(lsp.Position(0, 0), lsp.Position(999, 0)))
    assert sorted(h.label for h in hints) == ["→ CPUExecutionProvider", "→ QNNExecutionProvider"]
    assert (
        "predicted: 1 on QNNExecutionProvider, 1 on CPUExecutionProvider"
        in features.code_lenses(state)[0].command.title
    )


def test_the_node_hover_says_each_fact_once(tmp_path: Path) -> None:
    from dataclasses import replace

    model = write_model(tmp_path / "m.onnx", BAD)
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings(eps=("qnn",)))
    node = [d for d in state.report.diagnostics if d.location.node_path == "main/mystery0"]
    assert node
    # another rule and another EP saying the same sentences about the same node
    state.report.diagnostics += [replace(d, code="OL999", ep="other") for d in node]
    text = features.node_hover_markdown(state, "main/mystery0")
    for d in node:
        assert text.count(d.message) == 1, d.message


def _chain(n: int) -> str:
    """``n`` Relus on a dynamic batch: QNN refuses each one for the same reason."""
    body = "\n".join(f"   [r{i}] t{i + 1} = Relu (t{i})" for i in range(n))
    return f"""<ir_version: 8, opset_import: ["" : 17]>
chain (float[N,4] t0) => (float[N,4] t{n}) {{
{body}
}}
"""


def test_a_cause_repeated_on_many_nodes_is_one_problem_at_the_cause(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", _chain(20))
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings(eps=("qnn",)))
    refusals = [d for d in state.report.diagnostics if d.code == "OL504"]
    assert len(refusals) == 20 and all(d.cause is not None for d in refusals)
    every = features.diagnostics_for(state, view="graph")
    assert len(every) == len(state.report.diagnostics) + 1  # the cause, then each finding
    (cause,) = [d for d in every if "root_cause" in d.data]
    # the graph input that declares N speaks for the cause, at the input
    assert cause.code == "OL301" and cause.severity == lsp.DiagnosticSeverity.Warning
    assert cause.data["tensor"] == "t0" and cause.data["root_cause"]["nodes"] == 20
    assert "dynamic dims N" in cause.message and "20 nodes" in cause.message
    assert cause.related_information is not None and len(cause.related_information) == 20
    lines = {r.location.range.start.line for r in cause.related_information}
    assert len(lines) == 20  # each related location is its own node's line in the view
    hinted = [d for d in every if d.code == "OL504" and d.severity == lsp.DiagnosticSeverity.Hint]
    assert len(hinted) == 20  # every node keeps its squiggle, off the Problems panel
    lenses = [lens.command.title for lens in features.code_lenses(state) if lens.command]
    assert "root cause (OL301) · costs 20 nodes on qnn-htp" in lenses
    (at,) = [lens for lens in features.code_lenses(state) if "root cause" in lens.command.title]
    assert at.range.start.line == cause.range.start.line


def test_findings_without_a_shared_cause_are_capped_per_rule(tmp_path: Path) -> None:
    from dataclasses import replace

    model = write_model(tmp_path / "m.onnx", _chain(20))
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings(eps=("qnn",)))
    state.report.diagnostics[:] = [replace(d, cause=None) for d in state.report.diagnostics]
    refusals = [d for d in state.report.diagnostics if d.code == "OL504"]
    hygiene = replace(refusals[0], code="OL999", severity=Severity.INFO)
    hygiene = replace(hygiene, category=Category.EXPORT_HYGIENE)
    state.report.diagnostics.append(hygiene)
    every = features.diagnostics_for(state, view="graph")
    assert len(every) == len(state.report.diagnostics)  # nothing dropped, nothing demoted
    assert all(d.severity != lsp.DiagnosticSeverity.Hint for d in every)
    shown = features.diagnostics_for(state, view="graph", show_hints=False, per_rule=5)
    assert len(shown) == len(every)  # every node keeps its squiggle
    listed = [d for d in shown if d.code == "OL504" and d.severity != lsp.DiagnosticSeverity.Hint]
    assert len(listed) == 5
    assert "(+15 more like this on other nodes, shown as hints)" in listed[-1].message
    (quiet,) = [d for d in shown if d.code == "OL999"]
    assert quiet.severity == lsp.DiagnosticSeverity.Hint
    back = features.diagnostics_for(state, view="graph", show_hints=True, per_rule=5)
    assert next(d for d in back if d.code == "OL999").severity == lsp.DiagnosticSeverity.Information


FALLBACK = """<ir_version: 8, opset_import: ["" : 17]>
fallback (float[1,4] x) => (int64[2,?] idx) {
   [relu0] r = Relu (x)
   [nonzero0] idx = NonZero (r)
}
"""


def test_partitions_from_the_partition_analysis_in_hover_and_lenses(tmp_path: Path) -> None:
    (tmp_path / "onnxlint.toml").write_text('eps = ["qnn"]\n')
    model = write_model(tmp_path / "m.onnx", FALLBACK)
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings())
    if not state.report.partitions:
        pytest.skip("the partition analysis filled no partitions for QNN")
    parts = features.predicted_partitions(state)
    on_cpu = [p for p in parts if "main/nonzero0" in p[2]]
    assert on_cpu and on_cpu[0][1] == "CPUExecutionProvider"
    smap = state.source
    assert smap is not None
    entry = smap.nodes["main/nonzero0"]
    hov = features.hover(state, lsp.Position(entry.line, entry.op_start))
    assert hov is not None
    assert (
        f"predicted partition #{on_cpu[0][0]} on CPUExecutionProvider (1 node)"
        in hov.contents.value
    )
    titles = {lens.range.start.line: lens.command.title for lens in features.code_lenses(state)}
    assert titles[entry.line].startswith(f"partition #{on_cpu[0][0]} · CPUExecutionProvider")


def test_confirm_runs_after_the_static_results_and_replaces_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With onnxlint.confirm: static (cached confirmations only) first, then real sessions."""
    import onnxlint.lsp.service as service_mod

    model = write_model(tmp_path / "m.onnx", BAD)
    uri = path_to_uri(model)
    modes: list[str] = []
    real_analyse = service_mod.analyse

    def spy(*args: Any, confirm_mode: str = "off", **kw: Any) -> Any:
        modes.append(confirm_mode)
        return real_analyse(*args, confirm_mode=confirm_mode, **kw)

    monkeypatch.setattr(service_mod, "analyse", spy)
    published: list[int] = []

    async def scenario(settings: Settings) -> LintService:
        svc = LintService(lambda s: published.append(id(s)), lambda _u: None, settings)
        svc.schedule(uri, model, delay=0)
        await svc.drain()
        svc.shutdown()
        return svc

    asyncio.run(scenario(Settings(confirm=False)))
    assert modes == ["off"] and len(published) == 1
    modes.clear()
    published.clear()
    svc = asyncio.run(scenario(Settings(confirm=True)))
    assert modes == ["cache-only", "run"]
    assert len(published) == 2 and published[-1] == id(svc.states[uri])


def test_linting_never_blocks_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow analysis runs in the worker: the loop keeps answering meanwhile."""
    import time

    import onnxlint.lsp.service as service_mod

    model = write_model(tmp_path / "m.onnx", GOOD)
    real_analyse = service_mod.analyse

    def slow(*args: Any, **kw: Any) -> Any:
        time.sleep(0.6)  # a big model
        return real_analyse(*args, **kw)

    monkeypatch.setattr(service_mod, "analyse", slow)

    async def scenario() -> list[float]:
        svc = LintService(lambda s: None, lambda _u: None, Settings(debounce_ms=0))
        task = svc.schedule(path_to_uri(model), model)
        gaps = []
        while not task.done():
            t0 = time.monotonic()
            await asyncio.sleep(0.01)
            gaps.append(time.monotonic() - t0)
        svc.shutdown()
        return gaps

    gaps = asyncio.run(scenario())
    assert len(gaps) > 10  # the loop kept turning while the analysis slept in the worker
    assert max(gaps) < 0.5


def test_the_server_runs_no_what_if_lint(tmp_path: Path) -> None:
    """A what-if is a second lint of the pinned model: the CLI pays it once, the server
    would pay it on every edit. The cause the server shows names the remedy instead."""
    import onnxlint

    model = write_model(tmp_path / "m.onnx", _chain(20))
    assert onnxlint.lint(model, eps=["qnn"], config={}).what_ifs  # the CLI/API's lint has one
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings(eps=("qnn",)))
    assert state.report.what_ifs == []
    (cause,) = [d for d in features.diagnostics_for(state, view="graph") if "root_cause" in d.data]
    assert cause.data["fix"] is not None and "fix-shapes" in cause.data["fix"]["command"]
