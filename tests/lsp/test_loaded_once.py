"""A text document is read once per re-lint (issue 19): the language server hands the
engine the model its loader parsed, and the engine lints it as it is, without reading,
checking and hashing the ModelProto again, with the same findings and the same level-1
cache inputs as a lint that reads the model itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onnxlint import engine
from onnxlint.limits import Limits
from onnxlint.loader import LoadedModel, load, load_text
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import analyse, path_to_uri
from onnxlint.modelfile import read as modelfile_read
from tests.lsp.models import BAD, OPSET, write_model

# a weight whose data lies in a file that is not there: a load finding on a model that loads
MISSING_DATA = f"""{OPSET}
missing (float[2] x) => (float[2] y)
<float[2] w = ["location": "absent.bin", "offset": "0", "length": "8"]>
{{
   [add0] y = Add (x, w)
}}
"""


def _rows(report: Any) -> list[tuple[Any, ...]]:
    return [(d.code, d.location, d.ep, d.message, d.severity) for d in report.diagnostics]


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of a model, whatever it was given, ends in ``_post_checks``: count them."""
    calls: list[int] = []
    original = modelfile_read._post_checks

    def counted(result: LoadedModel, limits: Limits) -> LoadedModel:
        calls.append(1)
        return original(result, limits)

    monkeypatch.setattr(modelfile_read, "_post_checks", counted)
    return calls


@pytest.mark.parametrize("text", [BAD, MISSING_DATA], ids=["unknown-op", "missing-data"])
def test_a_text_document_is_read_once_per_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    doc = tmp_path / "m.onnxtxt"
    reads = _count_reads(monkeypatch)
    state = analyse(path_to_uri(doc), doc, text.encode(), Settings())
    assert len(reads) == 1
    assert state.index is not None and state.source is not None
    # what a lint that reads the document itself finds
    fresh = engine.lint(text.encode(), path_label=str(doc), what_if=False, partition_summary=True)
    assert _rows(state.report) == _rows(fresh)
    assert state.report.diagnostics  # the models have findings: the comparison says something


def test_the_load_findings_of_a_loaded_model_are_reported(tmp_path: Path) -> None:
    loaded = load_text(MISSING_DATA.encode(), Limits())
    assert loaded.diagnostics and not loaded.fatal
    report = engine.lint(loaded)
    load_codes = {d.code for d in loaded.diagnostics}
    assert load_codes <= {d.code for d in report.diagnostics}
    assert _rows(report) == _rows(engine.lint(MISSING_DATA.encode()))


def test_a_fatal_loaded_model_is_reported_as_fatal() -> None:
    loaded = load_text(b"<ir_version: 8>\nbroken (", Limits())
    assert loaded.fatal
    report = engine.lint(loaded)
    assert report.fatal
    assert [d.code for d in report.diagnostics] == [d.code for d in loaded.diagnostics]


def _level1_inputs(monkeypatch: pytest.MonkeyPatch) -> list[LoadedModel]:
    """What the engine hands the level-1 job (its cache key and file hint come from it)."""
    seen: list[LoadedModel] = []

    def start(loaded: LoadedModel, config: Any, profiles: Any) -> None:
        seen.append(loaded)
        return None

    monkeypatch.setattr(engine, "_start_level1", start)
    return seen


def test_a_loaded_binary_model_keeps_its_level1_cache_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_model(tmp_path / "m.onnx", BAD)
    seen = _level1_inputs(monkeypatch)
    by_path = engine.lint(model, eps=["qnn"], what_if=False)
    loaded = load(model)
    by_loaded = engine.lint(loaded, eps=["qnn"], what_if=False)
    assert len(seen) == 2 and seen[1] is loaded
    fields = ("content_hash", "real_path", "size", "is_text", "path")
    assert [getattr(seen[0], f) for f in fields] == [getattr(seen[1], f) for f in fields]
    assert seen[1].real_path is not None  # the worker may read the file itself
    assert by_path.content_hash == by_loaded.content_hash == loaded.content_hash
    assert _rows(by_path) == _rows(by_loaded)


def test_a_loaded_text_document_gives_the_level1_job_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.analyses import level1

    seen = _level1_inputs(monkeypatch)
    loaded = load_text(BAD.encode(), Limits())
    engine.lint(loaded, eps=["qnn"], what_if=False)
    assert seen == [loaded]
    # a text document's level-1 graph is keyed by its model's content, never by a file
    assert level1.model_file(loaded, loaded.model) is None  # type: ignore[arg-type]
    assert loaded.path is None  # so no file hint either (``level1.prefetch``)
