"""A model copy that a worker reads once goes to a memory-backed folder when one can hold
it (issue 19: writing BERT-base's 416 MB to an ext4 ``/tmp`` cost a cold lint 1.4 s,
to tmpfs 0.2-0.3 s), never when the user named a temporary folder, and never past a
share of the folder's free space and of the free memory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from onnxlint.analyses import level1
from onnxlint.runtime import processes
from tests.test_level1_cache import small_model

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tmpfs (Linux)")


@pytest.fixture
def shm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in memory folder, with no temporary folder named by the environment."""
    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setattr(processes, "MEMORY_FOLDER", folder)
    for var in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "disk"))
    (tmp_path / "disk").mkdir()
    return folder


@linux
def test_a_copy_that_fits_goes_to_memory(shm: Path) -> None:
    path = processes.private_temp_dir("level1", in_memory=1 << 20)
    try:
        assert path.parent == shm
        assert oct(path.stat().st_mode & 0o777) == "0o700"
    finally:
        processes.remove_temp_dir(path)
    assert not any(shm.iterdir())


@linux
def test_nothing_to_copy_or_a_copy_too_large_stays_on_disk(shm: Path) -> None:
    free = os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize
    for size in (0, int(free * processes.MEMORY_SHARE) + 1):
        path = processes.private_temp_dir("level1", in_memory=size)
        try:
            assert path.parent != shm, size
        finally:
            processes.remove_temp_dir(path)


@linux
def test_a_temporary_folder_the_user_named_wins(
    shm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "disk"))
    assert processes.memory_folder(1024) is None


def test_no_memory_folder_elsewhere(shm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert processes.memory_folder(1024) is None


@linux
def test_the_level1_job_gives_orts_copy_from_memory(
    shm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(level1.NO_CACHE_ENV, "1")
    folders: list[Path] = []
    made = processes.private_temp_dir

    def spy(kind: str, in_memory: int = 0) -> Path:
        folders.append(made(kind, in_memory))
        return folders[-1]

    monkeypatch.setattr(processes, "private_temp_dir", spy)
    job = level1.Level1Job(small_model(), use_cache=False).start()
    try:
        graph, note = job.result()
    finally:
        job.close()
    assert graph is not None and note == level1.NOTE_OK
    assert [f.parent for f in folders if f.name.startswith("onnxlint-level1-")] == [shm]
    assert not any(shm.iterdir())  # removed with the job


@linux
def test_a_stale_memory_folder_is_swept(shm: Path) -> None:
    dead = shm / "onnxlint-level1-999999999-abc"
    dead.mkdir()
    processes._sweep_stale_temp_dirs(shm)
    assert not dead.exists()


@linux
def test_the_share_of_available_memory_decides(shm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_available_memory", lambda: 4 << 20)
    assert processes.memory_folder(1 << 20) == str(shm)  # a quarter of 4 MiB
    assert processes.memory_folder((1 << 20) + 1) is None
    monkeypatch.setattr(processes, "_available_memory", lambda: None)
    assert processes.memory_folder(1) is None


@linux
def test_available_memory_is_read() -> None:
    available = processes._available_memory()
    assert available is not None and available > 0
