"""Where the declarative data (EP profiles, schemas, version tables) lives.

In a wheel the top-level ``rules/`` folder is installed as ``onnxlint/_data``;
in a source checkout (editable install, tests) it is read from ``rules/`` directly.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# Only ``os`` at import: the CLI's replayed output keys on this folder's files before
# anything else is imported (:mod:`onnxlint.cli.replay`).
_FOLDER: str | None = None
_DIR: Path | None = None
_JSON: dict[str, Any] = {}


def data_folder() -> str:
    """The data folder, as text (the installed ``_data`` when there is one)."""
    global _FOLDER
    if _FOLDER is None:
        here = os.path.dirname(os.path.realpath(__file__))
        installed = os.path.join(here, "_data")
        _FOLDER = (
            installed if os.path.isdir(installed) else os.path.join(os.path.dirname(here), "rules")
        )
    return _FOLDER


def data_dir() -> Path:
    global _DIR
    if _DIR is None:
        from pathlib import Path

        _DIR = Path(data_folder())
    return _DIR


def load_json(relative: str) -> Any:
    """Load a JSON file shipped under the data folder (cached per process)."""
    if relative not in _JSON:
        import json

        with (data_dir() / relative).open(encoding="utf-8") as fh:
            _JSON[relative] = json.load(fh)
    return _JSON[relative]
