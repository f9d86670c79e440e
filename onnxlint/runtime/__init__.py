"""Real ONNX Runtime sessions, isolated in worker processes.

``client.run_sessions`` creates sessions on an execution provider in a worker
subprocess (``_worker.py``, stdlib + onnxruntime only) so that an EP crash,
hang or OOM becomes a result instead of ending the caller; ``runners`` picks
the interpreter per EP; ``normalise`` maps ORT's reported assignment back onto
the source graph. Importing this package does not import onnxruntime, nor any of
its modules: the public names are loaded on first use, so that a lint that only
asks ``runtime.identity`` (every lint with an accelerator EP, warm) does not load the
client, the protocol and the process management it never runs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from onnxlint.runtime.client import SessionRequest, optimize_model, run_sessions
    from onnxlint.runtime.discovery import discover
    from onnxlint.runtime.results import AssignedNode, Fallback, NodeVerdict, SessionResult
    from onnxlint.runtime.runners import EpSpec, resolve_runner

#: public name -> the module that defines it
_EXPORTS = {
    "AssignedNode": "results",
    "EpSpec": "runners",
    "Fallback": "results",
    "NodeVerdict": "results",
    "SessionRequest": "client",
    "SessionResult": "results",
    "discover": "discovery",
    "optimize_model": "client",
    "resolve_runner": "runners",
    "run_sessions": "client",
}

__all__ = [
    "AssignedNode",
    "EpSpec",
    "Fallback",
    "NodeVerdict",
    "SessionRequest",
    "SessionResult",
    "discover",
    "optimize_model",
    "resolve_runner",
    "run_sessions",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
