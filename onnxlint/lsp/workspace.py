"""Model files, URIs and one linted model's state, for the language server.

A binary ``.onnx`` file has two URIs: its ``file://`` URI (diagnostics show up
in the Problems panel and on the file in the explorer) and its graph view
``onnx-graph:`` URI (the model printed as ONNX text, where squiggles sit on
node lines). A ``.onnxtxt`` file is its own text: one URI, exact ranges.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

import onnx

from onnxlint.config import Config, ConfigError, discover, load_file
from onnxlint.index import ModelIndex
from onnxlint.loader import TEXT_SUFFIXES
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.sourcemap import SourceMap, map_text_source, render_graph_view
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
    #: text map: the user's text for .onnxtxt, the graph view for .onnx
    source: SourceMap | None = None
    #: value name -> type text, from shape inference (best effort)
    value_types: dict[tuple[str, str], str] = field(default_factory=dict)
    #: problems with settings or configuration, shown once to the user
    notes: list[str] = field(default_factory=list)
    #: confirmed EP per node path, when confirmation ran
    confirmed: dict[str, str] = field(default_factory=dict)
    version: int | None = None

    @property
    def result_id(self) -> str:
        """For pull diagnostics: changes when the content or the settings change."""
        key = hashlib.sha256(repr(self.settings_key).encode()).hexdigest()[:12]
        return f"{self.content_hash[:32]}-{key}"


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


def analyse(
    uri: str,
    path: Path | None,
    data: bytes,
    settings: Settings,
    *,
    version: int | None = None,
    confirm_mode: str = "off",
) -> ModelState:
    """Lint one model (binary or text) and build its maps; never raises for bad input.

    Runs in a worker thread: it parses, lints and renders, all CPU work.
    """
    from onnxlint import engine
    from onnxlint.rules import load as load_rules

    is_text = path is not None and is_text_model(path)
    label = str(path) if path is not None else uri
    config, notes = config_for(path, settings, confirm_mode)
    digest = content_hash(data)
    model: onnx.ModelProto | None = None
    text = ""
    if is_text:
        text = data.decode("utf-8", "replace")
        try:
            model = onnx.parser.parse_model(text)
        except Exception as exc:
            diag = load_rules.TextParseError.make(_root_location(), "default", error=_one_line(exc))
            report = Report(path=label, diagnostics=[diag], fatal=True, content_hash=digest)
            return ModelState(
                uri, path, digest, settings.key(), report, True, notes=notes, version=version
            )
    source: str | bytes | onnx.ModelProto = model if model is not None else data
    if model is None and path is not None and path.is_file():
        source = path  # the loader checks external data relative to the file's folder
    report = _lint(engine, source, config, label, notes)
    state = ModelState(
        uri, path, digest, settings.key(), report, is_text, notes=notes, version=version
    )
    if report.fatal:
        return state
    if model is None:
        from onnxlint.loader import load

        loaded = load(data, config.limits)
        model = loaded.model
    if model is None:
        return state
    try:
        state.index = ModelIndex(model)
        state.source = (
            map_text_source(text, state.index) if is_text else render_graph_view(state.index)
        )
        state.value_types = infer_value_types(model, state.index)
        state.confirmed = confirmed_eps(report)
    except Exception as exc:  # a model the index or printer cannot handle: diagnostics still show
        notes.append(f"graph view unavailable for {label}: {type(exc).__name__}: {exc}")
    return state


def _lint(engine: object, source: object, config: Config, label: str, notes: list[str]) -> Report:
    lint = engine.lint  # type: ignore[attr-defined]
    try:
        return lint(source, config=config, path_label=label)  # type: ignore[no-any-return]
    except (engine.UsageError, ConfigError) as exc:  # type: ignore[attr-defined]
        notes.append(f"onnxlint settings rejected, linting with defaults: {exc}")
    except Exception as exc:  # a bug in some analysis must not take the server down
        notes.append(
            f"onnxlint failed with these settings ({type(exc).__name__}: {exc}); "
            "linting without EPs"
        )
    try:
        return lint(source, eps=[], config=config.merged(eps=()), path_label=label)  # type: ignore[no-any-return]
    except Exception as exc:
        notes.append(f"onnxlint failed on {label}: {type(exc).__name__}: {exc}")
        return Report(path=label)


def confirmed_eps(report: Report) -> dict[str, str]:
    """Node path -> the EP a real session put it on, where it differs from the prediction.

    Read from the confirmation stage's report data (``--confirm``), when it ran.
    """
    out: dict[str, str] = {}
    for conf in report.stats.get("confirmation") or []:
        for level in conf.get("levels") or []:
            if level.get("level") != "disabled":
                continue  # node for node only where the graph is the one exported
            for node, pair in (level.get("mismatches") or {}).items():
                if isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[1]:
                    out[node] = str(pair[1])
    return out


def infer_value_types(model: onnx.ModelProto, index: ModelIndex) -> dict[tuple[str, str], str]:
    """(graph path, value name) -> ``float[N,3]``, declared or inferred (best effort)."""
    from onnxlint.lsp.sourcemap import type_text

    out: dict[tuple[str, str], str] = {}
    for g in index.graphs:
        for name, vi in g.value_info.items():
            if vi.type.WhichOneof("value"):
                out[(g.path, name)] = type_text(vi.type)
        for name, init in g.initializers.items():
            from onnxlint.lsp.sourcemap import tensor_type_text

            out.setdefault((g.path, name), tensor_type_text(init))
    if sum(len(g.nodes) for g in index.graphs) > 20000:
        return out
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        return out
    for vi in (*inferred.graph.value_info, *inferred.graph.output):
        if vi.type.WhichOneof("value"):
            out.setdefault(("main", vi.name), type_text(vi.type))
    return out


def _root_location() -> object:
    from onnxlint.diagnostics import Location

    return Location()


def _one_line(exc: BaseException) -> str:
    raw = exc.args[0] if exc.args else exc
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return " ".join(text.split())[:400]


def config_files_for(path: Path) -> list[Path]:
    """Files whose change alters the configuration of ``path`` (for re-lint on change)."""
    out = []
    for folder in (path.parent, *path.parent.parents):
        out += [folder / "onnxlint.toml", folder / "pyproject.toml"]
    return out


__all__ = [
    "GRAPH_SCHEME",
    "ModelState",
    "analyse",
    "config_for",
    "graph_uri",
    "is_graph_uri",
    "load_file",
    "path_to_uri",
    "scan",
    "uri_to_path",
]
