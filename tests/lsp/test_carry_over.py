"""A binary model saved again with only its metadata changed (issue 19): the language
server carries the previous result over instead of linting again, and what it publishes
is what a fresh lint of the new bytes gives; any other change is linted afresh."""

from __future__ import annotations

import asyncio
from pathlib import Path

import onnx
import pytest

from onnxlint.lsp.carryover import Layout
from onnxlint.lsp.diagnostics import diagnostics_for
from onnxlint.lsp.service import LintService
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, analyse, build_view, graph_uri, path_to_uri
from onnxlint.modelfile.prescan import top_level_fields
from onnxlint.rule import all_rules
from tests.lsp.models import write_model

MODEL = """<ir_version: 8, opset_import: ["" : 17], producer_name: "torch", producer_version: "2.1">
g (float[N,4] x) => (float[N,4] y) {
   [a] t = Relu (x)
   [b] u = Reshape (t, t)
   [c] y = Identity (u)
}
"""

#: each kind of metadata-only edit: the new values of the five fields
EDITS = [
    {"producer_version": "2.2"},
    {"producer_name": "tf2onnx", "domain": "ai.example"},
    {"doc_string": "re-exported\nwith a note", "model_version": 7},
    {"producer_name": "", "producer_version": ""},
]


def _rewrite(path: Path, **fields: object) -> bytes:
    model = onnx.load(str(path))
    for name, value in fields.items():
        setattr(model, name, value)
    data = model.SerializeToString()
    path.write_bytes(data)
    return data


def _fresh(path: Path, settings: Settings) -> ModelState:
    return analyse(path_to_uri(path), path, path.read_bytes(), settings)


def _same_result(got: ModelState, fresh: ModelState) -> None:
    assert got.content_hash == fresh.content_hash
    assert got.report.to_dict() == fresh.report.to_dict()
    assert got.report.diagnostics == fresh.report.diagnostics
    assert got.report.fatal == fresh.report.fatal
    assert got.confirmed == fresh.confirmed
    for view in ("file", "graph"):
        assert diagnostics_for(got, view=view, view_uri=graph_uri(got.path)) == diagnostics_for(
            fresh, view=view, view_uri=graph_uri(fresh.path)
        )
    if fresh.index is not None:
        assert got.index is not None
        # the same model, but for the metadata, which travels beside it
        assert _model_with_metadata(got) == _model_with_metadata(fresh)
        assert got.render_view() is not None and fresh.render_view() is not None
        assert got.source.text == fresh.source.text  # the header shows the new metadata
        assert dict(got.value_types) == dict(fresh.value_types)


def _model_with_metadata(state: ModelState) -> bytes:
    """The model a state's editor features describe: its index's, with the metadata the
    state carries (a carried-over result's) in place of the model's own."""
    assert state.index is not None
    model = onnx.ModelProto()
    model.CopyFrom(state.index.model)
    if state.metadata is not None:
        for name in METADATA:
            if state.metadata.HasField(name):
                setattr(model, name, getattr(state.metadata, name))
            else:
                model.ClearField(name)
    return model.SerializeToString(deterministic=True)


METADATA = ("producer_name", "producer_version", "domain", "model_version", "doc_string")


@pytest.mark.parametrize("edit", EDITS, ids=lambda e: ",".join(e))
def test_a_metadata_only_change_carries_the_result_over(tmp_path: Path, edit: dict) -> None:
    path = write_model(tmp_path / "m.onnx", MODEL)
    settings = Settings()
    first = _fresh(path, settings)
    assert first.layout is not None and not first.carried_over
    old_bytes = path.read_bytes()
    data = _rewrite(path, **edit)
    got = analyse(path_to_uri(path), path, data, settings, prior=first)
    assert got.carried_over
    _same_result(got, _fresh(path, settings))
    # the previous result still describes the previous bytes: model, view and findings
    assert first.index is not None and first.index.model.SerializeToString() == old_bytes
    path.write_bytes(old_bytes)
    _same_result(first, _fresh(path, settings))
    # and the next metadata-only change carries over from the carried result
    again = analyse(
        path_to_uri(path), path, _rewrite(path, producer_version="9"), settings, prior=got
    )
    assert again.carried_over
    _same_result(again, _fresh(path, settings))


def _graph_edit(model: onnx.ModelProto) -> None:
    model.graph.node[0].name = "renamed"


def _attribute_edit(model: onnx.ModelProto) -> None:
    model.graph.node[1].attribute.add().CopyFrom(onnx.helper.make_attribute("allowzero", 1))


def _opset_edit(model: onnx.ModelProto) -> None:
    model.opset_import[0].version = 13


def _metadata_props_edit(model: onnx.ModelProto) -> None:
    onnx.helper.set_model_props(model, {"onnxlint:ignore": "OL"})


def _ir_edit(model: onnx.ModelProto) -> None:
    model.ir_version = 7


@pytest.mark.parametrize(
    "change", [_graph_edit, _attribute_edit, _opset_edit, _metadata_props_edit, _ir_edit]
)
def test_any_other_change_is_linted_afresh(tmp_path: Path, change: object) -> None:
    path = write_model(tmp_path / "m.onnx", MODEL)
    settings = Settings()
    first = _fresh(path, settings)
    model = onnx.load(str(path))
    model.producer_version = "2.2"  # a metadata change beside it changes nothing
    change(model)  # type: ignore[operator]
    data = model.SerializeToString()
    path.write_bytes(data)
    got = analyse(path_to_uri(path), path, data, settings, prior=first)
    assert not got.carried_over
    _same_result(got, _fresh(path, settings))


def test_metadata_the_loader_refuses_is_linted_afresh(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.onnx", MODEL)
    settings = Settings()
    first = _fresh(path, settings)
    fields = top_level_fields(path.read_bytes())
    assert fields is not None
    data = path.read_bytes()
    # producer_name (field 2) holding bytes that are not UTF-8: the loader refuses the file
    bad = b"\x12\x02\xff\xfe"
    cut = next((s, e) for n, _, s, e in fields if n == 2)
    data = data[: cut[0]] + bad + data[cut[1] :]
    path.write_bytes(data)
    assert Layout.of(data) is not None and Layout.of(data).rest == first.layout.rest  # type: ignore[union-attr]
    got = analyse(path_to_uri(path), path, data, settings, prior=first)
    assert not got.carried_over and got.report.fatal
    _same_result(got, _fresh(path, settings))


def test_no_carry_over_when_ort_sees_the_bytes_or_settings_differ(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.onnx", MODEL)
    # an accelerator EP: partition predictions come from ORT's level-1 graph of the bytes
    qnn = Settings(eps=("qnn",))
    first = _fresh(path, qnn)
    data = _rewrite(path, producer_version="2.2")
    got = analyse(path_to_uri(path), path, data, qnn, prior=first)
    assert not got.carried_over
    # other settings than the prior result's
    plain = _fresh(path, Settings())
    data = _rewrite(path, producer_version="2.3")
    got = analyse(path_to_uri(path), path, data, Settings(select=("OL1",)), prior=plain)
    assert not got.carried_over
    _same_result(got, _fresh(path, Settings(select=("OL1",))))


_EXAMPLES = [r for r in all_rules() if r.emitted_by == "engine" and r.example_bad]


@pytest.mark.parametrize("rule", _EXAMPLES, ids=lambda r: r.code)
def test_every_rule_example_gives_the_same_findings(tmp_path: Path, rule: object) -> None:
    """No rule reads the five metadata fields: on every rule's bad example, a carried
    over result (where it is taken) is what a fresh lint of the new bytes gives."""
    model = onnx.parser.parse_model(rule.example_bad)  # type: ignore[attr-defined]
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    settings = Settings(eps=tuple(rule.example_eps))  # type: ignore[attr-defined]
    first = _fresh(path, settings)
    data = _rewrite(
        path,
        producer_name="someone-else",
        producer_version="0.0.1",
        domain="ai.other",
        model_version=3,
        doc_string="a new note",
    )
    got = analyse(path_to_uri(path), path, data, settings, prior=first)
    _same_result(got, _fresh(path, settings))


def test_the_server_publishes_the_carried_result_and_keeps_both_cached(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.onnx", MODEL)
    uri = path_to_uri(path)
    published: list[ModelState] = []
    original = path.read_bytes()

    async def scenario() -> LintService:
        service = LintService(published.append, lambda u: None, Settings())
        await service.schedule(uri, path, delay=0)
        _rewrite(path, producer_version="2.2")
        await service.schedule(uri, path, delay=0)
        path.write_bytes(original)  # back to the first bytes: their result is cached
        await service.schedule(uri, path, delay=0)
        return service

    service = asyncio.run(scenario())
    try:
        first, second, third = published
        assert not first.carried_over and second.carried_over and third is first
        assert service.runs == 2
        assert first in service._cache.values() and second in service._cache.values()
        _same_result(third, _fresh(path, Settings()))
        _rewrite(path, producer_version="2.2")
        _same_result(second, _fresh(path, Settings()))
    finally:
        service.shutdown()


def test_a_result_linted_from_other_bytes_than_read_carries_nothing_over(tmp_path: Path) -> None:
    """The loader reads the file again: when it changed since ``data`` was read, the
    result describes the loader's bytes, and no layout of ``data`` is kept for it."""
    path = write_model(tmp_path / "m.onnx", MODEL)
    read = path.read_bytes()
    # a graph change lands between the service's read and the lint's
    model = onnx.load(str(path))
    _graph_edit(model)
    path.write_bytes(model.SerializeToString())
    first = analyse(path_to_uri(path), path, read, Settings())
    assert first.content_hash == _fresh(path, Settings()).content_hash  # the loader's bytes
    assert first.layout is None
    # metadata-only from ``read``, but not from what was linted
    data = _rewrite_bytes(read, producer_version="2.2")
    path.write_bytes(data)
    got = analyse(path_to_uri(path), path, data, Settings(), prior=first)
    assert not got.carried_over
    _same_result(got, _fresh(path, Settings()))


def _rewrite_bytes(data: bytes, **fields: object) -> bytes:
    model = onnx.ModelProto.FromString(data)
    for name, value in fields.items():
        setattr(model, name, value)
    return model.SerializeToString()


@pytest.mark.parametrize("edit", EDITS, ids=lambda e: ",".join(e))
def test_the_graph_view_of_a_metadata_only_change_is_rendered_from_the_last_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: dict
) -> None:
    from onnxlint.lsp import workspace

    path = write_model(tmp_path / "m.onnx", MODEL)
    settings = Settings()
    first = _fresh(path, settings)
    data = _rewrite(path, **edit)
    fresh = build_view(path, data, settings)
    indexed: list[object] = []
    real = workspace.ModelIndex
    monkeypatch.setattr(workspace, "ModelIndex", lambda m: indexed.append(m) or real(m))
    got = build_view(path, data, settings, prior=first)
    assert indexed == []  # neither loaded nor indexed again
    assert (got.content_hash, got.text, got.nodes) == (fresh.content_hash, fresh.text, fresh.nodes)
    assert edit.get("producer_name", "torch") == "" or "producer_name" in got.text
    # a graph change: loaded and indexed, as without a previous result
    model = onnx.ModelProto.FromString(data)
    _graph_edit(model)
    changed = model.SerializeToString()
    got = build_view(path, changed, settings, prior=first)
    assert len(indexed) == 1
    fresh = build_view(path, changed, settings)
    assert (got.text, got.nodes) == (fresh.text, fresh.nodes)


def test_the_model_size_is_measured_once_per_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.lsp import carryover
    from onnxlint.modelfile.measure import serialized_size

    path = write_model(tmp_path / "m.onnx", MODEL)
    settings = Settings()
    first = _fresh(path, settings)
    data = _rewrite(path, producer_version="2.2")
    assert build_view(path, data, settings, prior=first).content_hash
    assert first.index is not None and first.model_bytes == serialized_size(first.index.model)

    def unmeasured(model: onnx.ModelProto) -> int:
        raise AssertionError("measured again")

    monkeypatch.setattr(carryover, "serialized_size", unmeasured)
    got = analyse(path_to_uri(path), path, data, settings, prior=first)
    assert got.carried_over and got.model_bytes == serialized_size(onnx.load(str(path)))


def test_no_carry_over_across_a_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A size a lint compares with a limit (protobuf's 2 GiB in onnx.checker, here moved
    next to this model's size) on the other side after the edit: linted afresh."""
    from onnxlint.lsp import carryover

    path = write_model(tmp_path / "m.onnx", MODEL)
    size = path.stat().st_size
    first = _fresh(path, Settings())
    monkeypatch.setattr(carryover, "PROTOBUF_LIMITS", (size + 2 * carryover.SIZE_MARGIN,))
    data = _rewrite(path, producer_version="2.2" + "x" * 4 * carryover.SIZE_MARGIN)
    assert not analyse(path_to_uri(path), path, data, Settings(), prior=first).carried_over
    monkeypatch.setattr(carryover, "PROTOBUF_LIMITS", (10 * size,))
    assert analyse(path_to_uri(path), path, data, Settings(), prior=first).carried_over


def test_a_full_lint_lays_the_bytes_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layout (a SHA-256 over nearly all the bytes) is computed once per lint: the
    carry-over that does not apply and the result that keeps it share it."""
    from onnxlint.lsp import workspace

    path = write_model(tmp_path / "m.onnx", MODEL)
    first = _fresh(path, Settings())
    model = onnx.load(str(path))
    _graph_edit(model)
    data = model.SerializeToString()
    path.write_bytes(data)
    calls: list[int] = []
    real = Layout.of

    def counted(data: bytes) -> Layout | None:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(workspace.Layout, "of", staticmethod(counted))
    got = analyse(path_to_uri(path), path, data, Settings(), prior=first)
    assert not got.carried_over and got.layout is not None and calls == [len(data)]


def test_the_service_hands_its_hash_of_the_bytes_to_the_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service hashes the bytes it read (its cache key): the lint does not hash them
    again, which pays for the layout's own pass over them."""
    from onnxlint.lsp import workspace

    path = write_model(tmp_path / "m.onnx", MODEL)
    uri = path_to_uri(path)
    hashed: list[int] = []
    real = workspace.content_hash
    monkeypatch.setattr(workspace, "content_hash", lambda d: hashed.append(len(d)) or real(d))

    async def scenario() -> LintService:
        service = LintService(lambda s: None, lambda u: None, Settings())
        await service.schedule(uri, path, delay=0)
        return service

    service = asyncio.run(scenario())
    try:
        assert hashed == [] and service.states[uri].content_hash == real(path.read_bytes())
    finally:
        service.shutdown()
