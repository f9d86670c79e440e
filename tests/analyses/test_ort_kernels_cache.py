"""The CPU kernel table of the installed onnxruntime is read from ORT once per build and
kept in the cache folder: a later process answers from the file without importing
onnxruntime (issue 19: about 0.15 s of a lint of a model with an unclaimed function op)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onnxlint.analyses import ort_kernels

PROBE = (
    "import sys; from onnxlint.analyses import ort_kernels as k; "
    "print(k.cpu_has_kernel('Relu', 14), k.cpu_has_kernel('Mish', 18), "
    "'onnxruntime' in sys.modules)"
)


def _probe(cache: Path, **env: str) -> list[str]:
    import os

    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=cache,
        env={**os.environ, "ONNXLINT_CACHE_DIR": str(cache), "ONNXLINT_NO_CACHE": "0", **env},
    )
    return out.stdout.split()


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "ort-kernels").glob("*.json"))


def test_a_second_process_reads_the_table_without_importing_onnxruntime(tmp_path: Path) -> None:
    assert _probe(tmp_path) == ["True", "False", "True"]  # asked ORT, stored the table
    (entry,) = _entries(tmp_path)
    record = json.loads(entry.read_text())
    assert record["schema"] == ort_kernels.KERNELS_SCHEMA and "Relu" in record["kernels"]
    assert _probe(tmp_path) == ["True", "False", "False"]  # same answers, from the file


def test_the_cache_switch_keeps_the_table_off_the_disk(tmp_path: Path) -> None:
    assert _probe(tmp_path, ONNXLINT_NO_CACHE="1") == ["True", "False", "True"]
    assert _entries(tmp_path) == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: {**r, "schema": "other/1"},
        lambda r: {**r, "ort": {**r["ort"], "version": "0.0.1"}},
        lambda r: {**r, "kernels": {"Relu": [["1", 14]]}},
        lambda r: {**r, "kernels": {"Relu": 3}},
    ],
    ids=["schema", "other-build", "not-ints", "not-ranges"],
)
def test_an_entry_that_does_not_answer_for_this_build_is_asked_again(
    tmp_path: Path, damage: object
) -> None:
    _probe(tmp_path)
    (entry,) = _entries(tmp_path)
    record = json.loads(entry.read_text())
    entry.write_text(json.dumps(damage(record)))  # type: ignore[operator]
    assert _probe(tmp_path) == ["True", "False", "True"]  # ORT asked again
    assert json.loads(entry.read_text()) == record  # and the entry rewritten
