"""Pre-export check for PyTorch modules, importable as ``onnxlint.torch``.

``check_export(module, example_args, ep="qnn")`` exports the module to ONNX in
memory (nothing is written to disk), lints the result for the target EPs and
returns the report. Without an explicit ``opset`` it exports at each of the
exporter's candidate opsets and recommends the one that leaves the fewest EP
problems: most "unsupported operator" failures on a device are opset
mismatches that a different ``opset_version`` fixes, not missing features.

Both exporters are supported: the TorchScript-based one (``dynamo=False``)
and the ``torch.export``-based one (``dynamo=True``, needs ``onnxscript``).
``dynamo=None`` picks the dynamo exporter when onnxscript is installed and
falls back to TorchScript when tracing fails.

torch is imported lazily: importing this module never imports torch, so the
rest of onnxlint stays usable (and fast to start) without it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx

from onnxlint import progress
from onnxlint.config import Config
from onnxlint.report import Report

EXPORTER_TORCHSCRIPT = "torchscript"
EXPORTER_DYNAMO = "dynamo"
#: lowest opset tried for the TorchScript exporter: below 11 many common ops
#: (Resize, dynamic Slice/Pad, Range) are missing or deprecated, so older
#: opsets are never the better recommendation for an EP today.
TORCHSCRIPT_MIN_CANDIDATE = 11
#: the dynamo exporter translates at opset 18 and only converts downwards, often
#: unsuccessfully (it then keeps 18), so lower opsets are not real candidates.
DYNAMO_MIN_CANDIDATE = 18


class TorchNotAvailable(ImportError):
    """torch (or onnxscript for the dynamo exporter) is not installed."""


class ExportFailed(RuntimeError):
    """The module could not be exported at any candidate opset; the message says why per opset."""


@dataclass
class OpsetTrial:
    """One export attempt at one opset and what the lint found in it."""

    opset: int
    exporter: str
    #: the ai.onnx opset the exported model really imports (the dynamo exporter may differ)
    exported_opset: int | None = None
    errors: int = 0
    warnings: int = 0
    failure: str | None = None
    report: Report | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.failure is None and self.report is not None and not self.report.fatal

    def to_dict(self) -> dict[str, Any]:
        return {
            "opset": self.opset,
            "exporter": self.exporter,
            "exported_opset": self.exported_opset,
            "errors": self.errors,
            "warnings": self.warnings,
            "failure": self.failure,
        }


@dataclass
class ExportReport(Report):
    """A lint report of an in-memory export, plus which opset to export at and why."""

    exporter: str = ""
    #: the opset the linted model was exported at (the recommended one when searching)
    opset: int | None = None
    #: the exporter's own default opset, for comparison
    default_opset: int | None = None
    #: every opset tried, in the order tried (one entry when ``opset`` was given)
    trials: list[OpsetTrial] = field(default_factory=list)
    #: the exported model that was linted (kept in memory; save it if you want it)
    model: onnx.ModelProto | None = field(default=None, repr=False)

    @property
    def recommended_opset(self) -> int | None:
        return self.opset if len(self.trials) > 1 else None

    def recommendation(self) -> str:
        """One sentence: which opset to export at, compared with the exporter default."""
        if self.opset is None:
            return "no opset exported successfully"
        ok = [t for t in self.trials if t.ok]
        if len(self.trials) <= 1:
            return f"exported with the {self.exporter} exporter at opset {self.opset}"
        chosen = next(t for t in ok if t.opset == self.opset)
        text = (
            f"export with opset_version={self.opset} ({self.exporter} exporter): "
            f"{_count(chosen.errors, 'error')}, {_count(chosen.warnings, 'warning')} "
            f"for {', '.join(self.eps) or 'the default EPs'}"
        )
        default = next((t for t in ok if t.opset == self.default_opset), None)
        if default is not None and default.opset != self.opset:
            text += (
                f"; the exporter default opset {default.opset} leaves "
                f"{_count(default.errors, 'error')}, {_count(default.warnings, 'warning')}"
            )
        failed = len(self.trials) - len(ok)
        if failed:
            text += f"; {failed} of {len(self.trials)} candidate opsets did not export"
        return text

    def summary(self) -> str:
        return f"{super().summary()}; {self.recommendation()}"

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["export"] = {
            "exporter": self.exporter,
            "opset": self.opset,
            "default_opset": self.default_opset,
            "recommended_opset": self.recommended_opset,
            "recommendation": self.recommendation(),
            "trials": [t.to_dict() for t in self.trials],
        }
        return out


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


# -- torch discovery ----------------------------------------------------------------


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise TorchNotAvailable(
            "onnxlint.torch needs PyTorch: install its CPU wheel first (pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu; onnxlint never needs CUDA), then "
            "pip install 'onnxlint[torch]' for onnxscript"
        ) from exc
    return torch


def dynamo_available() -> bool:
    """True when the dynamo exporter can run here (it needs onnxscript)."""
    return importlib.util.find_spec("onnxscript") is not None


def _constants() -> tuple[int, int, int]:
    """(TorchScript max opset, dynamo max opset, exporter default opset) for this torch."""
    torch = _torch()
    try:
        from torch.onnx import _constants as c
    except ImportError:  # pragma: no cover - very old torch
        return 17, 17, 17
    max_opset = int(getattr(c, "ONNX_MAX_OPSET", 17))
    ts_max = int(getattr(c, "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET", max_opset))
    default = int(getattr(c, "ONNX_DEFAULT_OPSET", ts_max))
    del torch
    return ts_max, max_opset, default


def exporter_opsets(exporter: str) -> list[int]:
    """The opsets worth trying with ``exporter`` on the installed torch, newest last."""
    ts_max, max_opset, _ = _constants()
    if exporter == EXPORTER_TORCHSCRIPT:
        return list(range(TORCHSCRIPT_MIN_CANDIDATE, ts_max + 1))
    return list(range(DYNAMO_MIN_CANDIDATE, max_opset + 1))


def default_opset(exporter: str) -> int:
    ts_max, _, default = _constants()
    # the TorchScript exporter cannot go past its own maximum, whatever the default says
    return min(default, ts_max) if exporter == EXPORTER_TORCHSCRIPT else default


# -- exporting -------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the exporters' progress lines and deprecation warnings during a check.

    The check exports many times; the user asked for a lint report, not for
    one copy of the exporter's chatter per candidate opset.
    """
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "onnxscript")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.redirect_stdout(io.StringIO()):
                yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _arg_names(module: Any, n_args: int) -> list[str]:
    """Names of the first ``n_args`` positional parameters of ``module.forward``."""
    try:
        params = [
            p.name
            for p in inspect.signature(module.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError, AttributeError):
        params = []
    names = params[:n_args]
    return names + [f"input_{i}" for i in range(len(names), n_args)]


def dynamic_axes_from_shapes(
    dynamic_shapes: Mapping[str, Any] | Sequence[Any] | None, arg_names: Sequence[str]
) -> dict[str, dict[int, str]]:
    """Translate ``torch.export``-style ``dynamic_shapes`` to TorchScript ``dynamic_axes``.

    Accepts a mapping keyed by argument name or a sequence by position; each
    entry maps dim index -> name (``str``), ``torch.export.Dim`` or any marker,
    or is a per-dim sequence where ``None`` means static.
    """
    if not dynamic_shapes:
        return {}
    if isinstance(dynamic_shapes, Mapping):
        items = list(dynamic_shapes.items())
    else:
        items = [
            (arg_names[i] if i < len(arg_names) else f"input_{i}", spec)
            for i, spec in enumerate(dynamic_shapes)
        ]
    axes: dict[str, dict[int, str]] = {}
    for arg, spec in items:
        if spec is None:
            continue
        dims = spec.items() if isinstance(spec, Mapping) else enumerate(spec)
        named = {}
        for dim, marker in dims:
            if marker is None:
                continue
            if isinstance(marker, str):
                named[int(dim)] = marker
            else:
                # torch.export.Dim objects carry a name; markers like Dim.AUTO do not
                name = getattr(marker, "__name__", None)
                named[int(dim)] = (
                    name if isinstance(name, str) and name.isidentifier() else f"{arg}_dim{dim}"
                )
        if named:
            axes[str(arg)] = named
    return axes


def _as_tuple(example_args: Any) -> tuple[Any, ...]:
    return example_args if isinstance(example_args, tuple) else (example_args,)


def export_to_proto(
    module: Any,
    example_args: Any,
    *,
    opset: int,
    exporter: str,
    dynamic_shapes: Mapping[str, Any] | Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> onnx.ModelProto:
    """Export ``module`` at ``opset`` entirely in memory and return the ModelProto."""
    torch = _torch()
    args = _as_tuple(example_args)
    with _quiet():
        if exporter == EXPORTER_TORCHSCRIPT:
            names = _arg_names(module, len(args))
            buf = io.BytesIO()  # a file object: the TorchScript exporter writes nothing to disk
            torch.onnx.export(
                module,
                args,
                buf,
                kwargs=dict(kwargs) if kwargs else None,
                dynamo=False,
                opset_version=opset,
                input_names=names,
                dynamic_axes=dynamic_axes_from_shapes(dynamic_shapes, names) or None,
            )
            return onnx.load_model_from_string(buf.getvalue())
        if not dynamo_available():
            raise TorchNotAvailable(
                "the dynamo exporter needs onnxscript: pip install 'onnxlint[torch]'"
            )
        # f=None: the exporter returns an ONNXProgram and writes nothing (no report,
        # no dumped program, no external data)
        program = torch.onnx.export(
            module,
            args,
            kwargs=dict(kwargs) if kwargs else None,
            dynamo=True,
            opset_version=opset,
            dynamic_shapes=dynamic_shapes,
            verbose=False,
            report=False,
            dump_exported_program=False,
        )
        return program.model_proto


def _ai_onnx_opset(model: onnx.ModelProto) -> int | None:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return None


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _score(trial: OpsetTrial, default: int) -> tuple[int, int, int, int]:
    # fewest errors, then fewest warnings; on a tie prefer the exporter's default
    # (least surprise for the user), then the newest opset
    return (trial.errors, trial.warnings, 0 if trial.opset == default else 1, -trial.opset)


def _resolve_exporter(dynamo: bool | None) -> list[str]:
    """Exporters to try in order for ``dynamo`` (None: dynamo when available, then TorchScript)."""
    if dynamo is True:
        return [EXPORTER_DYNAMO]
    if dynamo is False:
        return [EXPORTER_TORCHSCRIPT]
    return [EXPORTER_DYNAMO, EXPORTER_TORCHSCRIPT] if dynamo_available() else [EXPORTER_TORCHSCRIPT]


def check_export(
    module: Any,
    example_args: Any,
    ep: str | Sequence[str] | None = "qnn",
    opset: int | None = None,
    dynamic_shapes: Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    dynamo: bool | None = None,
    kwargs: Mapping[str, Any] | None = None,
    candidate_opsets: Sequence[int] | None = None,
    config: Config | Mapping[str, Any] | None = None,
) -> ExportReport:
    """Export ``module`` in memory, lint it for ``ep`` and return the report.

    ``ep`` is an EP or a list in priority order; None means the EPs given to
    ``pytest --onnxlint-ep`` (when running under the plugin), else ``"qnn"``.
    ``opset=None`` exports at every candidate opset of the exporter (or at
    ``candidate_opsets``) and returns the report of the one with the fewest
    EP problems (errors first, then warnings); ``report.trials`` holds every
    attempt and ``report.recommendation()`` says which opset to export at.
    ``dynamo`` chooses the exporter (None: dynamo when onnxscript is
    installed, falling back to TorchScript if tracing fails).

    Raises ``TorchNotAvailable`` without torch and ``ExportFailed`` when no
    opset exports at all; lint findings never raise.
    """
    from onnxlint import config as config_mod
    from onnxlint.engine import lint

    _torch()
    from onnxlint.testing import resolve_eps

    # None: the EPs of ``pytest --onnxlint-ep`` when under the plugin, else qnn
    eps = resolve_eps(ep)
    cfg = config_mod.from_mapping(dict(config)) if isinstance(config, Mapping) else config
    cfg = cfg or Config()
    name = type(module).__name__
    failures: list[str] = []
    for exporter in _resolve_exporter(dynamo):
        default = default_opset(exporter)
        opsets = (
            [opset] if opset is not None else list(candidate_opsets or exporter_opsets(exporter))
        )
        trials: list[OpsetTrial] = []
        # only the best model so far is kept: a big module times N opsets would not fit
        best: tuple[OpsetTrial, onnx.ModelProto] | None = None
        for n in opsets:
            trial = OpsetTrial(opset=n, exporter=exporter)
            trials.append(trial)
            progress.note(f"exporting {name} with {exporter} at opset {n}")
            try:
                proto = export_to_proto(
                    module,
                    example_args,
                    opset=n,
                    exporter=exporter,
                    dynamic_shapes=dynamic_shapes,
                    kwargs=kwargs,
                )
            except TorchNotAvailable:
                raise
            except Exception as exc:  # any exporter failure is a finding about this opset
                trial.failure = _one_line(exc)
                continue
            trial.exported_opset = _ai_onnx_opset(proto)
            if trial.exported_opset is not None and trial.exported_opset != n:
                # the dynamo exporter fell back to another opset: not a model at this one
                trial.failure = f"the exporter produced opset {trial.exported_opset} instead"
                continue
            report = lint(proto, eps=eps, config=cfg, path_label=f"<torch {name} opset {n}>")
            trial.report = report
            trial.errors = len(report.errors)
            trial.warnings = len(report.warnings)
            if trial.ok and (best is None or _score(trial, default) < _score(best[0], default)):
                best = (trial, proto)
        if best is None:
            failures += [f"{exporter} opset {t.opset}: {t.failure}" for t in trials]
            continue
        chosen, model = best
        base = chosen.report
        assert base is not None
        return ExportReport(
            path=base.path,
            diagnostics=base.diagnostics,
            fatal=base.fatal,
            eps=base.eps,
            content_hash=base.content_hash,
            partitions=base.partitions,
            assignment=base.assignment,
            stats=base.stats,
            exporter=exporter,
            opset=chosen.opset,
            default_opset=default,
            trials=trials,
            model=model,
        )
    raise ExportFailed(
        f"{name} could not be exported to ONNX:\n  " + "\n  ".join(failures or ["no opset tried"])
    )
