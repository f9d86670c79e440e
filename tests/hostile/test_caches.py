"""Caches that cannot wedge a lint or answer across environments (issue #20, item 7).

A level-1 cache entry that was a FIFO hung the lint (``read_bytes`` blocks); a symlink
was followed; a cached graph skipped the loader's guards; the confirm cache never
pruned and its key did not say which interpreter and EP libraries produced it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint import cachefs
from onnxlint.analyses import level1
from onnxlint.analyses.level1 import cache as level1_cache
from onnxlint.confirm import cache as confirm_cache
from onnxlint.runtime.results import SessionResult
from tests.hostile import support as s


def _small() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _level1_key(model: onnx.ModelProto) -> tuple[str, dict[str, object]]:
    material = level1_cache.key_material(model.SerializeToString())
    if material is None:
        pytest.skip("onnxruntime is not installed")
    return level1_cache.cache_key(material), material


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_level1_entry_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    cache = level1_cache.Level1Cache(tmp_path / "cache")
    cache.folder.mkdir()
    key, material = _level1_key(_small())
    entry = cache.path(key)
    outside = tmp_path / "secret"
    if kind == "fifo":
        os.mkfifo(entry)  # reading it would block forever
    elif kind == "symlink":
        outside.write_bytes(b"not an entry\n")
        entry.symlink_to(outside)
    else:
        entry.mkdir()
    hit = cache.get(key, material)
    assert hit.graph is None
    assert hit.discarded is not None
    if kind == "symlink":
        assert outside.read_bytes() == b"not an entry\n"  # the target is never touched
        assert not entry.is_symlink()  # the link is discarded


def _forge(
    cache: level1_cache.Level1Cache, key: str, material: dict[str, object], payload: bytes
) -> None:
    header = {
        "schema": level1_cache.CACHE_SCHEMA,
        "key": material,
        "status": "ok",
        "note": level1.NOTE_OK,
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    cache.folder.mkdir(parents=True, exist_ok=True)
    cache.path(key).write_bytes(json.dumps(header).encode() + b"\n" + payload)


def test_a_cached_graph_goes_through_the_loader(tmp_path: Path) -> None:
    """An entry whose checksum matches but whose graph the loader refuses (nested past
    protobuf's decode depth) is discarded, not decoded."""
    cache = level1_cache.Level1Cache(tmp_path / "cache")
    key, material = _level1_key(_small())
    _forge(cache, key, material, s.nested_if_model(40))
    hit = cache.get(key, material)
    assert hit.graph is None
    assert hit.discarded is not None and "loader" in hit.discarded
    assert not cache.path(key).exists()


def test_a_valid_cached_graph_is_used(tmp_path: Path) -> None:
    cache = level1_cache.Level1Cache(tmp_path / "cache")
    key, material = _level1_key(_small())
    _forge(cache, key, material, _small().SerializeToString())
    hit = cache.get(key, material)
    assert hit.graph is not None and hit.graph[0] is not None
    assert hit.graph[0].graph.node[0].op_type == "Relu"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")
def test_an_entry_of_another_user_is_not_read(tmp_path: Path) -> None:
    cache = level1_cache.Level1Cache(tmp_path / "cache")
    key, material = _level1_key(_small())
    _forge(cache, key, material, _small().SerializeToString())
    os.chown(cache.path(key), 12345, 12345)
    hit = cache.get(key, material)
    assert hit.graph is None and hit.discarded == "owned by another user"


def test_cache_folders_are_private_and_follow_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "c"))
    assert cachefs.cache_root() == tmp_path / "c"
    assert confirm_cache.default_cache_dir() == tmp_path / "c" / "confirm"
    assert level1_cache.default_cache_dir() == tmp_path / "c" / "level1"
    cache = confirm_cache.ResultCache(confirm_cache.default_cache_dir())
    cache.put("k", {"m": 1}, [SessionResult(request_id="r", status="ok", provider="CPU")])
    assert (cache.folder.stat().st_mode & 0o777) == 0o700


def test_rule_docs_follow_the_cache_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.lsp.server import write_rule_docs
    from onnxlint.version import __version__

    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = write_rule_docs()
    assert folder == tmp_path / "c" / "rule-docs" / __version__
    assert (folder / "OL101.md").read_text("utf-8").strip()
    assert not (tmp_path / "xdg").exists()


def test_confirm_cache_prunes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confirm_cache, "CACHE_MAX_ENTRIES", 2)
    cache = confirm_cache.ResultCache(tmp_path)
    result = [SessionResult(request_id="r", status="ok", provider="CPU")]
    for i in range(3):
        cache.put(f"k{i}", {"m": i}, result)
        os.utime(cache.path(f"k{i}"), ns=(i * 10**9, i * 10**9))  # k0 the oldest
    cache.put("k3", {"m": 3}, result)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["k2.json", "k3.json"]


def test_confirm_entry_that_is_a_fifo(tmp_path: Path) -> None:
    cache = confirm_cache.ResultCache(tmp_path)
    os.mkfifo(cache.path("k"))
    got = cache.get("k", {"m": 1})
    assert got.results is None and got.discarded is not None


def test_confirm_key_names_the_interpreter_and_ep_libraries(tmp_path: Path) -> None:
    """Two environments with the same package versions must not share confirm results."""
    ident = confirm_cache._runner_versions_uncached(sys.executable)
    assert ident is not None
    assert ident["executable"] == os.path.realpath(sys.executable)
    assert ident["prefix"] == os.path.realpath(sys.prefix)
    if "onnxruntime" in ident:
        libs = ident["libs"]["onnxruntime"]
        assert libs and all(lib[2] for lib in libs)  # each native library by its hash
    other = dict(ident, prefix=str(tmp_path / "another-venv"))
    assert confirm_cache.cache_key({"runner": ident}) != confirm_cache.cache_key({"runner": other})
