"""What one re-lint in the language server runs (issue 19): the root causes are grouped
once per result, whatever publishes or shows them, and ORT's level-1 worker is started
once for a series of edits, not once per edit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from onnxlint import causes
from onnxlint.analyses.level1 import inert_reason
from onnxlint.lsp import features
from onnxlint.lsp.diagnostics import diagnostics_for
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import analyse, graph_uri, path_to_uri
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
