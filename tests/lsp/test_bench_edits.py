"""The language-server benchmark's edited ``.onnxtxt`` buffers (``python -m benchmarks
--only lsp``): each round's document parses, differs from the others in one line (so
the server's cache cannot answer), the results table says the debounce is in, and the
drivers start the server in their own workspace folder."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import onnx
import pytest

from benchmarks.__main__ import markdown, printed_edits
from onnxlint.limits import Limits
from onnxlint.loader import load_text
from tests.lsp.models import NESTED


def test_each_round_renames_one_node_of_a_document_that_parses() -> None:
    text = onnx.printer.to_text(load_text(NESTED.encode(), Limits()).model)  # type: ignore[arg-type]
    edits = printed_edits(text, 3)
    assert len(set(edits)) == 3 and text not in edits
    for edited in edits:
        assert not load_text(edited.encode(), Limits()).fatal
        changed = [a for a, b in zip(text.split("\n"), edited.split("\n"), strict=True) if a != b]
        assert len(changed) == 1 and "edited_" in edited


def test_the_results_table_says_the_debounce_is_included() -> None:
    text_result = {
        "debounce": "server default (adaptive)",
        "change_to_diagnostics": {"median_s": 0.5, "min_s": 0.4, "max_s": 0.6, "runs": []},
    }
    data = {
        "mode": "quick",
        "started": "",
        "finished": "",
        "duration_s": 0,
        "machine": {
            "cpu": "cpu",
            "cores": 2,
            "memory_gib": 1.0,
            "os": "os",
            "python": "3",
            "load_average": [0, 0, 0],
        },
        "load_average_end": [0, 0, 0],
        "versions": {},
        "corpus": {},
        "targets": [],
        "ratios": [],
        "scaling": [],
        "measurements": [],
        "lsp": {"model": "synth_10k", "rounds": 3, "text": {"synth_1k": text_result}},
    }
    md = markdown(data)
    row = next(line for line in md.split("\n") if "synth_1k" in line and "onnxtxt" in line)
    assert "server default (adaptive), included" in row and "| 500 ms | 400 ms | 600 ms |" in row


def test_the_results_table_lists_the_graph_edit_beside_the_metadata_rewrite() -> None:
    """The binary model's rewrites change metadata only (the server carries those over):
    the node-rename rounds, a full re-lint, are listed and held to the budget as well."""
    from benchmarks.__main__ import targets

    timing = {"median_s": 0.02, "min_s": 0.01, "max_s": 0.03, "runs": []}
    lsp_res = {
        "model": "synth_10k",
        "rounds": 3,
        "first_diagnostics_s": 1.0,
        "change_to_diagnostics": timing,
        "graph_edit_to_diagnostics": {**timing, "median_s": 1.5},
        "graph_view_warm": timing,
        "graph_view_after_change": timing,
    }
    rows = {row["target"]: row for row in targets([], lsp_res, {})}
    assert rows["LSP 10k nodes: change -> diagnostics (metadata-only rewrite)"]["met"]
    assert not rows["LSP 10k nodes: change -> diagnostics (a node renamed)"]["met"]


SOFTMAX = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,3,4] x) => (float[1,2,3,4] y) {
    [t] t = Relu(x)
    [s] y = Softmax <axis: int = -1> (t)
}
"""


def test_each_attribute_round_changes_the_softmax_axis_and_parses() -> None:
    text = onnx.printer.to_text(load_text(SOFTMAX.encode(), Limits()).model)  # type: ignore[arg-type]
    edits = printed_edits(text, 5, "attribute changed")
    assert len(set(edits)) == 5 and text not in edits
    for edited in edits:
        loaded = load_text(edited.encode(), Limits())
        assert not loaded.fatal and loaded.model is not None
        (axis,) = loaded.model.graph.node[1].attribute
        assert axis.name == "axis" and axis.i != -1
        assert [n.name for n in loaded.model.graph.node] == ["t", "s"]  # nothing else changed


def test_the_text_rounds_are_held_to_issue_19s_budget() -> None:
    from benchmarks.__main__ import targets

    def timing(s: float) -> dict[str, object]:
        return {"median_s": s, "min_s": s, "max_s": s, "runs": []}

    lsp_res = {
        "text": {
            "synth_1k": {"edit": "node renamed", "change_to_diagnostics": timing(0.04)},
            "synth_1k, attribute changed": {
                "edit": "attribute changed",
                "change_to_diagnostics": timing(0.06),
            },
            "synth_10k": {"edit": "node renamed", "change_to_diagnostics": timing(0.2)},
        }
    }
    rows = {row["target"]: row for row in targets([], lsp_res, {})}
    assert rows["LSP synth_1k .onnxtxt: edit -> diagnostics (node renamed)"]["met"]
    assert not rows["LSP synth_1k .onnxtxt: edit -> diagnostics (attribute changed)"]["met"]
    assert not rows["LSP synth_10k .onnxtxt: edit -> diagnostics (node renamed)"]["met"]
    assert (
        rows["LSP synth_10k .onnxtxt: edit -> diagnostics (node renamed)"]["budget"] == "<= 150 ms"
    )


class _Started(Exception):
    """Raised by the stand-in ``start_io`` once it has recorded how it was called."""


def test_the_drivers_start_the_server_in_their_workspace_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m onnxlint`` puts the working folder first on ``sys.path``: started in a
    checkout, the server would import that checkout whatever ``PYTHONPATH`` says, and a
    before/after pair would run one code twice."""
    from pygls.lsp.client import LanguageClient

    import benchmarks.__main__ as bench
    from tests.lsp.models import write_model

    model = write_model(tmp_path / "m.onnx", NESTED)
    calls: list[dict[str, Any]] = []

    async def start_io(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(kwargs)
        raise _Started

    monkeypatch.setattr(LanguageClient, "start_io", start_io)
    monkeypatch.chdir(Path(bench.__file__).resolve().parent.parent)  # the checkout
    for driver in (
        bench._lsp_latency(model, 1),
        bench.lsp_text_latency(model, 1, env={"PYTHONPATH": str(tmp_path)}),
    ):
        with pytest.raises(_Started):
            asyncio.run(driver)
    assert len(calls) == 2
    for kwargs in calls:
        cwd = Path(kwargs["cwd"])
        assert cwd.name.startswith("onnxlint-bench-lsp") and cwd != Path.cwd()
        shutil.rmtree(cwd, ignore_errors=True)  # the driver stopped before its own clean-up
    assert calls[1]["env"] == {"PYTHONPATH": str(tmp_path)}
