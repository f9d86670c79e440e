"""The CLI's report cache (``onnxlint.report_cache``): a file linted again by the same
command is read back, and only while everything its report depends on is unchanged."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint import engine, lintdeps, report_cache
from onnxlint.config import Config
from onnxlint.diagnostics import Location
from tests.conftest import REPO, light_models, run_cli


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(folder))
    monkeypatch.delenv("ONNXLINT_NO_CACHE", raising=False)
    return folder


def _entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / report_cache.FOLDER).glob("*.report"))


def _model(path: Path, *, relu: bool = True, batch: str | int = "batch") -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])
    node = helper.make_node("Relu" if relu else "Sigmoid", ["x"], ["y"], name="act")
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)
    return path


def _external_model(folder: Path) -> Path:
    """A MatMul whose weight (4x4 float) is in ``w.bin`` beside the model."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "64")):
        w.external_data.add(key=k, value=v)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g", [x], [y], [w]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (folder / "w.bin").write_bytes(bytes(64))
    path = folder / "ext.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _lint_in_fresh_process(*args: str) -> tuple[str, bool]:
    """stdout of ``onnxlint ARGS`` in a new interpreter, and whether it imported onnx."""
    code = (
        "import sys\n"
        "from onnxlint.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('IMPORTED-ONNX' if 'onnx' in sys.modules else 'NO-ONNX')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )
    return done.stdout, "IMPORTED-ONNX" in done.stderr


def test_an_unchanged_file_is_read_back_without_onnx(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    first, imported = _lint_in_fresh_process(str(model), "--ep", "qnn", "--format", "json")
    assert imported and len(_entries(cache_dir)) == 1
    again, imported = _lint_in_fresh_process(str(model), "--ep", "qnn", "--format", "json")
    assert not imported  # read back: no parse, no rules
    assert again == first
    assert json.loads(again)["files"][0]["path"] == str(model)
    text, _ = _lint_in_fresh_process(str(model), "--ep", "qnn")  # another format, same entry
    fresh = run_cli(str(model), "--ep", "qnn", "--no-cache").stdout
    assert text == fresh and len(_entries(cache_dir)) == 1


def test_what_the_report_depends_on_gets_another_entry(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    dynamic = run_cli(str(model), "--ep", "qnn", "--format", "json").stdout
    # the model's bytes: pinned dims give other findings, read from a new entry
    _model(model, batch=1)
    pinned = run_cli(str(model), "--ep", "qnn", "--format", "json").stdout
    assert pinned != dynamic
    assert pinned == run_cli(str(model), "--ep", "qnn", "--format", "json", "--no-cache").stdout
    # the configuration: another EP, another selection
    cpu = run_cli(str(model), "--ep", "cpu", "--format", "json").stdout
    assert json.loads(cpu)["files"][0]["eps"] != json.loads(pinned)["files"][0]["eps"]
    run_cli(str(model), "--ep", "qnn", "--format", "json", "--select", "OL1")
    # the name the file was given: reports quote it
    os.symlink(model, tmp_path / "alias.onnx")
    alias = run_cli(str(tmp_path / "alias.onnx"), "--ep", "qnn", "--format", "json").stdout
    assert json.loads(alias)["files"][0]["path"] == str(tmp_path / "alias.onnx")
    assert len(_entries(cache_dir)) == 5


def test_a_changed_external_data_file_is_seen(tmp_path: Path, cache_dir: Path) -> None:
    model = _external_model(tmp_path)
    codes = lambda out: {d["code"] for d in json.loads(out)["files"][0]["diagnostics"]}  # noqa: E731
    whole = run_cli(str(model), "--ep", "cpu", "--format", "json").stdout
    assert "OL012" not in codes(whole)
    entry = json.loads(_entries(cache_dir)[0].read_bytes().partition(b"\n")[0])
    assert str((tmp_path / "w.bin").resolve()) in {str(Path(p).resolve()) for p in entry["files"]}
    (tmp_path / "w.bin").write_bytes(bytes(16))  # the weight no longer fits in the file
    short = run_cli(str(model), "--ep", "cpu", "--format", "json").stdout
    assert "OL012" in codes(short)
    (tmp_path / "w.bin").unlink()
    assert "OL010" in codes(run_cli(str(model), "--ep", "cpu", "--format", "json").stdout)


def test_no_cache_and_html_keep_nothing(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path / "m.onnx")
    assert run_cli(str(model), "--ep", "qnn", "--no-cache").returncode in (0, 1)
    assert run_cli(str(model), "--ep", "qnn", "--html", str(tmp_path / "r.html")).returncode in (
        0,
        1,
    )
    assert (tmp_path / "r.html").stat().st_size > 0
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    run_cli(str(model), "--ep", "qnn")
    assert _entries(cache_dir) == []


def _slot(model: Path) -> report_cache.Slot:
    slot = report_cache.slot_for(model, Config(eps=("qnn",)))
    assert slot is not None
    return slot


def test_a_volatile_report_is_not_kept(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    slot = _slot(model)
    with lintdeps.recording() as deps:
        report = engine.lint(model, eps=["qnn"], path_label=str(model), partition_summary=True)
        lintdeps.volatile("a worker timed out")
    assert slot.put(report, deps) is False and _entries(cache_dir) == []
    with lintdeps.recording() as deps:
        report = engine.lint(model, eps=["qnn"], path_label=str(model), partition_summary=True)
    assert slot.put(report, deps) is True
    got = slot.get()
    assert got is not None and got.to_dict() == report.to_dict()
    assert all(getattr(p, "graph", None) is None for p in got.partitions)


def test_a_crashing_rule_makes_the_lint_volatile() -> None:
    class Crashing:
        code, name = "OL999", "crashes"

        def check(self, ctx: object) -> None:
            raise MemoryError("no memory left")

    class Ctx:
        emitted: list[object] = []

        def emit(self, d: object) -> None:
            self.emitted.append(d)

    ctx = Ctx()
    with lintdeps.recording() as deps:
        try:
            Crashing().check(ctx)
        except MemoryError as exc:
            engine._crashed(ctx, Crashing(), exc, Location())  # type: ignore[arg-type]
    assert ctx.emitted and deps.volatile == ["rule OL999 crashed"]


def test_a_model_rewritten_during_the_lint_is_not_kept(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    slot = _slot(model)
    with lintdeps.recording() as deps:
        report = engine.lint(model, eps=["qnn"], path_label=str(model))
    _model(model, relu=False)  # another writer, between the hash and the store
    assert slot.put(report, deps) is False


def _rewrite_payload(entry: Path, payload: bytes) -> None:
    head = json.loads(entry.read_bytes().partition(b"\n")[0])
    head["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    entry.write_bytes(json.dumps(head).encode() + b"\n" + payload)


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_an_entry_that_asks_for_other_code_is_discarded(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    fresh = run_cli(str(model), "--ep", "qnn", "--format", "json").stdout
    (entry,) = _entries(cache_dir)
    marker = tmp_path / "pwned"
    _rewrite_payload(entry, pickle.dumps(_Exploit(marker)))
    again = run_cli(str(model), "--ep", "qnn", "--format", "json").stdout
    assert again == fresh and not marker.exists()
    # a payload of plain data that is not a report is no report either
    (entry,) = _entries(cache_dir)
    _rewrite_payload(entry, pickle.dumps({"diagnostics": []}))
    assert run_cli(str(model), "--ep", "qnn", "--format", "json").stdout == fresh


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_entries_and_models_that_are_not_regular_files(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    fresh = run_cli(str(model), "--ep", "qnn").stdout
    (entry,) = _entries(cache_dir)
    entry.unlink()
    os.mkfifo(entry)  # would block a plain read
    assert run_cli(str(model), "--ep", "qnn", timeout=60).stdout == fresh
    fifo = tmp_path / "f.onnx"
    os.mkfifo(fifo)
    assert report_cache.slot_for(fifo, Config()) is None  # the lint says OL001, unkept


def test_a_folder_mixes_read_back_and_linted_reports(tmp_path: Path, cache_dir: Path) -> None:
    for name in ("a", "b", "c"):
        _model(tmp_path / f"{name}.onnx", relu=name != "b")
    run_cli(str(tmp_path / "a.onnx"), "--ep", "qnn", "--format", "json")
    serial = run_cli(str(tmp_path), "--ep", "qnn", "--format", "json", "--no-cache").stdout
    parallel = run_cli(str(tmp_path), "--ep", "qnn", "--format", "json", "-j", "2").stdout
    assert parallel == serial and len(_entries(cache_dir)) == 3
    assert run_cli(str(tmp_path), "--ep", "qnn", "--format", "json").stdout == serial


def test_a_usage_error_is_still_reported_after_a_hit(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    run_cli(str(model), "--ep", "qnn")
    bad = run_cli(str(model), "--ep", "qnn", "--select", "OL9999X")
    assert bad.returncode == 2 and "OL9999X" in bad.stderr


def test_the_key_names_the_code_and_environment(tmp_path: Path, cache_dir: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    key = _slot(model).key
    env = key["env"]
    assert env["packages"]["onnx"] == onnx.__version__
    assert env["python"] == sys.version and env["executable"] == sys.executable
    assert key["code"] == report_cache.code_identity() and len(key["code"]) == 64
    assert key["file"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert key["config"]["eps"] == ["qnn"]


def test_a_profile_file_is_part_of_the_key(tmp_path: Path, cache_dir: Path) -> None:
    profile = tmp_path / "p.json"
    profile.write_text("{}")
    config = Config(ep_profiles=(str(profile),))
    model = _model(tmp_path / "m.onnx")
    first = report_cache.slot_for(model, config)
    profile.write_text('{"id": "x"}')
    second = report_cache.slot_for(model, config)
    assert first is not None and second is not None and first.path != second.path
    profile.unlink()
    assert report_cache.slot_for(model, config) is None


def test_cached_reports_skips_html_runs(tmp_path: Path, cache_dir: Path) -> None:
    from onnxlint.cli.lint import _cached_reports

    model = _model(tmp_path / "m.onnx")
    args = argparse.Namespace(html=str(tmp_path / "r.html"))
    assert _cached_reports(args, [(model, Config())]) == [(None, None)]


@pytest.mark.parametrize("name", ["light_resnet50", "light_inception_v2", "light_shufflenet"])
def test_reports_of_real_models_round_trip(name: str, cache_dir: Path) -> None:
    """A store is not read back to check it: the reader's allowlist must cover what the
    reports of real models hold, with every kind of EP (accelerators, CPU, several)."""
    model = next(p for p in light_models() if p.stem == name)
    config = Config(eps=("qnn", "openvino", "cpu"))
    slot = report_cache.slot_for(model, config)
    assert slot is not None
    with lintdeps.recording() as deps:
        report = engine.lint(model, config=config, path_label=str(model), partition_summary=True)
    assert report.partitions and report.diagnostics
    assert slot.put(report, deps) is True
    got = slot.get()
    assert got is not None and got.to_dict() == report.to_dict()
    assert got.assignment == report.assignment and got.what_ifs == report.what_ifs
