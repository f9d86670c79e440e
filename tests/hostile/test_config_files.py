"""Configuration files are read like models: never a FIFO, a device or a huge file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def test_a_config_file_that_is_a_fifo_is_an_error_not_a_hang(tmp_path: Path) -> None:
    from onnxlint.config import ConfigError, load_file

    fifo = tmp_path / "onnxlint.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_file(fifo)


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    from onnxlint.config import ConfigError, load_file

    bad = tmp_path / "onnxlint.toml"
    bad.write_bytes(b"eps = ['\xff']\n")
    with pytest.raises(ConfigError):
        load_file(bad)
