"""One linted model's state in the language server: its result and the maps the editor
features read."""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

from onnxlint.index import ModelIndex
from onnxlint.limits import Limits
from onnxlint.lsp.printer import render_graph_view, view_after_node_edit
from onnxlint.lsp.sourcemap import SourceMap
from onnxlint.report import Report

if TYPE_CHECKING:
    from onnxlint.lsp.carryover import Layout


@dataclass
class ModelState:
    """Everything the editor features need about one linted model."""

    uri: str
    path: Path | None
    content_hash: str
    settings_key: tuple[object, ...]
    report: Report
    is_text: bool
    index: ModelIndex | None = None
    #: value name -> type text: declared, else what the lint's shape inference found
    value_types: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: problems with settings or configuration, shown once to the user
    notes: list[str] = field(default_factory=list)
    #: confirmed EP per node path, when confirmation ran
    confirmed: dict[str, str] = field(default_factory=dict)
    version: int | None = None
    #: the configuration files that applied, with their mtimes (``config_stamp``)
    config_stamp: tuple[object, ...] = ()
    #: ``off``, ``cache-only`` or ``run``: how confirmation took part in this result
    confirm_mode: str = "off"
    #: per view (``text``/``graph``): line -> indexes of the findings on it (code actions)
    line_index: dict[str, dict[int, list[int]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    #: a binary model's top-level wire layout, when it was linted from exactly those
    #: bytes (``carryover``: the next bytes that differ in metadata only reuse this result)
    layout: Layout | None = field(default=None, repr=False, compare=False)
    #: the model's serialized size once measured (``carryover``; None: not yet)
    model_bytes: int | None = field(default=None, repr=False, compare=False)
    #: the model file with every link resolved, as the loader read it (None: bytes)
    real_path: Path | None = field(default=None, repr=False, compare=False)
    #: whether this result was carried over from the previous bytes' (``carryover``)
    carried_over: bool = False
    #: a carried-over result's metadata fields (``carryover``): ``index.model`` is the model
    #: the findings were computed on, whose five metadata fields are the previous bytes'
    metadata: onnx.ModelProto | None = field(default=None, repr=False, compare=False)
    #: a text document that loaded with no problem: the limits it was read with (the next
    #: edit of it may be read from this result's model, ``edits.spliced``)
    clean_limits: Limits | None = field(default=None, repr=False, compare=False)
    #: whether the model linted has an external tensor (``LoadedModel.external``)
    external: bool | None = field(default=None, repr=False, compare=False)
    #: the model's Shapes, Dataflow and checker verdict, by class, that the lint of its
    #: next edit may take over (``edits.carried_analyses``)
    analyses: dict[type, Any] = field(default_factory=dict, repr=False, compare=False)
    #: the previous result of a binary model saved again with one main-graph node edited
    #: (its path there and its position), whose graph view this one's is made from when
    #: that view has been rendered (``printer.view_after_node_edit``); weak: a result
    #: never keeps the one before it alive
    view_base: tuple[weakref.ref[ModelState], str, int] | None = field(
        default=None, repr=False, compare=False
    )
    _source: SourceMap | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _causes: list[Any] | None = field(default=None, repr=False, compare=False)

    def cause_groups(self) -> list[Any]:
        """The report's root causes (:func:`onnxlint.causes.group`), grouped once per
        result: the file's and the graph view's diagnostics and the code lenses share them."""
        groups = self._causes
        if groups is None:
            from onnxlint import causes

            groups = self._causes = causes.group(self.report)
        return groups

    @property
    def result_id(self) -> str:
        """For pull diagnostics: changes with the content, the settings, the configuration
        file and the confirmation state (the mode and what real sessions found)."""
        inputs = (
            self.settings_key,
            self.config_stamp,
            self.confirm_mode,
            sorted(self.confirmed.items()),
            self.notes,
        )
        key = hashlib.sha256(repr(inputs).encode()).hexdigest()[:16]
        return f"{self.content_hash[:32]}-{key}"

    @property
    def source(self) -> SourceMap | None:
        """Text map: the user's text for .onnxtxt, the graph view for .onnx.

        A binary model's graph view is rendered on first use, not by ``analyse``:
        the diagnostics of the file itself need no text, so a change on disk is
        published without waiting for it. The server renders it in its view
        thread (``LintService.ensure_view``) before a feature reads it on the loop.
        """
        if self._source is None and self.view_pending:
            self.render_view()
        return self._source

    @source.setter
    def source(self, value: SourceMap | None) -> None:
        self._source = value

    @property
    def view_pending(self) -> bool:
        """True while a binary model's graph view has not been rendered yet."""
        return self._source is None and not self.is_text and self.index is not None

    def render_view(self) -> SourceMap | None:
        """Render the graph view now (once; safe to call from several threads)."""
        with self._lock:
            if self.view_pending:
                assert self.index is not None
                try:
                    self._source = self._view_from_base() or render_graph_view(
                        self.index, self.metadata
                    )
                except Exception as exc:  # a model the printer cannot handle: no view
                    self.notes.append(
                        f"graph view unavailable for {self.path or self.uri}: "
                        f"{type(exc).__name__}: {exc}"
                    )
                    self.index = None  # nothing left to render; features fall back
        return self._source

    def _view_from_base(self) -> SourceMap | None:
        """The graph view made from the previous result's (``view_base``), when that one
        was rendered; None: render it."""
        base, self.view_base = self.view_base, None
        prior = base[0]() if base is not None else None
        if base is None or prior is None or prior._source is None or self.index is None:
            return None
        try:
            return view_after_node_edit(prior._source, base[1], base[2], self.index)
        except Exception:  # a bug in a shortcut costs the shortcut, never the view
            return None
