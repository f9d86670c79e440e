"""Compiled-model rules (OL7xx) on EPContext models built by hand: no session, no worker."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

from onnxlint.compiled import (
    ERROR_ACTION,
    SOURCE_HASH_KEY,
    STATUS_ACTIONS,
    _compat_from_result,
    check_compatibility,
    check_sidecar,
)
from onnxlint.runtime.results import SessionResult

from .helpers import FAKE_EP, codes, epcontext_model, lint_file

E = FAKE_EP

# (id, EPContext nodes (embed_mode, ep_cache_context, main_context), files to create
#  next to the model {name: bytes}, extra model kwargs, expected {code: [message ids]})
CASES = [
    (
        "embedded-one-partition",
        [(1, b"blob", 1)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL708": ["unavailable"]},
    ),
    (
        "sidecar-present",
        [(0, "model_ctx.bin", 1)],
        {"model_ctx.bin": b"\x01" * 64},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL708": ["unavailable"]},
    ),
    (
        "sidecar-missing",
        [(0, "gone.bin", 1)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL703": ["missing"], "OL708": ["unavailable"]},
    ),
    (
        "sidecar-empty",
        [(0, "empty.bin", 1)],
        {"empty.bin": b""},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL703": ["empty"], "OL708": ["unavailable"]},
    ),
    (
        "sidecar-dotdot",
        [(0, "../../secret.bin", 1)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL704": ["default"], "OL708": ["unavailable"]},
    ),
    (
        "sidecar-absolute",
        [(0, "/etc/passwd", 1)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL704": ["default"], "OL708": ["unavailable"]},
    ),
    (
        "two-owners-of-one-sidecar",
        [(0, "shared.bin", 1), (0, "shared.bin", 1)],
        {"shared.bin": b"\x02" * 8},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL705": ["two-main"], "OL708": ["unavailable"]},
    ),
    (
        "sidecar-owned-by-another-model",
        [(0, "shared.bin", 0)],
        {"shared.bin": b"\x02" * 8},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL705": ["orphan"], "OL708": ["unavailable"]},
    ),
    (
        "embedded-several-partitions",
        [(1, b"a", 1), (1, b"bb", 1)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL706": ["default"], "OL708": ["unavailable"]},
    ),
    (
        "no-compatibility-info",
        [(1, b"blob", 1)],
        {},
        {},
        {"OL701": ["default"], "OL707": ["default"]},
    ),
    (
        "bad-embed-mode",
        [(2, b"blob", 1)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL702": ["bad_value"], "OL708": ["unavailable"]},
    ),
    (
        # what ORT + QNN write for a model with two partitions: the second node shares the
        # first one's context binary and has no ep_cache_context of its own
        "second-partition-shares-the-main-context",
        [(0, "model_ctx.bin", 1), (0, None, 0)],
        {"model_ctx.bin": b"\x01" * 64},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL708": ["unavailable"]},
    ),
    (
        "shared-context-without-a-main",
        [(0, None, 0)],
        {},
        {"compat": {E: "v1"}},
        {"OL701": ["default"], "OL702": ["no_main"], "OL708": ["unavailable"]},
    ),
    (
        "no-cache-context-no-source",
        [(1, None, 1)],
        {},
        {"source": None},
        {"OL701": ["default"], "OL702": ["missing", "no_source"]},
    ),
]


@pytest.mark.parametrize(
    ("nodes", "files", "kwargs", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_compiled_model_rules(
    tmp_path: Path,
    nodes: list[tuple[int, bytes | str | None, int | None]],
    files: dict[str, bytes],
    kwargs: dict[str, object],
    expected: dict[str, list[str]],
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    path = folder / "model_ctx.onnx"
    onnx.save(epcontext_model(nodes, **kwargs), str(path))  # type: ignore[arg-type]
    got = codes(lint_file(path))
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}


def test_plain_model_has_no_compiled_findings(tmp_path: Path) -> None:
    from .helpers import tiny_conv

    path = tmp_path / "plain.onnx"
    onnx.save(tiny_conv(), str(path))
    assert codes(lint_file(path)) == {}


def test_sidecar_symlink_out_of_the_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * 10)
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "link.bin").symlink_to(outside)
    side = check_sidecar("link.bin", folder)
    assert side.state == "outside" and "symlink" in side.detail


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_sidecar_fifo_is_reported_and_never_opened(tmp_path: Path) -> None:
    # opening a FIFO without a writer blocks: finishing at all proves it was only stat-ed
    os.mkfifo(tmp_path / "ctx.bin")
    assert check_sidecar("ctx.bin", tmp_path).state == "not-regular"


def test_sidecar_of_a_model_from_bytes_cannot_be_checked() -> None:
    from onnxlint.config import Config
    from onnxlint.engine import lint

    model = epcontext_model([(0, "ctx.bin", 1)], compat={E: "v1"})
    report = lint(model.SerializeToString(), config=Config(select=("OL703",)))
    assert [(d.code, d.message_id, d.severity.label) for d in report.diagnostics] == [
        ("OL703", "no-folder", "info")
    ]


# -- OL709: was it compiled from this source? ---------------------------------------


@pytest.mark.parametrize(
    ("recorded", "source_bytes", "expected"),
    [
        ("match", b"source-v1", []),
        ("other", b"source-v1", [("OL709", "mismatch", "error")]),
        (None, b"source-v1", [("OL709", "unverifiable", "warning")]),
    ],
    ids=["recorded-hash-matches", "recorded-hash-differs", "no-recorded-hash"],
)
def test_source_check(
    tmp_path: Path, recorded: str | None, source_bytes: bytes, expected: list[tuple[str, str, str]]
) -> None:
    import hashlib

    source = tmp_path / "source.onnx"
    source.write_bytes(source_bytes)
    digest = hashlib.sha256(source_bytes).hexdigest()
    meta = {}
    if recorded == "match":
        meta[SOURCE_HASH_KEY] = digest
    elif recorded == "other":
        meta[SOURCE_HASH_KEY] = "0" * 64
    path = tmp_path / "model_ctx.onnx"
    onnx.save(epcontext_model([(1, b"b", 1)], compat={E: "v1"}, metadata=meta), str(path))
    report = lint_file(path, source=str(source))
    got = [
        (d.code, d.message_id, d.severity.label) for d in report.diagnostics if d.code == "OL709"
    ]
    assert got == expected
    if expected and expected[0][1] == "unverifiable":
        assert "driver" in report.diagnostics[-1].message or any(
            "driver" in d.message for d in report.diagnostics
        )


def test_source_check_needs_a_compiled_model(tmp_path: Path) -> None:
    from .helpers import tiny_conv

    path = tmp_path / "plain.onnx"
    onnx.save(tiny_conv(), str(path))
    assert "OL709" not in codes(lint_file(path, source=str(path)))


# -- ORT's compatibility statuses -> the recommended action ------------------------


def _result(**facts: object) -> SessionResult:
    ok = facts.pop("ok", True)
    return SessionResult(
        request_id="compat",
        status="ok" if ok else "error",
        provider="QNNExecutionProvider",
        error=None if ok else str(facts.pop("error", "boom")),
        error_kind=None if ok else str(facts.pop("error_kind", "compat")),
        facts=dict(facts),
    )


@pytest.mark.parametrize(
    ("result", "state", "status", "action_has"),
    [
        (_result(info="v2", status="EP_SUPPORTED_OPTIMAL", devices=[{"device_type": "NPU"}]),
         "status", "EP_SUPPORTED_OPTIMAL", "reuse"),
        (_result(info="v2", status="EP_SUPPORTED_PREFER_RECOMPILATION",
                 devices=[{"device_type": "NPU"}]),
         "status", "EP_SUPPORTED_PREFER_RECOMPILATION", "optimal-only"),
        (_result(info="v2", status="EP_UNSUPPORTED", devices=[{"device_type": "NPU"}]),
         "status", "EP_UNSUPPORTED", "do not load"),
        (_result(info="v2", status="EP_NOT_APPLICABLE", devices=[{"device_type": "NPU"}]),
         "status", "EP_NOT_APPLICABLE", "not evidence"),
        (_result(info="v2", devices=[{"device_type": "CPU"}],
                 check_error="RuntimeError: ... only supports OrtHardwareDeviceType_NPU ..."),
         "unavailable", None, "validate it on the target"),
        (_result(info="v2", devices=[{"device_type": "NPU"}], check_error="RuntimeError: bad"),
         "error", None, "source model"),
        (_result(info=None, devices=[{"device_type": "NPU"}]),
         "no-info", None, "cache miss"),
        (_result(ok=False, error_kind="no-compat-api", error="ORT 1.20 has no API"),
         "unavailable", None, "validate"),
        (_result(ok=False, error_kind="compat", error="model is corrupt"),
         "error", None, "source model"),
    ],
    ids=["optimal", "prefer-recompilation", "unsupported", "not-applicable",
         "simulator-cpu-device", "check-raised", "no-info", "no-api", "info-read-failed"],
)  # fmt: skip
def test_compatibility_outcome_and_action(
    result: SessionResult, state: str, status: str | None, action_has: str
) -> None:
    got = _compat_from_result("QNNExecutionProvider", result)
    assert (got.state, got.status) == (state, status)
    assert action_has in got.action


def test_every_ort_status_has_an_action() -> None:
    assert set(STATUS_ACTIONS) == {
        "EP_SUPPORTED_OPTIMAL",
        "EP_SUPPORTED_PREFER_RECOMPILATION",
        "EP_UNSUPPORTED",
        "EP_NOT_APPLICABLE",
    }
    assert "source model" in ERROR_ACTION


def test_unknown_ep_is_not_checked_and_says_why(tmp_path: Path) -> None:
    got = check_compatibility(b"not even a model", FAKE_EP)
    assert got.state == "unavailable" and "does not know" in got.reason
