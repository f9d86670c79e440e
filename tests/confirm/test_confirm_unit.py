"""``--confirm`` without real EPs: the diff, its diagnostics, the cache, fake runners, the CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import onnx
import pytest

from onnxlint.config import Config
from onnxlint.confirm.cache import CACHE_SCHEMA, ResultCache
from onnxlint.confirm.diff import EpConfirmation, LevelDiff, Prediction
from onnxlint.confirm.messages import diagnostics_for
from onnxlint.confirm.serialize import result_from_json, result_to_json
from onnxlint.confirm.settings import ConfirmSettings
from onnxlint.context import LintContext
from onnxlint.engine import lint
from onnxlint.index import ModelIndex
from onnxlint.loader import load
from onnxlint.profiles import get_profile
from onnxlint.runtime.results import AssignedNode, Fallback, NodeVerdict, SessionResult

from ..compiled.helpers import tiny_conv

QNN = "QNNExecutionProvider"
CPU = "CPUExecutionProvider"


def _ctx() -> LintContext:
    loaded = load(tiny_conv())
    assert loaded.model is not None
    return LintContext(
        loaded=loaded, index=ModelIndex(loaded.model), config=Config(), eps=[get_profile("qnn")]
    )


def _result(
    status: str = "ok",
    placed: dict[str, str] | None = None,
    refused: dict[str, str] | None = None,
    **kw: object,
) -> SessionResult:
    placed = placed or {}
    ops = {"conv0": "Conv", "relu0": "Relu"}
    return SessionResult(
        request_id="disabled",
        status=status,
        provider=QNN,
        create_s=0.25,
        assignment=[AssignedNode(n, ops[n], "", ep) for n, ep in placed.items()],
        assignment_source="api",
        verdicts=[
            NodeVerdict(ops[n], n, -1, passed=False, reason=why)
            for n, why in (refused or {}).items()
        ],
        facts={"ep_subgraphs": [{"ep": QNN, "nodes": 1}]},
        **kw,  # type: ignore[arg-type]
    )


def _diff(
    ctx: LintContext, predicted: dict[str, str], res: SessionResult, level: str = "disabled"
) -> LevelDiff:
    from onnxlint.confirm.diff import reasons_by_path, reported_to_paths

    pred = Prediction(
        node_ep={f"main/{n}": ep for n, ep in predicted.items()},
        partitions={QNN: 1},
        index=ctx.index,
    )
    diff = LevelDiff(ep=QNN, level=level, result=res, prediction=pred)
    diff.predicted = pred.node_ep
    diff.predicted_partitions = {QNN: 1}
    if res.ok:
        diff.actual, diff.inserted, diff.unreported = reported_to_paths(ctx.index, res.assignment)
    diff.reasons = reasons_by_path(ctx.index, res)
    return diff


BOTH_QNN = {"conv0": QNN, "relu0": QNN}

# (id, predicted, session result, expected [(code, message id)], text the messages must hold)
CASES = [
    ("all-agree", BOTH_QNN, _result(placed=BOTH_QNN), [("OL905", "default")], "2/2 nodes agree"),
    (
        "profile-gap-with-reason",
        BOTH_QNN,
        _result(placed={"conv0": QNN, "relu0": CPU}, refused={"relu0": "Cannot get shape"}),
        [("OL901", "refused"), ("OL905", "default")],
        "REASON Cannot get shape",
    ),
    (
        "released-by-partitioner",
        BOTH_QNN,
        _result(placed={"conv0": QNN, "relu0": CPU}),
        [("OL901", "released"), ("OL905", "default")],
        "partitioner released it",
    ),
    (
        "profile-too-conservative",
        {"conv0": QNN, "relu0": CPU},
        _result(placed=BOTH_QNN),
        [("OL902", "default"), ("OL905", "default")],
        "but the real EP claimed it",
    ),
    (
        "session-error",
        BOTH_QNN,
        _result(status="error", error="Dynamic shape is not supported yet"),
        [("OL903", "error")],
        "Dynamic shape",
    ),
    (
        "worker-timeout",
        BOTH_QNN,
        _result(status="timeout", error="no result within 2 s; worker killed"),
        [("OL903", "timeout")],
        "did not finish",
    ),
    (
        "worker-crash",
        BOTH_QNN,
        _result(status="crash", error="worker killed by signal SIGSEGV", log_tail=["finalize"]),
        [("OL903", "crash")],
        "SIGSEGV",
    ),
    (
        "wholesale-fallback",
        BOTH_QNN,
        _result(
            placed={"conv0": CPU, "relu0": CPU},
            fallback=Fallback(provider_fallback=True, message="ORT fell back to ['CPU...']"),
        ),
        [("OL901", "released"), ("OL901", "released"), ("OL904", "default"), ("OL905", "default")],
        "fell back",
    ),
    (
        "zero-nodes-foreseen",
        {"conv0": CPU, "relu0": CPU},
        _result(
            placed={"conv0": CPU, "relu0": CPU},
            fallback=Fallback(zero_accelerator_nodes=True, message="assigned none of 2 nodes"),
        ),
        [("OL904", "foreseen"), ("OL905", "default")],
        "as the prediction said",
    ),
    (
        "ep-not-installed",
        BOTH_QNN,
        _result(status="error", error_kind="ep-unavailable", error="not available in python"),
        [("OL906", "default")],
        "[tool.onnxlint.runners]",
    ),
]


@pytest.mark.parametrize(
    ("predicted", "res", "expected", "text"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_diagnostics_for_a_level(
    predicted: dict[str, str],
    res: SessionResult,
    expected: list[tuple[str, str]],
    text: str,
) -> None:
    ctx = _ctx()
    conf = EpConfirmation(ep=QNN, profile_id="qnn-htp", runner="python")
    conf.levels.append(_diff(ctx, predicted, res))
    diags = diagnostics_for(ctx, conf)
    assert sorted((d.code, d.message_id) for d in diags) == sorted(expected)
    assert any(text in d.message for d in diags), [d.message for d in diags]
    for d in diags:
        assert d.category.value == "confirmation" and d.ep == QNN


def test_unavailable_ep_is_reported_once_for_both_levels() -> None:
    ctx = _ctx()
    conf = EpConfirmation(ep=QNN, profile_id="qnn-htp", runner="python")
    res = _result(status="error", error_kind="ep-unavailable", error="missing")
    conf.levels += [_diff(ctx, BOTH_QNN, res), _diff(ctx, BOTH_QNN, res, level="default")]
    assert [d.code for d in diagnostics_for(ctx, conf)] == ["OL906"]


@pytest.mark.parametrize(
    ("skipped", "discarded", "expected"),
    [
        ("no cached result", None, ["OL908"]),
        (None, "checksum mismatch", ["OL907"]),
    ],
    ids=["skipped", "discarded"],
)
def test_skipped_and_discarded(
    skipped: str | None, discarded: str | None, expected: list[str]
) -> None:
    conf = EpConfirmation(ep=QNN, profile_id="qnn-htp", runner="python")
    conf.skipped, conf.discarded = skipped, discarded
    assert [d.code for d in diagnostics_for(_ctx(), conf)] == expected


def test_diff_counts_confusion_and_partitions() -> None:
    ctx = _ctx()
    res = _result(placed={"conv0": QNN, "relu0": CPU}, refused={"relu0": "Cannot get shape"})
    diff = _diff(ctx, BOTH_QNN, res)
    data = diff.to_dict()
    assert data["confusion"] == {f"{QNN}->{CPU}": 1, f"{QNN}->{QNN}": 1}
    assert data["agreement"] == 0.5 and data["mismatches"] == {"main/relu0": [QNN, CPU]}
    assert data["actual_partitions"] == {QNN: 1} and data["predicted_partitions"] == {QNN: 1}
    assert diff.reasons == {"main/relu0": ["Cannot get shape"]}


def test_renamed_and_inserted_nodes_are_normalised() -> None:
    ctx = _ctx()
    res = _result()
    res.assignment = [
        AssignedNode("Transpose", "Transpose", "", QNN),
        AssignedNode("conv0_token_1", "Conv", "com.ms.internal.nhwc", QNN),
        AssignedNode("relu0", "Relu", "", QNN),
    ]
    diff = _diff(ctx, BOTH_QNN, res)
    assert diff.actual == {"main/conv0": QNN, "main/relu0": QNN}
    assert [n.op_type for n in diff.inserted] == ["Transpose"]
    assert diff.agreement == 1.0


# -- the cache -----------------------------------------------------------------------


def _material() -> dict[str, object]:
    return {"schema": CACHE_SCHEMA, "model": "abc", "provider": QNN}


def test_result_json_round_trip() -> None:
    res = _result(placed=BOTH_QNN, refused={"relu0": "why"})
    res.fallback = Fallback(zero_accelerator_nodes=True, message="m")
    back = result_from_json(json.loads(json.dumps(result_to_json(res))))
    assert back == res


def test_cache_hit(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    res = [_result(placed=BOTH_QNN)]
    cache.put("k", _material(), res)
    got = cache.get("k", _material())
    assert got.results == res and got.discarded is None
    assert cache.get("other", _material()).results is None


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def _tamper(p: Path) -> None:
    entry = json.loads(p.read_text())
    entry["results"][0]["status"] = "error"
    p.write_text(json.dumps(entry))


def _rekey(p: Path) -> None:
    entry = json.loads(p.read_text())
    entry["key"]["model"] = "something else"
    p.write_text(json.dumps(entry))


def _reschema(p: Path) -> None:
    entry = json.loads(p.read_text())
    entry["schema"] = "onnxlint-confirm-cache/0"
    p.write_text(json.dumps(entry))


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (_truncate, "not valid JSON"),
        (_tamper, "checksum"),
        (_rekey, "key material"),
        (_reschema, "schema"),
        (lambda p: p.write_text("[1, 2]"), "schema"),
    ],
    ids=["truncated", "tampered", "other-key", "old-schema", "not-an-object"],
)
def test_corrupt_cache_entry_is_discarded(tmp_path: Path, damage, why: str) -> None:  # type: ignore[no-untyped-def]
    cache = ResultCache(tmp_path)
    cache.put("k", _material(), [_result(placed=BOTH_QNN)])
    damage(cache.path("k"))
    got = cache.get("k", _material())
    assert got.results is None and why in (got.discarded or "")
    assert not cache.path("k").exists()


def test_cache_writes_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "deep" / "folder")
    cache.put("k", _material(), [_result()])
    assert [p.name for p in (tmp_path / "deep" / "folder").iterdir()] == ["k.json"]


# -- fake runners: a hang and a crash become diagnostics, not a dead CLI ------------


FAKE_RUNNER = """#!/bin/sh
# a runner that answers the version probe, then {behaviour} on its first request
case "$*" in *" -c "*) echo '{{"python": "fake"}}'; exit 0;; esac
cat > /dev/null
echo '{{"event": "hello", "protocol": 1, "versions": {{"onnxruntime": "0"}}}}'
echo '{{"event": "start", "index": 0, "id": "disabled"}}'
{command}
"""


@pytest.mark.parametrize(
    ("behaviour", "command", "message_id"),
    [
        ("hangs", "exec sleep 600", "timeout"),
        ("dies", "kill -9 $$", "crash"),
    ],
    ids=["hang", "killed-mid-run"],
)
def test_fake_runner_failures_become_diagnostics(
    tmp_path: Path, behaviour: str, command: str, message_id: str
) -> None:
    runner = tmp_path / "fake-python"
    runner.write_text(FAKE_RUNNER.format(behaviour=behaviour, command=command))
    runner.chmod(runner.stat().st_mode | stat.S_IXUSR)
    config = Config(
        runners={"cpu": str(runner)},
        confirm={"mode": "run", "cache": False, "timeout-s": 1.5, "levels": ["disabled"]},
    )
    report = lint(tiny_conv(), eps=["cpu"], config=config)
    got = [(d.code, d.message_id) for d in report.diagnostics if d.category.value == "confirmation"]
    assert got == [("OL903", message_id)]


# -- settings and the CLI ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], None),
        (["--confirm"], {"mode": "run"}),
        (["--confirm", "--no-cache"], {"mode": "run", "cache": False}),
        (["--source", "src.onnx"], {"source": str(Path("src.onnx").resolve())}),
    ],
    ids=["nothing", "confirm", "no-cache", "source"],
)
def test_cli_flags_map_to_confirm_settings(argv: list[str], expected: dict | None) -> None:  # type: ignore[type-arg]
    from onnxlint.cli import _command_modules, build_parser
    from onnxlint.cli.settings import confirm_settings

    args = build_parser(_command_modules()).parse_args(["m.onnx", *argv])
    assert confirm_settings(args, Config()) == expected


def test_settings_from_config_resolve_the_cache_dir(tmp_path: Path) -> None:
    config = Config(
        source=tmp_path / "onnxlint.toml", confirm={"cache-dir": "cache", "mode": "run"}
    )
    s = ConfirmSettings.from_config(config)
    assert s.cache_dir == tmp_path / "cache" and s.mode == "run" and s.use_cache


def test_confirm_is_off_by_default() -> None:
    report = lint(tiny_conv(), eps=["cpu"], config=Config())
    assert not [d for d in report.diagnostics if d.category.value == "confirmation"]
    assert "confirmation" not in report.stats


def test_cache_only_mode_never_creates_a_session(tmp_path: Path) -> None:
    config = Config(
        runners={"cpu": str(tmp_path / "no-such-python")},
        confirm={"mode": "cache-only", "cache-dir": str(tmp_path)},
    )
    report = lint(tiny_conv(), eps=["cpu"], config=config)
    got = [(d.code, d.message_id) for d in report.diagnostics if d.category.value == "confirmation"]
    assert got == [("OL908", "default")]


def test_unsafe_model_is_not_handed_to_ort(tmp_path: Path) -> None:
    model = tiny_conv()
    w = model.graph.initializer[0]
    w.ClearField("float_data")
    w.data_location = onnx.TensorProto.EXTERNAL
    w.external_data.add(key="location", value="../../outside.bin")
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    config = Config(confirm={"mode": "run", "cache": False})
    report = lint(path, eps=["cpu"], config=config)
    skipped = [d for d in report.diagnostics if d.code == "OL908"]
    assert len(skipped) == 1 and "external-data" in skipped[0].message
    assert os.path.exists(path)


@pytest.mark.slow  # starts a worker that imports onnxruntime
def test_profile_for_an_ep_no_runner_has_says_so(tmp_path: Path) -> None:
    """A user profile for an EP that is not installed: one OL906, no traceback."""
    from dataclasses import replace

    from onnxlint.confirm import confirm_ep

    ctx = _ctx()
    madeup = replace(get_profile("qnn"), ep="MadeUpExecutionProvider", id="madeup")
    settings = ConfirmSettings(mode="run", use_cache=False, levels=("disabled",))
    conf = confirm_ep(ctx, madeup, settings)
    diags = diagnostics_for(ctx, conf)
    assert [d.code for d in diags] == ["OL906"]
    assert "MadeUpExecutionProvider" in diags[0].message


@pytest.mark.parametrize(
    ("eps", "expected"),
    [
        (["cpu"], ["CPUExecutionProvider"]),
        ([], ["CPUExecutionProvider"]),
        (["qnn", "cpu"], [QNN]),
        (["qnn", "openvino"], [QNN, "OpenVINOExecutionProvider"]),
    ],
    ids=["cpu-only", "no-ep", "accelerator-and-cpu", "two-accelerators"],
)
def test_each_accelerator_is_confirmed_on_its_own(
    monkeypatch: pytest.MonkeyPatch, eps: list[str], expected: list[str]
) -> None:
    import onnxlint.confirm as confirm

    seen: list[str] = []

    def fake(ctx, profile, settings):  # type: ignore[no-untyped-def]
        seen.append(profile.ep)
        return EpConfirmation(ep=profile.ep, profile_id=profile.id, runner="python")

    monkeypatch.setattr(confirm, "confirm_ep", fake)
    ctx = _ctx()
    ctx.eps = [get_profile(e) for e in eps]
    confirm.confirm(ctx, ConfirmSettings(mode="run"))
    assert seen == expected


def test_an_ep_package_that_is_not_installed_gives_ol906_with_the_install_command() -> None:
    ctx = _ctx()
    conf = EpConfirmation(ep=QNN, profile_id="qnn-htp", runner="python")
    res = SessionResult(
        request_id="disabled",
        status="error",
        provider=QNN,
        error_kind="ep-unavailable",
        error="execution provider QNNExecutionProvider is not available",
        facts={"missing_package": "onnxruntime_qnn"},
    )
    conf.levels += [_diff(ctx, BOTH_QNN, res), _diff(ctx, BOTH_QNN, res, level="default")]
    (d,) = diagnostics_for(ctx, conf)
    assert (d.code, d.message_id, d.severity.label) == ("OL906", "not_installed", "warning")
    assert d.fix is not None and d.fix.command == "pip install onnxruntime-qnn"
    assert "pip install onnxruntime-qnn" in d.message
