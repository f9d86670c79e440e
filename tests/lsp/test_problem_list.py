"""What the Problems panel lists for a model: the same entries whether its graph view is
open or not, never more than a client keeps, and under the file's own name when the file
does not load as a model (issue #18)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from onnxlint.lsp import diagnostics
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, analyse, graph_uri, path_to_uri
from tests.lsp.models import write_model
from tests.lsp.test_features import _chain

HINT = lsp.DiagnosticSeverity.Hint


def _state(path: Path) -> ModelState:
    state = analyse(path_to_uri(path), path, path.read_bytes(), Settings(eps=("qnn",)))
    state.render_view()
    return state


def _entry(d: lsp.Diagnostic) -> tuple[object, ...]:
    return (d.message, d.code, d.severity, d.range.start.line, d.range.start.character)


def test_a_binary_model_reads_the_same_with_its_view_open_or_not(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m.onnx", _chain(6))
    state = _state(model)
    view = graph_uri(model)
    on_file = diagnostics.diagnostics_for(state, view="file", view_uri=view)
    on_view = diagnostics.diagnostics_for(state, view="graph")
    # the client lists both under the view: a change of text or place when the view opens
    # or closes re-renders the panel (its selection goes) and reads as another problem
    assert [_entry(d) for d in on_file] == [_entry(d) for d in on_view]
    assert any(d.message.startswith("[qnn-htp] main/r0 (Relu): ") for d in on_view)
    for f, g in zip(on_file, on_view, strict=True):
        # the file's copy opens the view at the finding (its first related location);
        # every other related location is a node in the view, on both
        rest = [r for r in f.related_information or [] if r.location.range != f.range]
        assert [(r.location.uri, r.location.range) for r in rest] == [
            (r.location.uri, r.location.range) for r in g.related_information or []
        ]
        assert all(r.location.uri == view for r in g.related_information or [])
    (cause,) = [d for d in on_view if d.data and "root_cause" in d.data]
    assert cause.related_information and len(cause.related_information) == 6


def test_no_more_diagnostics_than_a_client_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_model(tmp_path / "m.onnx", _chain(12))
    state = _state(model)
    every = diagnostics.diagnostics_for(state, view="graph")
    listed = [d for d in every if d.severity != HINT]
    hints = [d for d in every if d.severity == HINT]
    assert len(hints) >= 12 and listed
    # VS Code keeps 1,000 per document and adds an entry of its own for the rest
    monkeypatch.setattr(diagnostics, "PUBLISH_MAX", len(listed) + 3)
    capped = diagnostics.diagnostics_for(state, view="graph")
    assert len(capped) == len(listed) + 3
    assert [_entry(d) for d in capped if d.severity != HINT] == [_entry(d) for d in listed]
    assert [_entry(d) for d in capped if d.severity == HINT] == [_entry(d) for d in hints[:3]]
    # problems are never left out, whatever the cap
    monkeypatch.setattr(diagnostics, "PUBLISH_MAX", 1)
    assert [_entry(d) for d in diagnostics.diagnostics_for(state, view="graph")] == [
        _entry(d) for d in listed
    ]


def test_the_client_is_told_whether_a_model_has_a_view(tmp_path: Path) -> None:
    good = write_model(tmp_path / "good.onnx", _chain(1))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07\x12\x04this is not a model" * 4)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    ok = diagnostics.diagnostics_for(_state(good), view="file")
    assert ok and {(d.data or {}).get("has_view") for d in ok} == {True}
    for path in (bad, empty):
        state = analyse(path_to_uri(path), path, None, Settings(eps=("qnn",)))
        diags = diagnostics.diagnostics_for(state, view="file", view_uri=graph_uri(path))
        assert diags and all((d.data or {}).get("has_view") is False for d in diags), path.name


def test_only_the_findings_that_are_published_are_converted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a 10k-node model most of ~9,000 findings are hints past the cap: they are left
    out before they are converted, and what goes out is what converting them all and
    capping afterwards gave."""
    model = write_model(tmp_path / "m.onnx", _chain(40))
    state = _state(model)
    every = diagnostics.diagnostics_for(state, view="graph")
    listed = sum(1 for d in every if d.severity != HINT)
    assert len(every) - listed >= 40
    calls: list[int] = []
    real = diagnostics.to_lsp

    def counted(*args: object, **kw: object) -> lsp.Diagnostic:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(diagnostics, "to_lsp", counted)
    for cap in (listed + 5, listed, 1):
        monkeypatch.setattr(diagnostics, "PUBLISH_MAX", cap)
        calls.clear()
        capped = diagnostics.diagnostics_for(state, view="graph")
        assert [_entry(d) for d in capped] == [
            _entry(d) for d in diagnostics.within_cap(every, cap)
        ]
        assert len(calls) == len(capped)  # nothing converted only to be dropped
