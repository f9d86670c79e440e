"""Where the declarative data (EP profiles, schemas, version tables) lives.

In a wheel the top-level ``rules/`` folder is installed as ``onnxlint/_data``;
in a source checkout (editable install, tests) it is read from ``rules/`` directly.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any


@cache
def data_dir() -> Path:
    here = Path(__file__).resolve().parent
    installed = here / "_data"
    if installed.is_dir():
        return installed
    return here.parent / "rules"


@cache
def load_json(relative: str) -> Any:
    """Load a JSON file shipped under the data folder (cached per process)."""
    with (data_dir() / relative).open(encoding="utf-8") as fh:
        return json.load(fh)
