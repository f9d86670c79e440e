"""Real ONNX Runtime sessions, isolated in worker processes.

``client.run_sessions`` creates sessions on an execution provider in a worker
subprocess (``_worker.py``, stdlib + onnxruntime only) so that an EP crash,
hang or OOM becomes a result instead of ending the caller; ``runners`` picks
the interpreter per EP; ``normalise`` maps ORT's reported assignment back onto
the source graph. Importing this package does not import onnxruntime.
"""

from onnxlint.runtime.client import SessionRequest, optimize_model, run_sessions
from onnxlint.runtime.discovery import discover
from onnxlint.runtime.results import AssignedNode, Fallback, NodeVerdict, SessionResult
from onnxlint.runtime.runners import EpSpec, resolve_runner

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
