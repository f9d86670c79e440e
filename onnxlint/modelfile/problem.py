"""What the reader found wrong with a model file, as a plain record.

The reader knows codes and message ids, never the rules' classes or their wording:
``onnxlint.rules.load`` turns each record into its rule's diagnostic, and
``onnxlint.loader.load`` does that for every model a front end loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onnxlint.diagnostics import Location


@dataclass(frozen=True)
class LoadProblem:
    """One load finding: the load rule's code, its message id and the message's arguments."""

    code: str
    message_id: str
    args: dict[str, Any] = field(default_factory=dict)
    location: Location = field(default_factory=Location)
