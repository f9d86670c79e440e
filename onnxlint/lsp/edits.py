"""Reading an edited document from its previous result in the language server.

:func:`spliced` reads an ``.onnxtxt`` edit inside one node statement from the previous
model (``modelfile.textedit``); :func:`read_rewrite` reads a binary model saved again
with one main-graph node changed (:func:`rewrite_position` finds it by its wire layout
against the previous one's); and
:func:`carried_analyses` hands the lint of either edit the previous analyses that the
edit provably leaves as they were (``analyses.edits``). Each declines whatever it cannot
show, and the caller reads and lints as usual.
"""

from __future__ import annotations

import bisect
from pathlib import Path

import onnx

from onnxlint.config import Config
from onnxlint.context import SharedModel
from onnxlint.index import ModelIndex, differs_in_names_only, stored_graphs
from onnxlint.limits import Limits
from onnxlint.loader import LoadedModel, load
from onnxlint.lsp.carryover import Layout, node_edit_at
from onnxlint.lsp.state import ModelState
from onnxlint.modelfile import textedit
from onnxlint.modelfile.read import read_node_edit


def carried_analyses(
    prior: ModelState, splice: textedit.Splice, config: Config, confirm_mode: str
) -> SharedModel | None:
    """The spliced model for the lint of the edited document, with its index built from
    ``prior``'s (``ModelIndex.after_node_edit``), the analyses of ``prior`` (same
    settings and configuration) that the edit provably leaves as they were
    (``analyses.edits``) and, when the index was built so, ``prior``'s rule findings for
    the rules' run to take over (``onnxlint.walk``); None: the lint reads and indexes the
    model itself.

    Analyses are taken over only for a lint without EPs or confirmation: the EP assignment
    reads the Shapes analysis's inferred copy of the model, which a result taken over does
    not have."""
    from onnxlint.walk import NodeEdit, RuleFindings

    model = splice.loaded.model
    if model is None:
        return None
    in_main = not splice.site.steps and splice.site.function is None
    shared = SharedModel(splice.loaded)
    moved: ModelIndex | None = None
    edited = -1
    if in_main and prior.index is not None:
        moved = shared.index = ModelIndex.after_node_edit(prior.index, model, splice.site.index)
        if moved is not None:  # the edited node's place among all the index's nodes
            edited = next((k for k, ref in enumerate(moved.nodes) if ref.node is splice.now), -1)
    _take_over(prior, splice, config, confirm_mode, shared, in_main, edited)
    found = prior.analyses.get(RuleFindings)
    if (
        moved is not None
        and edited >= 0
        and isinstance(found, RuleFindings)
        and found.index is prior.index
    ):
        shared.edit = NodeEdit(found, moved, edited, frozenset(shared.analyses))
    return shared


def _take_over(
    prior: ModelState,
    splice: textedit.Splice,
    config: Config,
    confirm_mode: str,
    shared: SharedModel,
    in_main: bool,
    edited: int,
) -> None:
    """Put into ``shared.analyses`` the analyses of ``prior`` that the edit leaves as they
    were (``edited``: the edited node's position in ``shared.index``'s nodes, when that
    index was moved from ``prior``'s; -1 otherwise)."""
    from onnxlint.analyses.checked import CheckerVerdict
    from onnxlint.analyses.dataflow import Dataflow
    from onnxlint.analyses.edits import (
        checker_after_node_edit,
        dataflow_after_node_edit,
        shapes_after_node_edit,
    )
    from onnxlint.analyses.shapes import Shapes

    model = splice.loaded.model
    assert model is not None
    names_only = differs_in_names_only(splice.was, splice.now)
    verdict = prior.analyses.get(CheckerVerdict)
    if isinstance(verdict, CheckerVerdict):  # the model's alone: whatever the EPs
        checked = checker_after_node_edit(
            verdict, model, splice.was, splice.now, in_main, names_only
        )
        if checked is not None:
            shared.analyses[CheckerVerdict] = checked
    if config.eps or config.ep_profiles or confirm_mode != "off" or prior.confirm_mode != "off":
        return
    shapes = prior.analyses.get(Shapes)
    if not isinstance(shapes, Shapes):
        return
    main = shared.index.main if shared.index is not None else None
    carried = shapes_after_node_edit(
        shapes, model, splice.was, splice.now, in_main, names_only, main
    )
    if carried is None:
        return
    shared.analyses[Shapes] = carried
    flow = prior.analyses.get(Dataflow)
    if isinstance(flow, Dataflow):
        # the lint's own index, built here instead of in the engine
        index = shared.index = shared.index or ModelIndex(model)
        if edited < 0:
            edited = next((k for k, ref in enumerate(index.nodes) if ref.node is splice.now), -1)
        taken = dataflow_after_node_edit(flow, index, carried, edited, names_only)
        if taken is not None:
            shared.analyses[Dataflow] = taken


def spliced(
    prior: ModelState | None,
    uri: str,
    path: Path | None,
    data: bytes,
    limits: Limits,
    digest: str | None = None,
    text: str | None = None,
) -> textedit.Splice | None:
    """The edited text document ``data`` read from ``prior``'s model when the edit lies
    inside one node statement (:func:`~onnxlint.modelfile.textedit.splice_node_edit`, which
    proves it or declines); None: read the whole text. ``text``: ``data`` decoded, when
    the caller has it (None: decoded here; bytes that are not UTF-8 are read whole)."""
    if (
        prior is None
        or not prior.is_text
        or prior.uri != uri
        or prior.path != path
        or prior.clean_limits != limits
        or prior.index is None
        or prior.report.fatal
    ):
        return None
    smap = prior.source
    if smap is None:
        return None
    if text is not None:
        new = text
    else:
        try:
            new = data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # the loader words the problem
    old = smap.text
    span = textedit.changed_span(old, new)
    if span[0] == len(old) == len(new):
        return None
    starts = smap.line_starts
    if starts is not None and starts[-1] <= len(old):
        at_line = bisect.bisect_right(starts, span[0]) - 1  # the line the change starts on
    else:
        at_line = old.count("\n", 0, span[0])
    entry = smap.node_at(at_line)
    ref = prior.index.node_by_path(entry.path) if entry is not None else None
    if entry is None or ref is None:
        return None
    site = textedit.node_site(prior.index.model, ref, entry.line, max(entry.line, entry.end_line))
    if site is None:
        return None
    return textedit.splice_node_edit(
        prior.index.model,
        old,
        new,
        site,
        limits,
        span,
        data=data,
        data_hash=digest,
        at_line=at_line,
        external=prior.external,
    )


def rewrite_position(
    prior: ModelState | None, uri: str, path: Path | None, layout: Layout | None, limits: Limits
) -> int | None:
    """The position (among the main graph's nodes) of the one node whose bytes differ when
    the binary model laid out as ``layout`` replaced ``prior``'s, the same file, which
    loaded with no problem under ``limits`` and was linted from the bytes its layout
    describes (:func:`~onnxlint.lsp.carryover.node_edit_at`); None otherwise."""
    if (
        prior is None
        or prior.is_text
        or prior.uri != uri
        or prior.path != path
        or prior.clean_limits != limits
        or prior.index is None
        or prior.report.fatal
        or prior.layout is None
        or layout is None
    ):
        return None
    return node_edit_at(prior.layout, layout)


def rewritten_node(prior: ModelState, at: int, loaded: LoadedModel) -> textedit.Splice | None:
    """The binary model ``loaded`` read as ``prior``'s model with main-graph node ``at``
    replaced (:func:`rewrite_position` found it), when neither node holds a body and the
    load had no problem; None otherwise.

    Protobuf decodes each field on its own, so equal bytes decode to equal fields: the
    two models are then the same but for that node."""
    if prior.index is None or loaded.model is None or loaded.problems:
        return None
    old_nodes, new_nodes = prior.index.model.graph.node, loaded.model.graph.node
    if len(old_nodes) != len(new_nodes) or not 0 <= at < len(new_nodes):
        return None
    was, now = old_nodes[at], new_nodes[at]
    if any(_holds_a_graph(node) for node in (was, now)):
        return None
    return textedit.Splice(loaded, textedit.NodeSite((), None, at, -1, -1), was, now)


def node_edit_load(
    prior: ModelState,
    at: int,
    path: Path,
    data: bytes | None,
    layout: Layout,
    digest: str,
    limits: Limits,
) -> LoadedModel | None:
    """The binary model file ``path``, read by the caller as ``data`` (laid out as
    ``layout``, hashed as ``digest``), loaded from those bytes when they differ from
    ``prior``'s in main-graph node ``at`` only (:func:`rewrite_position` found it):
    :func:`~onnxlint.modelfile.read.read_node_edit` checks that node as the load would
    check the file; None: load the file."""
    if data is None or not 0 <= at < len(layout.nodes) or prior.real_path is None:
        return None
    loaded = read_node_edit(path, data, digest, layout.nodes[at], limits, prior.external)
    if loaded is None or loaded.real_path != prior.real_path:
        return None  # the path leads to another file now: the whole load says what it is
    return loaded


def _holds_a_graph(node: onnx.NodeProto) -> bool:
    return next(stored_graphs(node.attribute), None) is not None


def read_rewrite(
    prior: ModelState,
    uri: str,
    path: Path,
    data: bytes | None,
    layout: Layout,
    digest: str,
    config: Config,
    confirm_mode: str,
    notes: list[str],
) -> tuple[LoadedModel, SharedModel | None]:
    """A binary model that replaced ``prior``'s (same settings, configuration file and
    file), loaded as the engine would load it, with the analyses a one-node edit leaves as
    they were (:func:`rewritten_node`; None: none). Bytes that differ from ``prior``'s
    in one node are read from ``data`` with the load's checks on that node
    (:func:`node_edit_load`); others are loaded from the file."""
    found: LoadedModel | None = None
    at: int | None = None
    try:
        at = rewrite_position(prior, uri, path, layout, config.limits)
        if at is not None:
            found = node_edit_load(prior, at, path, data, layout, digest, config.limits)
    except Exception as exc:  # a bug in a shortcut costs the shortcut, never the lint
        notes.append(f"loading {path} whole: {type(exc).__name__}: {exc}")
        at = None
    loaded = found if found is not None else load(path, config.limits, keep_wire=True)
    if loaded.content_hash != digest or at is None:
        return loaded, None  # the file changed since it was read: lint what is there
    try:
        splice = rewritten_node(prior, at, loaded)
        if splice is None:
            return loaded, None
        return loaded, carried_analyses(prior, splice, config, confirm_mode)
    except Exception as exc:  # a bug in a shortcut costs the shortcut, never the lint
        notes.append(f"linting {path} whole: {type(exc).__name__}: {exc}")
        return loaded, None
