"""What one re-lint in the language server runs (issue 19): the root causes are grouped
once per result, whatever publishes or shows them; ORT's level-1 worker is started once
for a series of edits, not once per edit; and with the verdicts kept across lints a
one-node edit evaluates that node only, while every edit publishes what a from-scratch
lint of the new text publishes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnxlint import causes
from onnxlint.analyses.level1 import inert_reason
from onnxlint.lsp import features
from onnxlint.lsp.diagnostics import diagnostics_for
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, analyse, graph_uri, path_to_uri
from onnxlint.runtime import processes
from tests.lsp.models import write_model


def _chain(n: int, op: str = "Relu") -> str:
    """``n`` nodes on a dynamic batch (QNN refuses each one for the same reason), then an
    Identity, which ORT's level-1 optimizers remove: only ORT's worker knows that graph."""
    body = "\n".join(f"   [r{i}] t{i + 1} = {op} (t{i})" for i in range(n))
    return f"""<ir_version: 8, opset_import: ["" : 17]>
chain (float[N,4] t0) => (float[N,4] y) {{
{body}
   [last] y = Identity (t{n})
}}
"""


def test_the_causes_of_one_result_are_grouped_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_model(tmp_path / "m.onnx", _chain(12))
    state = analyse(path_to_uri(model), model, model.read_bytes(), Settings(eps=("qnn",)))
    calls: list[int] = []
    original = causes.group

    def counted(report: object) -> list[causes.CauseGroup]:
        calls.append(1)
        return original(report)  # type: ignore[arg-type]

    monkeypatch.setattr(causes, "group", counted)
    # what a change publishes for a binary model: the file's diagnostics, the graph
    # view's, and its code lenses
    file_diags = diagnostics_for(state, view="file", view_uri=graph_uri(model))
    state.render_view()
    graph_diags = diagnostics_for(state, view="graph")
    lenses = features.code_lenses(state)
    assert len(calls) == 1
    roots = [d for d in graph_diags if isinstance(d.data, dict) and "root_cause" in d.data]
    assert roots and len(roots) == len([d for d in file_diags if "root_cause" in d.data])
    assert any("root cause" in lens.command.title for lens in lenses if lens.command)
    # the grouping is the report's: the same groups as a fresh grouping of it
    fresh = original(state.report)
    assert [(g.code, len(g.nodes)) for g in state.cause_groups()] == [
        (g.code, len(g.nodes)) for g in fresh
    ]


@pytest.fixture
def reuse() -> Iterator[None]:
    processes.set_reuse(True)
    yield
    processes.set_reuse(False)


def test_edits_of_a_model_share_one_warm_level1_worker(
    tmp_path: Path, reuse: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")  # every edit needs ORT's level-1 graph
    model = tmp_path / "m.onnx"
    settings = Settings(eps=("qnn",))
    uri = path_to_uri(model)
    write_model(model, _chain(3))
    analyse(uri, model, model.read_bytes(), settings)  # ORT's limits are known from here on
    before = processes.STARTED
    for k, op in enumerate(["Sigmoid", "Tanh", "Abs"]):
        write_model(model, _chain(4 + k, op))
        state = analyse(uri, model, model.read_bytes(), settings)
        assert [p.level for p in state.report.partitions] == ["exported", "optimized"]
        # ORT's level-1 graph may differ from the model: only its worker can say how
        assert state.index is not None and inert_reason(state.index.model) is not None
    assert processes.STARTED - before <= 1  # one worker (or the first's, kept), not three
    assert processes._SPARE is not None  # and it waits for the next edit


# -- verdicts kept across the lints of a document -------------------------------------------

BRANCHES = 60


def _branches(
    ops: dict[int, str] | None = None,
    width: int = 4,
    names: dict[int, str] | None = None,
    extra: bool = False,
    drop: int | None = None,
) -> str:
    """``BRANCHES`` independent nodes, each with an attribute value of its own (so each has
    facts of its own), as an ONNX text document; the arguments are the edits."""
    ops, names = ops or {}, names or {}
    ins, outs, body = [], [], []
    for i in range(BRANCHES):
        if i == drop:
            continue
        rows = "N" if i % 3 == 0 else i + 1  # a dynamic dim: QNN refuses, with a cause
        ins.append(f"float[{rows},{width}] x{i}")
        outs.append(f"float[{rows},{width}] y{i}")
        op = ops.get(i, f"LeakyRelu <alpha = {0.01 * (i + 1):.2f}>")
        body.append(f"   [{names.get(i, f'n{i}')}] y{i} = {op} (x{i})")
    if extra:
        ins.append(f"float[1,{width}] xe")
        outs.append(f"float[1,{width}] ye")
        body.append("   [added] ye = Sigmoid (xe)")
    return (
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        f"branches ({', '.join(ins)}) => ({', '.join(outs)}) {{\n" + "\n".join(body) + "\n}\n"
    )


@pytest.fixture
def kept_verdicts() -> Iterator[None]:
    from onnxlint.analyses import assignment

    assignment.keep_verdicts(True)
    yield
    assignment.keep_verdicts(False)


def _lint(path: Path, text: str, settings: Settings) -> ModelState:
    return analyse(path_to_uri(path), path, text.encode(), settings)


def test_a_one_node_edit_re_evaluates_that_node_only(
    tmp_path: Path, kept_verdicts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.analyses import assignment

    calls: list[str] = []
    original = assignment.evaluate

    def counted(profile: Any, facts: Any) -> Any:
        calls.append(facts.op_type)
        return original(profile, facts)

    monkeypatch.setattr(assignment, "evaluate", counted)
    doc = tmp_path / "m.onnxtxt"
    settings = Settings(eps=("qnn",))
    _lint(doc, _branches(), settings)
    first = len(calls)
    assert first >= BRANCHES  # every node has facts of its own: each was evaluated
    calls.clear()
    state = _lint(doc, _branches(ops={7: "Sigmoid"}), settings)
    # the edited node, once per profile (QNN and the CPU it falls back to), and nothing else
    assert calls == ["Sigmoid", "Sigmoid"]
    assert not state.report.fatal


EDITS = [
    ("the document", {}),
    ("an op changed", {"ops": {3: "Sigmoid"}}),
    ("a shape changed upstream of every node", {"width": 8}),
    ("a node renamed", {"width": 8, "names": {5: "renamed"}}),
    ("a node added", {"width": 8, "extra": True}),
    ("a node removed", {"width": 8, "drop": 10}),
    ("the parse broken", None),
    ("the parse repaired", {"ops": {3: "Sigmoid"}}),
]


def test_an_edit_sequence_publishes_what_a_fresh_lint_publishes(
    tmp_path: Path, kept_verdicts: None
) -> None:
    from onnxlint.analyses import assignment

    settings = Settings(eps=("qnn",))
    doc = tmp_path / "m.onnxtxt"
    for what, edit in EDITS:
        text = _branches(**edit) if edit is not None else _branches()[:-60] + " = Relu ("
        kept = _lint(doc, text, settings)
        assignment.keep_verdicts(False)  # a from-scratch lint of the same text
        fresh = _lint(doc, text, settings)
        assignment.keep_verdicts(True)
        assert kept.report.fatal == fresh.report.fatal == (edit is None), what
        got = diagnostics_for(kept, view="text")
        want = diagnostics_for(fresh, view="text")
        assert [(d.range, d.message, d.code, d.severity) for d in got] == [
            (d.range, d.message, d.code, d.severity) for d in want
        ], what
        assert kept.report.to_dict() == fresh.report.to_dict(), what
        assert edit is None or any(d.code == "OL504" for d in kept.report.diagnostics), what
