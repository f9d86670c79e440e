"""Fixtures shared by the speed-mechanism tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from onnxlint.analyses import level1
from onnxlint.runtime import processes


@pytest.fixture
def restore() -> Iterator[None]:
    """Put the process-wide level-1 worker switches back as a CLI run starts with them
    (the ``-j`` pool's initializer and a serial run over several files change them)."""
    yield
    level1.set_early_start(True)
    level1.set_keep_spare(False)
    processes.set_reuse(False)
    processes.drop_spare()
