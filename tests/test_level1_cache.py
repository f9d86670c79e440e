"""ORT's level-1 graph: the on-disk cache, the early (background) start, and start-up trims.

The cache must be invisible in the results (cached and uncached lints agree),
keyed by everything ORT's output depends on, and never trusted when damaged;
the early start must not leak a worker, and must start only when the lint will
ask for the graph.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from onnxlint import cli, engine, rewrites
from onnxlint.analyses import level1
from onnxlint.analyses.level1 import cache as level1_cache
from onnxlint.analyses.level1 import eligibility
from onnxlint.cli import lint as cli_lint
from onnxlint.config import Config
from onnxlint.render import render
from onnxlint.runtime import client, processes
from tests.conftest import light_models, parse

MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    s = Shape(x)
    r = Relu(x)
    y = Reshape(r, s)
}
"""


def small_model(k: int = 1) -> onnx.ModelProto:
    """The model above with one more Relu per ``k`` (different bytes, same kind of graph)."""
    text = MODEL.replace(
        "r = Relu(x)", "\n".join(f"r{i} = Relu(x)" for i in range(k)) + "\n r = Relu(r0)"
    )
    return parse(text)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root for this test (``ONNXLINT_CACHE_DIR``); returns the level-1 folder."""
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(level1.NO_CACHE_ENV, raising=False)
    return tmp_path / "cache" / "level1"


def job(model: onnx.ModelProto, folder: Path) -> level1.Level1Job:
    return level1.Level1Job(model, cache_dir=folder).start()


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.level1")) if folder.exists() else []


# -- the cache ---------------------------------------------------------------------------


def test_miss_then_hit_gives_the_same_graph(cache_dir: Path) -> None:
    first = job(small_model(), cache_dir)
    assert first.source == "worker"
    graph, note = first.result()
    assert graph is not None and note == level1.NOTE_OK
    assert len(entries(cache_dir)) == 1

    second = job(small_model(), cache_dir)
    assert second.source == "cache"  # no worker was started
    again, note2 = second.result()
    assert again is not None and note2 == note
    assert again.SerializeToString() == graph.SerializeToString()


def test_cache_root_is_the_confirm_cache_root(cache_dir: Path) -> None:
    from onnxlint.confirm.cache import default_cache_dir

    assert level1_cache.default_cache_dir() == cache_dir
    assert level1_cache.default_cache_dir().parent == default_cache_dir().parent


@pytest.mark.parametrize(
    "change",
    ["model bytes", "ort version", "ort library rebuilt", "assumed dims"],
)
def test_key_changes_with_what_ort_output_depends_on(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = parse(
        MODEL.replace("float[1,4] x", "float[N,4] x").replace("float[1,4] y", "float[N,4] y")
    )
    before = level1_cache.key_material(model.SerializeToString())
    assert before is not None
    if change == "model bytes":
        after = level1_cache.key_material(small_model(2).SerializeToString())
    elif change == "assumed dims":
        fixed = rewrites.override_dims(model, {"N": 2})
        after = level1_cache.key_material(fixed.SerializeToString())
    else:
        ident = dict(level1.ort_identity() or {})
        if change == "ort version":
            ident["version"] = "0.0.1"
        else:
            ident["libs"] = [[n, size + 1, t] for n, size, t in ident["libs"]]
        monkeypatch.setattr(level1_cache, "ort_identity", lambda: ident)
        after = level1_cache.key_material(model.SerializeToString())
    assert after is not None
    assert level1_cache.cache_key(before) != level1_cache.cache_key(after)


def test_ort_identity_names_the_installed_package_without_importing_it() -> None:
    probe = (
        "import sys; from onnxlint.analyses import level1; i = level1.ort_identity(); "
        "print(i['version'], len(i['libs']) > 0, 'onnxruntime' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    import onnxruntime

    assert out == [onnxruntime.__version__, "True", "False"]


def _corrupt(path: Path, how: str) -> None:
    raw = path.read_bytes()
    head, _, payload = raw.partition(b"\n")
    entry = json.loads(head)
    if how == "not JSON":
        path.write_bytes(b"{oops\n" + payload)
    elif how == "empty file":
        path.write_bytes(b"")
    elif how == "truncated payload":
        path.write_bytes(head + b"\n" + payload[: len(payload) // 2])
    elif how == "wrong schema":
        entry["schema"] = "something-else/9"
        path.write_bytes(json.dumps(entry).encode() + b"\n" + payload)
    elif how == "other key":
        entry["key"]["model_sha256"] = "0" * 64
        path.write_bytes(json.dumps(entry).encode() + b"\n" + payload)
    elif how == "unknown status":
        entry["status"] = "maybe"
        path.write_bytes(json.dumps(entry).encode() + b"\n" + payload)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ("not JSON", "not valid JSON"),
        ("empty file", "no header"),
        ("truncated payload", "checksum mismatch"),
        ("wrong schema", "wrong schema"),
        ("other key", "key material does not match"),
        ("unknown status", "unknown status"),
    ],
)
def test_a_corrupt_entry_is_discarded_and_rebuilt(cache_dir: Path, how: str, why: str) -> None:
    graph, _ = job(small_model(), cache_dir).result()
    [entry] = entries(cache_dir)
    _corrupt(entry, how)

    again = job(small_model(), cache_dir)
    assert again.discarded == why
    assert again.source == "worker"  # rebuilt, not trusted
    rebuilt, _ = again.result()
    assert graph is not None and rebuilt is not None
    assert rebuilt.SerializeToString() == graph.SerializeToString()
    assert job(small_model(), cache_dir).source == "cache"  # and written back whole


def test_ort_refusal_is_cached_with_its_note(cache_dir: Path) -> None:
    # an op ORT has no kernel for: the session fails the same way every time
    bad = parse(
        MODEL.replace("r = Relu(x)", 'r = NoSuchOp<domain="x.y">(x)').replace(
            '["" : 17]', '["" : 17, "x.y" : 1]'
        )
    )
    first = job(bad, cache_dir)
    got, note = first.result()
    assert got is None and "could not load the model" in note
    second = job(bad, cache_dir)
    assert second.source == "cache"
    assert second.result() == (None, note)


@pytest.mark.parametrize("every_level", [True, False])
def test_a_refusal_entry_keeps_whether_every_level_fails(
    cache_dir: Path, every_level: bool
) -> None:
    """ORT's refusal is stored with the worker's answer to "does a disabled session load
    it?"; an entry whose answer is missing or not a flag is discarded, never guessed."""
    store = level1_cache.Level1Cache(cache_dir / "level1")
    material = {"schema": level1_cache.CACHE_SCHEMA, "model_sha256": "1" * 64}
    refusal = level1_cache.GraphRefusal("Node (m) Op (MatMul) [ShapeInferenceError] x", every_level)
    store.put("k", material, None, "refused", refusal)
    assert store.get("k", material).refusal == refusal

    path = store.path("k")
    head, _, payload = path.read_bytes().partition(b"\n")
    entry = json.loads(head)
    entry["refusal_every_level"] = "yes"
    path.write_bytes(json.dumps(entry).encode() + b"\n" + payload)
    hit = store.get("k", material)
    assert hit.graph is None and hit.refusal is None
    assert hit.discarded == "refusal is not a string and a flag"
    assert not path.exists()


@pytest.mark.parametrize(
    ("env", "confirm", "enabled"),
    [
        (None, {}, True),
        ("1", {}, False),
        ("yes", {}, False),
        ("0", {}, True),
        ("", {}, True),
        (None, {"cache": False}, False),  # what --no-cache sets
        (None, {"cache": True}, True),
    ],
)
def test_cache_switches(
    env: str | None, confirm: dict[str, Any], enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv(level1.NO_CACHE_ENV, raising=False)
    else:
        monkeypatch.setenv(level1.NO_CACHE_ENV, env)
    assert level1.cache_enabled(Config(confirm=confirm)) is enabled


@pytest.mark.parametrize("switch", ["env", "--no-cache"])
def test_no_cache_reads_and_writes_nothing(
    cache_dir: Path, tmp_path: Path, switch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(small_model(), path)
    args = [str(path), "--ep", "qnn", "--isolated", "--no-progress", "--format", "json"]
    if switch == "env":
        monkeypatch.setenv(level1.NO_CACHE_ENV, "1")
    else:
        args.append("--no-cache")
    proc = subprocess.run(
        [sys.executable, "-m", "onnxlint", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert entries(cache_dir) == []


def test_nothing_is_written_next_to_the_model(cache_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(small_model(), folder / "m.onnx")
    before = sorted(p.name for p in folder.iterdir())
    for _ in range(2):  # a miss, then a hit
        engine.lint(folder / "m.onnx", eps=["qnn"])
    assert sorted(p.name for p in folder.iterdir()) == before
    assert len(entries(cache_dir)) == 1


def _snapshot(report: Any) -> dict[str, Any]:
    return {"json": json.loads(render([report], "json")), "assignment": report.assignment}


def test_cached_and_uncached_predictions_are_identical(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = next(p for p in light_models() if p.name == "light_squeezenet.onnx")
    monkeypatch.setenv(level1.NO_CACHE_ENV, "1")
    uncached = _snapshot(engine.lint(model, eps=["qnn"]))
    monkeypatch.delenv(level1.NO_CACHE_ENV)
    filled = _snapshot(engine.lint(model, eps=["qnn"]))
    assert len(entries(cache_dir)) == 1
    hit = _snapshot(engine.lint(model, eps=["qnn"]))
    assert uncached["assignment"] and uncached["json"]["files"][0]["partitions"]
    assert uncached == filled == hit


# -- the early start -------------------------------------------------------------------


class _Spy:
    """Records which lints asked for the level-1 graph, without running ORT."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked = 0
        self.started = 0
        spy = self

        def start(job: level1.Level1Job) -> level1.Level1Job:
            spy.started += 1
            job._graph, job.source = (None, "stub"), "skipped"
            return job

        original = level1.graph_for

        def graph_for(*args: Any) -> Any:
            spy.asked += 1
            return original(*args)

        monkeypatch.setattr(level1.Level1Job, "start", start)
        monkeypatch.setattr(level1, "graph_for", graph_for)


@pytest.mark.parametrize(
    ("eps", "config", "wanted"),
    [
        ([], {}, False),
        (["cpu"], {}, True),  # ORT refusing its level-1 graph fails the CPU too (OL606)
        (["qnn"], {}, True),
        (["cuda", "cpu"], {}, True),
        (["qnn"], {"partition": {"graph-level": "exported"}}, False),
        (["qnn"], {"ignore": ("OL6",)}, True),  # the EP-support rules read the partitions
        (["qnn"], {"select": ("OL1",)}, False),  # no selected rule reads them
        (["openvino"], {"assume_dims": {"N": 1}}, True),
    ],
)
def test_prefetch_starts_exactly_when_the_lint_asks(
    eps: list[str], config: dict[str, Any], wanted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _Spy(monkeypatch)
    cfg = Config(**config)
    profiles = engine.resolve_eps(eps, cfg)
    assert engine.plan_lint(cfg, profiles, engine.instantiate_rules(cfg)).level1 is wanted
    model = parse(
        MODEL.replace("float[1,4] x", "float[N,4] x").replace("float[1,4] y", "float[N,4] y")
    )
    engine.lint(model, eps=eps, config=cfg)
    assert (spy.asked > 0) is wanted
    # started once, by the engine, and collected by the analysis (no second start)
    assert spy.started == (1 if wanted else 0)
    assert level1._ACTIVE == {}


@pytest.mark.parametrize("why", ["external data", "too many nodes"])
def test_no_worker_where_the_graph_is_never_built(
    why: str, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = small_model()
    if why == "external data":
        t = onnx.helper.make_tensor("w", onnx.TensorProto.FLOAT, [1], [1.0])
        t.data_location = onnx.TensorProto.EXTERNAL
        t.ClearField("float_data")
        t.external_data.add(key="location", value="w.bin")
        model.graph.initializer.append(t)
    else:
        monkeypatch.setattr(eligibility, "OPTIMIZED_MAX_NODES", 2)
    calls: list[Any] = []
    monkeypatch.setattr(client, "start_optimize", lambda *a, **k: calls.append(a))
    j = job(model, cache_dir)
    assert j.source == "skipped"
    graph, note = j.result()
    assert graph is None and note
    assert calls == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): it has exited, nobody reaped it yet
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_no_worker_outlives_a_lint_that_fails(
    error: type[BaseException], cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[client.PendingRun] = []
    real = client.start_optimize

    def start(*args: Any, **kwargs: Any) -> client.PendingRun:
        run = real(*args, **kwargs)
        started.append(run)
        return run

    pids: list[int] = []

    def boom(*args: Any) -> None:
        assert started and started[0].running  # the worker runs while the rules would
        assert started[0].worker is not None
        pids.append(started[0].worker.proc.pid)
        raise error("interrupted")

    monkeypatch.setattr(client, "start_optimize", start)
    monkeypatch.setattr(engine, "_run_rules", boom)
    with pytest.raises(error):
        engine.lint(small_model(), eps=["qnn"])
    [run] = started
    assert run.worker is None and not run.log_dir.exists()
    assert pids and not _alive(pids[0])
    assert level1._ACTIVE == {} and not processes._LIVE


def test_a_pending_worker_is_ended_at_exit(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(small_model(), src)
    run = client.start_optimize(src, tmp_path / "out.onnx")
    assert run.worker is not None
    pid = run.worker.proc.pid
    assert run in processes._LIVE
    processes._cancel_live()  # what atexit runs
    assert not _alive(pid)
    assert not processes._LIVE


def test_a_started_worker_gives_the_same_result_as_a_synchronous_one(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(small_model(), src)
    pending = client.start_optimize(src, tmp_path / "a.onnx")
    res = pending.result()[0]
    sync = client.optimize_model(src, tmp_path / "b.onnx")
    assert res.ok and sync.ok
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    assert pending.result()[0] is res  # collected once


# -- start-up ------------------------------------------------------------------------------


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_rules_without_options_do_not_import_jsonschema() -> None:
    mods = _modules_after(
        "from onnxlint.config import Config\n"
        "from onnxlint.engine import instantiate_rules\n"
        "assert instantiate_rules(Config())\n"
    )
    assert "jsonschema" not in mods


def test_rule_options_are_still_validated() -> None:
    from onnxlint.config import ConfigError
    from onnxlint.rule import all_rules

    code = all_rules()[0].code
    with pytest.raises(ConfigError, match=f"rules.{code}"):
        engine.instantiate_rules(Config(rules={code: {"no-such-option": 1}}))


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["{model}", "--ep", "qnn", "--isolated", "--no-progress"]],
    ids=["version", "static-lint-warm"],
)
def test_onnxruntime_is_not_imported(argv: list[str], cache_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(small_model(), path)
    engine.lint(path, eps=["qnn"])  # fills the cache: the probe below takes the warm path
    args = [a.format(model=path) for a in argv]
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['onnxlint', *{args!r}]\n"
        "try:\n"
        "    runpy.run_module('onnxlint', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    mods = _modules_after(probe)
    assert "onnxruntime" not in mods
    assert "jsonschema" not in mods


@pytest.mark.parametrize(("kind", "packages"), [("optimize", False), ("session", True)])
def test_package_scan_only_where_results_carry_it(
    kind: str, packages: bool, tmp_path: Path
) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(small_model(), src)
    if kind == "optimize":
        res = client.optimize_model(src, tmp_path / "out.onnx")
    else:
        [res] = client.run_sessions([client.SessionRequest(src)], "cpu", timeout_s=60)
    assert res.ok, res.error
    assert res.versions["onnxruntime"]
    assert ("packages" in res.versions) is packages


# -- the CLI's head start ------------------------------------------------------------------


def _args(path: Path, *extra: str) -> Any:
    from onnxlint.cli import build_parser

    return build_parser({}).parse_args([str(path), *extra])


@pytest.mark.parametrize(
    ("extra", "cached", "started"),
    [
        (["--ep", "qnn"], False, True),
        (["--ep", "qnn"], True, False),  # the hint says the graph is cached
        (["--ep", "qnn", "--no-cache"], True, True),  # cache bypassed: always cold
        (["--ep", "cpu"], False, False),
        ([], False, False),
        (["--ep", "qnn", "-j", "2"], False, False),
        (["--ep", "qnn", "--assume-dim", "N=2"], False, True),
    ],
    ids=["cold", "hinted", "no-cache", "cpu", "no-ep", "jobs", "dims"],
)
def test_prewarm_only_when_a_cold_lint_is_likely(
    extra: list[str],
    cached: bool,
    started: bool,
    cache_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(small_model(), path)
    if cached:
        engine.lint(path, eps=["qnn"])  # fills the cache and writes the hint
    spawned: list[Any] = []
    monkeypatch.setattr(processes, "prewarm", lambda *a, **k: spawned.append(a) or True)
    assert cli_lint.prewarm_from_args(_args(path, *extra)) is started
    assert bool(spawned) is started


def test_the_prewarmed_worker_is_the_one_that_builds_the_graph(
    cache_dir: Path, tmp_path: Path
) -> None:
    assert processes.prewarm()
    assert processes._SPARE is not None
    spare = processes._SPARE[0]
    try:
        j = job(small_model(), cache_dir)
        assert processes._SPARE is None  # taken by the job's worker run
        assert j._pending is not None and j._pending.worker is spare
        graph, note = j.result()
        assert graph is not None and note == level1.NOTE_OK
    finally:
        processes.drop_spare()
    assert not _alive(spare.proc.pid)


def test_an_unused_prewarmed_worker_is_ended(tmp_path: Path, cache_dir: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(small_model(), path)
    pids: list[int] = []
    real = processes.prewarm

    def prewarm(*args: Any, **kwargs: Any) -> bool:
        ok = real(*args, **kwargs)
        assert processes._SPARE is not None
        pids.append(processes._SPARE[0].proc.pid)
        return ok

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(processes, "prewarm", prewarm)
        # the graph-level option makes the lint not need the worker the CLI started
        config = tmp_path / "onnxlint.toml"
        config.write_text('[partition]\ngraph-level = "exported"\n')
        assert cli.main([str(path), "--ep", "qnn", "--config", str(config)]) in (0, 1)
    assert pids and not _alive(pids[0])
    assert processes._SPARE is None


@pytest.mark.parametrize(
    ("max_entries", "max_bytes", "kept"),
    [(3, 10**9, 3), (10, 10**9, 5), (10, 25, 2)],
    ids=["by-count", "nothing-to-prune", "by-size"],
)
def test_the_cache_keeps_the_newest_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_entries: int, max_bytes: int, kept: int
) -> None:
    monkeypatch.setattr(level1_cache, "MAX_ENTRIES", max_entries)
    monkeypatch.setattr(level1_cache, "MAX_BYTES", max_bytes)
    cache = level1_cache.Level1Cache(tmp_path)
    for i in range(5):
        path = tmp_path / f"k{i}.level1"
        path.write_bytes(b"x" * 10)
        os.utime(path, ns=(i * 10**9, i * 10**9))
    cache._prune()
    assert [p.name for p in entries(tmp_path)] == [f"k{i}.level1" for i in range(5 - kept, 5)]


def test_cache_false_in_the_config_file_is_accepted_and_bypasses_the_cache(tmp_path: Path) -> None:
    """docs/partitioning.md's ``[tool.onnxlint.confirm] cache = false`` is a real setting."""
    from onnxlint import config as config_mod

    (tmp_path / "onnxlint.toml").write_text("[confirm]\ncache = false\n", encoding="utf-8")
    cfg = config_mod.discover(tmp_path / "model.onnx")
    assert cfg.confirm.get("cache") is False
    assert level1.cache_enabled(cfg) is False
    with pytest.raises(config_mod.ConfigError):
        config_mod.validate({"confirm": {"cache": "no"}})


def _chain(nodes: int) -> onnx.ModelProto:
    h = onnx.helper
    graph = h.make_graph(
        [h.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], f"relu{i}") for i in range(nodes)],
        "chain",
        [h.make_tensor_value_info("v0", onnx.TensorProto.FLOAT, [1, 4])],
        [h.make_tensor_value_info(f"v{nodes}", onnx.TensorProto.FLOAT, [1, 4])],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=9)


def test_level1_graph_is_built_for_deep_models_up_to_the_node_limit() -> None:
    """A deep real export (a 96-layer BERT: 7,900 nodes) gets its level-1 graph, so the
    default session's prediction (onnxruntime 1.32.0 writes a 10,393-node BERT's in
    0.7 s); past 20,000 nodes it does not, and says why."""
    assert eligibility.OPTIMIZED_MAX_NODES == 20_000
    assert eligibility.skip_reason(_chain(8_000)) is None
    reason = eligibility.skip_reason(_chain(20_001))
    assert reason is not None and "20001 nodes (limit 20000" in reason
