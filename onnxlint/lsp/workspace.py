"""Model files, URIs and one linted model's state, for the language server.

A binary ``.onnx`` file has two URIs: its ``file://`` URI (diagnostics show up
in the Problems panel and on the file in the explorer) and its graph view
``onnx-graph:`` URI (the model printed as ONNX text, where squiggles sit on
node lines). A ``.onnxtxt`` file is its own text: one URI, exact ranges.
"""

from __future__ import annotations

import hashlib
import os
import stat
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

from onnxlint.config import Config, ConfigError, discover, load_file
from onnxlint.context import SharedModel
from onnxlint.index import ModelIndex
from onnxlint.limits import Limits
from onnxlint.loader import TEXT_SUFFIXES, LoadedModel, load, load_text
from onnxlint.lsp.carryover import Layout, carry_over, metadata_edit, same_file
from onnxlint.lsp.edits import carried_analyses, read_rewrite, spliced
from onnxlint.lsp.printer import render_graph_view, tensor_type_text, type_text
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.sourcemap import SourceMap
from onnxlint.lsp.state import ModelState as ModelState
from onnxlint.lsp.textmap import map_text_source
from onnxlint.report import Report

GRAPH_SCHEME = "onnx-graph"
#: suffix of a graph view's path, so editors pick the ONNX text language for it
GRAPH_SUFFIX = ".onnxtxt"
MODEL_SUFFIXES = (".onnx", *TEXT_SUFFIXES)
#: external-data files whose change means "re-lint the models in that folder"
DATA_SUFFIXES = (".data", ".bin", ".onnx_data", ".weights", ".pb")
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".onnxlint-cache", ".mypy_cache"}
MAX_SCAN_FILES = 5000


def uri_to_path(uri: str) -> Path | None:
    """The file a ``file://`` or graph view URI stands for (None for other schemes)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == GRAPH_SCHEME:
        path = unquote(parsed.path)
        if path.endswith(GRAPH_SUFFIX):
            path = path[: -len(GRAPH_SUFFIX)]
        return Path(path)
    return None


def path_to_uri(path: Path) -> str:
    return Path(os.path.abspath(path)).as_uri()


def graph_uri(path: Path) -> str:
    """The graph view URI of a model file: ``onnx-graph:/abs/model.onnx.onnxtxt``."""
    return f"{GRAPH_SCHEME}:{quote(Path(os.path.abspath(path)).as_posix())}{GRAPH_SUFFIX}"


def is_graph_uri(uri: str) -> bool:
    return uri.startswith(GRAPH_SCHEME + ":")


def is_text_model(path: Path) -> bool:
    return path.suffix.lower() in TEXT_SUFFIXES


def is_model(path: Path) -> bool:
    return path.suffix.lower() in MODEL_SUFFIXES


def scan(roots: Iterable[Path], limit: int = MAX_SCAN_FILES) -> Iterator[Path]:
    """Model files under ``roots``, skipping VCS, virtualenv and hidden folders."""
    count = 0
    for root in roots:
        if not root.is_dir():
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                p = Path(folder) / name
                if is_model(p):
                    yield p
                    count += 1
                    if count >= limit:
                        return


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_model_bytes(path: Path, limits: Limits) -> bytes | None:
    """The bytes of the model file ``path``, or None when only the loader can say why not.

    Opened the way the loader opens a model: ``O_NONBLOCK`` (a FIFO never blocks the
    open), then ``fstat`` on the descriptor, so a FIFO, a device such as ``/dev/zero``
    behind a symlink, or a folder is never read from; nothing over the size limit
    is read. None for those, for an empty or missing file and for any OS error:
    the caller then hands ``path`` to the loader, whose diagnostic names the reason.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not 0 < st.st_size <= limits.max_file_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limits.max_file_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if 0 < len(data) <= limits.max_file_bytes else None


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """(file type, size, mtime) of ``path`` following links, or None when it does not exist.

    What a cached result of an unreadable file (a FIFO, a device) is keyed by.
    """
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None
    return stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns


def config_for(
    path: Path | None, settings: Settings, confirm_mode: str = "off"
) -> tuple[Config, list[str]]:
    """The configuration that applies to ``path`` with the editor settings on top.

    An invalid configuration file is reported and the defaults are used.
    """
    notes: list[str] = []
    base = Config()
    if path is not None:
        try:
            base = discover(path)
        except ConfigError as exc:
            notes.append(f"invalid onnxlint configuration, using defaults: {exc}")
    return settings.apply(base, confirm_mode), notes


def config_stamp(path: Path | None) -> tuple[object, ...]:
    """The configuration file that applies to ``path``, with its mtime (cache key, result id)."""
    if path is None:
        return ()
    from onnxlint.config import find_config_file

    try:
        found = find_config_file(path)
        if found is None:
            return ()
        st = found.stat()
        return str(found), st.st_mtime_ns, st.st_size
    except OSError:
        return ()


def analyse(
    uri: str,
    path: Path | None,
    data: bytes | None,
    settings: Settings,
    *,
    version: int | None = None,
    confirm_mode: str = "off",
    previous: SourceMap | None = None,
    prior: ModelState | None = None,
    data_hash: str | None = None,
    buffer: str | None = None,
) -> ModelState:
    """Lint one model (binary or text) and build its maps; never raises for bad input.

    ``previous``: the text map of this document before its latest edit; the nodes the
    edit did not move are taken from it (``map_text_source``).

    ``prior``: this binary model's latest result; when ``data`` differs from the bytes it
    was linted from in metadata only, it is carried over instead (``carryover``).
    ``data_hash``: the SHA-256 of ``data`` when the caller has it (not computed again).
    ``buffer``: the editor buffer ``data`` is the UTF-8 encoding of, when the caller has
    it (not decoded again).

    ``data`` is the document's bytes (an editor buffer, or the file as read by
    ``read_model_bytes``); None: the file is read by the loader, which reports a
    FIFO, a device or a missing file. Every model goes through ``onnxlint.loader``
    and its limits: a binary file by its path (external data is checked against
    its folder), ONNX text through ``load_text``. Runs in a worker thread.
    """
    from onnxlint import engine

    is_text = path is not None and is_text_model(path)
    label = str(path) if path is not None else uri
    config, notes = config_for(path, settings, confirm_mode)
    stamp = config_stamp(path)
    if data is None and is_text and path is not None:
        data = read_model_bytes(path, config.limits)
    digest = (data_hash or content_hash(data)) if data is not None else ""
    # a binary model's layout, once: what the carry-over compares, and what the result keeps
    layout = Layout.of(data) if data is not None and not is_text else None
    if (
        prior is not None
        and data is not None
        and layout is not None
        and same_file(prior, uri, path)
    ):
        carried = carry_over(
            prior, data, layout, digest, config, settings.key(), stamp, confirm_mode, notes
        )
        if carried is not None:
            carried.notes, carried.version = notes, version
            return carried
    text = ""
    source: bytes | Path | LoadedModel
    shared: SharedModel | None = None
    span: tuple[int, int, int] | None = None  # where the text differs from ``previous``'s
    if is_text and data is not None:
        decoded: str | None = buffer
        if decoded is None:
            try:
                decoded = data.decode("utf-8")
            except UnicodeDecodeError:
                decoded = None  # the loader words the problem
        try:
            splice = spliced(prior, uri, path, data, config.limits, digest, decoded)
            if splice is not None and prior is not None:
                same = (prior.settings_key, prior.config_stamp) == (settings.key(), stamp)
                shared = carried_analyses(prior, splice, config, confirm_mode) if same else None
        except Exception as exc:  # a bug in a shortcut costs the shortcut, never the lint
            splice, shared = None, None
            notes.append(f"re-reading {label} whole: {type(exc).__name__}: {exc}")
        loaded = splice.loaded if splice is not None else load_text(data, config.limits, label)
        if loaded.model is None:
            report = Report(
                path=label, diagnostics=loaded.diagnostics, fatal=True, content_hash=digest
            )
            return ModelState(
                uri,
                path,
                digest,
                settings.key(),
                report,
                True,
                notes=notes,
                version=version,
                config_stamp=stamp,
                confirm_mode=confirm_mode,
            )
        # the engine lints the parsed document as it is: reading, checking and hashing
        # its ModelProto again cost a fifth of a 10k-node re-lint (docs/performance.md)
        source = loaded
        # the loader has checked it is UTF-8
        text = decoded if decoded is not None else data.decode("utf-8", "replace")
        if splice is not None and prior is not None and previous is prior.source:
            span = splice.span
    elif path is not None and (data is None or path.is_file()):
        source = path  # the loader reads it and checks external data against its folder
        if (
            prior is not None
            and prior.layout is not None
            and layout is not None
            and prior.settings_key == settings.key()
            and prior.config_stamp == stamp
            and same_file(prior, uri, path)
        ):
            # a binary model saved again: read here, then compared with the previous one
            source, shared = read_rewrite(
                prior, uri, path, data, layout, digest, config, confirm_mode, notes
            )
    else:
        source = data or b""
    captured: dict[str, Any] = {}
    report = _lint(engine, source, config, label, notes, _capture(captured), shared)
    # whether the lint read the very bytes ``data`` holds (a file is read again by the loader)
    linted_data = data is not None and report.content_hash == digest
    if source is path and report.content_hash and report.content_hash != digest:
        # the file changed between the caller's read and the lint's: describe what was linted
        digest = report.content_hash
    state = ModelState(
        uri,
        path,
        digest,
        settings.key(),
        report,
        is_text,
        notes=notes,
        version=version,
        config_stamp=stamp,
        confirm_mode=confirm_mode,
    )
    if report.fatal:
        return state
    state.confirmed = confirmed_eps(report)
    if captured.get("clean"):
        # the next edit may be read by ``edits.spliced`` or ``edits.rewrite_position``
        state.clean_limits = config.limits
        state.external = captured.get("external")
    state.real_path = captured.get("real_path")
    if linted_data:
        state.layout = layout  # what the next bytes are compared with (``carryover``)
    # the lint's own model and index: loading and indexing again cost as much as the rules
    index: ModelIndex | None = captured.get("index")
    shapes = captured.get("shapes")
    try:
        if index is None:  # the lint itself failed: index the model for the editor features
            model = (
                source.model
                if isinstance(source, LoadedModel)
                else load(source, config.limits).model
            )
            if model is None:
                return state
            index = ModelIndex(model)
        state.index = index
        state.value_types = ValueTypes(index, shapes)
        state.analyses = captured.get("analyses", {})  # what the next edit may take over
        if is_text:
            state.source = map_text_source(text, index, previous, span)
        elif prior is not None and shared is not None and shared.edit is not None:
            edit = shared.edit  # one node rewritten: the view is made from the previous one's
            if index is edit.index and edit.index.main is index.nodes[edit.position].graph:
                was = edit.prior.index.nodes[edit.position]
                state.view_base = (weakref.ref(prior), was.path, was.index)
    except Exception as exc:  # a model the index or text map cannot handle: diagnostics still show
        notes.append(f"graph view unavailable for {label}: {type(exc).__name__}: {exc}")
    return state


def _capture(box: dict[str, Any]) -> Callable[[Any, Report], None]:
    """An engine observer that hands the lint's index and its Shapes and Dataflow analyses
    to ``analyse``.

    The analyses are taken only if some rule already asked for them: never computed here.
    """

    def observe(ctx: Any, report: Report) -> None:
        from onnxlint.analyses.checked import CheckerVerdict
        from onnxlint.analyses.dataflow import Dataflow
        from onnxlint.analyses.shapes import Shapes
        from onnxlint.walk import RuleFindings

        box["index"] = ctx.index
        box["real_path"] = ctx.loaded.real_path
        box["clean"] = not ctx.loaded.problems
        box["external"] = ctx.loaded.external
        box["shapes"] = ctx.computed(Shapes)
        box["analyses"] = {
            cls: found
            for cls in (Shapes, Dataflow, CheckerVerdict)
            if (found := ctx.computed(cls)) is not None
        }
        if ctx.findings is not None:  # what the rules' run of the next edit may take over
            box["analyses"][RuleFindings] = ctx.findings

    return observe


@dataclass
class GraphView:
    """The graph view of one model content, as the ``onnxlint/graphView`` reply carries it.

    It depends on the bytes only (not on settings), so the server keeps it by
    content hash and answers a view request without linting.
    """

    content_hash: str
    text: str
    source: SourceMap | None = None
    #: ``[{"path": node path, "line": 0-based line}]``, built once
    nodes: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, digest: str, source: SourceMap) -> GraphView:
        nodes = [{"path": p, "line": e.line} for p, e in source.nodes.items()]
        return cls(digest, source.text, source, nodes)


def build_view(
    path: Path, data: bytes | None, settings: Settings, prior: ModelState | None = None
) -> GraphView:
    """Load ``data`` safely and render its graph view, without linting it.

    For a view requested before the lint of this content is done: the text can
    be shown at once and the diagnostics follow. ``data`` None: the file could
    not be read as a regular file, and the loader says why. A model that cannot
    be loaded gets a text that says why (the load findings), never an exception.

    ``prior``: the file's latest result; when ``data`` differs from its bytes in metadata
    only (``carryover``), the view is rendered from its index, not loaded and indexed again.
    """
    config, _ = config_for(path, settings)
    if data is not None and prior is not None:
        carried = _carried_view(prior, data, config)
        if carried is not None:
            return carried
    if data is None:
        loaded = load(path, config.limits)
    elif is_text_model(path):
        loaded = load_text(data, config.limits, str(path))
    else:
        loaded = load(data, config.limits)
    digest = content_hash(data) if data is not None else ""
    problem: list[str] = [f"# {d.code} {d.message}" for d in loaded.diagnostics]
    if loaded.model is not None and data is not None:
        try:
            return GraphView.of(digest, render_graph_view(ModelIndex(loaded.model)))
        except Exception as exc:  # a model the index or printer cannot handle
            problem = [f"# {type(exc).__name__}: {exc}"]
    lines = [f"# onnxlint: {path.name} could not be rendered as a graph", *problem]
    return GraphView(digest, "\n".join(lines) + "\n")


def _carried_view(prior: ModelState, data: bytes, config: Config) -> GraphView | None:
    """The view of ``data`` rendered from ``prior``'s index, with the new metadata in its
    header, when ``data`` differs from ``prior``'s bytes in metadata only (None: it does
    not, or the printer failed: the caller loads ``data``)."""
    if prior.is_text or prior.layout is None or prior.index is None or prior.report.fatal:
        return None
    layout = Layout.of(data)
    if layout is None:
        return None
    edit = metadata_edit(prior.layout, prior.index, prior.model_bytes, data, layout, config)
    if edit is None:
        return None
    prior.model_bytes = edit.prior_bytes  # measured once per result
    try:
        return GraphView.of(content_hash(data), render_graph_view(prior.index, edit.metadata))
    except Exception:  # the caller's render says what went wrong
        return None


def _lint(
    engine: object,
    source: object,
    config: Config,
    label: str,
    notes: list[str],
    observe: Callable[[Any, Report], None],
    shared: SharedModel | None = None,
) -> Report:
    lint = engine.lint  # type: ignore[attr-defined]
    try:
        # the graph view shows the assignment whatever rules are selected; no what-if runs
        # (a second lint per keystroke; the cause's fix names the command)
        return lint(
            source,
            config=config,
            path_label=label,
            observe=observe,
            partition_summary=True,
            what_if=False,
            shared=shared,
            keep_findings=True,
        )
    except (engine.UsageError, ConfigError) as exc:  # type: ignore[attr-defined]
        notes.append(f"onnxlint settings rejected, linting with defaults: {exc}")
    except Exception as exc:  # a bug in some analysis must not take the server down
        notes.append(
            f"onnxlint failed with these settings ({type(exc).__name__}: {exc}); "
            "linting without EPs"
        )
    try:
        return lint(
            source,
            eps=[],
            config=config.merged(eps=()),
            path_label=label,
            observe=observe,
            what_if=False,
        )
    except Exception as exc:
        notes.append(f"onnxlint failed on {label}: {type(exc).__name__}: {exc}")
        return Report(path=label)


def confirmed_eps(report: Report) -> dict[str, str]:
    """Node path -> the EP a real session put it on, where it differs from the prediction.

    Read from the confirmation stage's report data (``--confirm``), when it ran.
    """
    from onnxlint.confirmed import real_eps

    return real_eps(report)  # one reading of the confirmation for every front end


class ValueTypes(Mapping[tuple[str, str], str]):
    """(graph path, value name) -> ``float[N,3]``: declared in that graph, else inferred.

    Inferred types come from the lint's shape analysis (``Shapes``), so the
    server runs no shape inference of its own; texts are made on lookup (hover
    reads a handful, a 10k-node model has ~30k values).
    """

    def __init__(self, index: ModelIndex, shapes: Any | None = None) -> None:
        self._graphs = {g.path: g for g in index.graphs}
        self._shapes = shapes

    def __getitem__(self, key: tuple[str, str]) -> str:
        graph, name = key
        g = self._graphs.get(graph)
        if g is not None:
            vi = g.value_info.get(name)
            if vi is not None and vi.type.WhichOneof("value"):
                return type_text(vi.type)
            init = g.initializers.get(name)
            if init is not None:
                return tensor_type_text(init)
        vt = self._shapes.value_type(name) if self._shapes is not None else None
        if vt is None or (g is None and graph != "main"):
            raise KeyError(key)
        return value_type_text(vt)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for path, g in self._graphs.items():
            names = dict.fromkeys([*g.value_info, *g.initializers, *g.producers])
            for name in names:
                if (path, name) in self:
                    yield path, name

    def __len__(self) -> int:
        return sum(1 for _ in self)


def value_type_text(vt: Any) -> str:
    """A ``ValueType`` of the shape analysis in ONNX text: ``float[N,?,64]``, ``seq(float)``."""
    base = vt.dtype or "?"
    if vt.kind == "sequence":
        return f"seq({base})"
    if vt.kind == "map":
        return "map"
    if vt.kind == "unknown":
        return "?"
    if vt.shape is None:
        base += "[]"
    elif vt.shape:
        base += "[" + ",".join("?" if d is None else str(d) for d in vt.shape) + "]"
    if vt.kind == "optional":
        return f"optional({base})"
    return base if vt.kind != "sparse_tensor" else f"sparse_tensor({base})"


def config_files_for(path: Path) -> list[Path]:
    """Files whose change alters the configuration of ``path`` (for re-lint on change)."""
    out = []
    for folder in (path.parent, *path.parent.parents):
        out += [folder / "onnxlint.toml", folder / "pyproject.toml"]
    return out


__all__ = [
    "GRAPH_SCHEME",
    "GraphView",
    "ModelState",
    "analyse",
    "build_view",
    "config_for",
    "graph_uri",
    "is_graph_uri",
    "load_file",
    "path_to_uri",
    "scan",
    "uri_to_path",
]
