"""Fuzzing the confirm path: fuzzed models through ``--ep cpu --confirm`` (real ORT
CPU sessions in the isolated worker).

Invariants, on top of those of ``test_fuzz_models.check_input`` (no escaped exception,
exit code, no OL099 or allocation failure, bounded time and memory): after each input no
worker process of this process is alive and none of its private temporary folders
(``onnxlint-*-PID-*``, one holds a copy of the model) is left. A session that ORT refuses
is OL903, an error, which the exit-code invariant already accounts for.

Each input whose model loads costs a worker (about a second), so the budget is
``ONNXLINT_FUZZ_EXAMPLES`` inputs in all (default 25), drawn from ``corpus.examples``
with every tenth replaced by an unmutated seed (sessions that ORT does create).
Worker crashes, hangs and stops are injected deterministically in
``tests/hostile/test_confirm_faults.py``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from onnxlint.runtime import processes
from tests.fuzz import corpus
from tests.fuzz.test_fuzz_models import ARTIFACTS, EXAMPLES, LAST_CODES, check_input
from tests.hostile.support import own_peak_rss_mb

pytestmark = [
    pytest.mark.fuzz,
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="process scan: Linux"),
]


def _children() -> list[int]:
    """Live child processes of this process (workers start in their own session, but
    stay our children)."""
    pids: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


def _our_temp_dirs() -> list[str]:
    mine = re.compile(rf"onnxlint-[a-z0-9]+-{os.getpid()}-")
    return sorted(n for n in os.listdir(tempfile.gettempdir()) if mine.match(n))


def test_fuzzed_models_through_confirm() -> None:
    stats: dict[str, Any] = {"inputs": 0, "exit_codes": {}, "confirm_codes": {}}
    start = time.perf_counter()
    seeds = corpus.seeds()
    for i, (_name, data) in enumerate(corpus.examples(EXAMPLES, seed=EXAMPLES + 1)):
        if i % 10 == 9:  # now and then a seed as it is: sessions that ORT creates
            data = seeds[(i // 10) % len(seeds)][1]
        rc = check_input(data, eps=("cpu",), extra=("--confirm", "--no-cache"))
        for code in LAST_CODES:
            if code.startswith("OL9"):
                stats["confirm_codes"][code] = stats["confirm_codes"].get(code, 0) + 1
        processes.drop_spare()  # a prewarmed worker nobody took is not a leak, but not ours to keep
        assert _children() == [], "a worker outlived its lint"
        assert _our_temp_dirs() == [], "a private temp folder outlived its lint"
        assert not processes._WORKERS
        stats["inputs"] += 1
        stats["exit_codes"][str(rc)] = stats["exit_codes"].get(str(rc), 0) + 1
    stats["seconds"] = round(time.perf_counter() - start, 1)
    stats["peak_rss_mb"] = round(own_peak_rss_mb(), 1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "confirm-stats.json").write_text(json.dumps(stats, indent=2))
    assert stats["inputs"] == EXAMPLES
