"""The input types of ORT's com.microsoft schemas (OL207) are read from ORT once per build
and kept in the cache folder: a later process answers from the file without importing
onnxruntime (about 0.3 s with the schemas)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onnxlint.analyses import ort_contrib_schemas

PROBE = (
    "import sys; from onnxlint.analyses import ort_contrib_schemas as s; "
    "print(sorted(s.allowed_input_types('QGemm', 1, 6)), "
    "s.allowed_input_types('NoSuchOp', 1, 0), 'onnxruntime' in sys.modules)"
)


def _probe(cache: Path, **env: str) -> str:
    import os

    pytest.importorskip("onnxruntime")
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=cache,
        env={**os.environ, "ONNXLINT_CACHE_DIR": str(cache), "ONNXLINT_NO_CACHE": "0", **env},
    )
    return out.stdout.strip()


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "ort-contrib-inputs").glob("*.json"))


ASKED = "['tensor(int32)'] None True"
FROM_FILE = "['tensor(int32)'] None False"


def test_a_second_process_reads_the_table_without_importing_onnxruntime(tmp_path: Path) -> None:
    assert _probe(tmp_path) == ASKED  # asked ORT, stored the table
    (entry,) = _entries(tmp_path)
    record = json.loads(entry.read_text())
    assert record["schema"] == ort_contrib_schemas.CONTRIB_SCHEMA and "QGemm" in record["ops"]
    assert _probe(tmp_path) == FROM_FILE  # same answers, from the file


def test_the_cache_switch_keeps_the_table_off_the_disk(tmp_path: Path) -> None:
    assert _probe(tmp_path, ONNXLINT_NO_CACHE="1") == ASKED
    assert _entries(tmp_path) == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: {**r, "schema": "other/1"},
        lambda r: {**r, "ort": {**r["ort"], "version": "0.0.1"}},
        lambda r: {**r, "ops": {"QGemm": [["1", [], False]]}},
        lambda r: {**r, "ops": {"QGemm": 3}},
    ],
    ids=["schema", "other-build", "not-an-int", "not-revisions"],
)
def test_an_entry_that_does_not_answer_for_this_build_is_asked_again(
    tmp_path: Path, damage: object
) -> None:
    _probe(tmp_path)
    (entry,) = _entries(tmp_path)
    record = json.loads(entry.read_text())
    entry.write_text(json.dumps(damage(record)))  # type: ignore[operator]
    assert _probe(tmp_path) == ASKED  # ORT asked again
    assert json.loads(entry.read_text()) == record  # and the entry rewritten
