"""Hostile and broken model files, each linted through the CLI in a subprocess.

For every case: the exit code (2 unreadable, 1 findings), the diagnostic code, no
traceback on stderr, bounded time, and the folder holding the input unchanged
(same entries, hashes and mtimes; no new files).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
import pytest

from tests.hostile import support as s

#: generous: every case finishes in a few seconds; a hang means a FIFO/device was opened
MAX_SECONDS = 45
#: onnx + onnxruntime + numpy alone take ~100 MB; decoding 3 million nodes would take ~450 MB more
MAX_RSS_MB = 400


@dataclass(frozen=True)
class Case:
    id: str
    #: writes the input(s) into the folder; returns the CLI arguments
    build: Callable[[Path], list[str]]
    #: the exit codes allowed: (2,) unreadable, (1,) findings, (0, 1) a valid model that
    #: later rule families may or may not flag
    exit_codes: tuple[int, ...]
    codes: tuple[str, ...]
    #: a message fragment one of the diagnostics must contain
    says: str = ""
    #: extra CLI arguments (e.g. EPs, so that partition and transfer analyses run)
    args: tuple[str, ...] = ()
    slow: bool = False


HUGE_WHEN_INLINED = """\
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[1000000000] x) => (float[1000000000] y) {
    y = local.Double(x)
}
<domain: "local", opset_import: ["" : 17]>
Double (a) => (b) {
    b = Add(a, a)
}
"""


def _write(name: str, data: bytes | str | onnx.ModelProto) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        path = folder / name
        if isinstance(data, onnx.ModelProto):
            path.write_bytes(data.SerializeToString())
        elif isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
        return [str(path)]

    return build


def _with_limits(limits: str, inner: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        cfg = folder / "onnxlint.toml"
        cfg.write_text(f"[limits]\n{limits}\n", encoding="utf-8")
        return [*inner(folder), "--config", str(cfg)]

    return build


def _truncated(folder: Path) -> list[str]:
    data = onnx.parser.parse_model(s.VALID_TEXT).SerializeToString()
    path = folder / "cut.onnx"
    path.write_bytes(data[: len(data) * 2 // 3])
    return [str(path)]


def _sparse_over_2gib(folder: Path) -> list[str]:
    """A valid model header followed by a hole: 2 GiB + 1 KiB of size, almost no disk."""
    path = folder / "huge.onnx"
    path.write_bytes(onnx.parser.parse_model(s.VALID_TEXT).SerializeToString())
    os.truncate(path, 2**31 + 1024)
    return [str(path)]


def _fifo(folder: Path) -> list[str]:
    path = folder / "pipe.onnx"
    os.mkfifo(path)
    return [str(path)]


def _device_link(folder: Path) -> list[str]:
    path = folder / "zero.onnx"
    path.symlink_to("/dev/zero")
    return [str(path)]


def _folder_with_fifo(folder: Path) -> list[str]:
    os.mkfifo(folder / "pipe.onnx")
    (folder / "good.onnx").write_bytes(onnx.parser.parse_model(s.VALID_TEXT).SerializeToString())
    return [str(folder)]


CASES = [
    Case("empty-file", _write("empty.onnx", b""), (2,), ("OL003",)),
    Case("truncated", _truncated, (2,), ("OL002",)),
    Case(
        "png",
        _write("image.onnx", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64),
        (2,),
        ("OL002",),
    ),
    Case("plain-text", _write("notes.onnx", "these are not weights\n" * 20), (2,), ("OL002",)),
    Case(
        "git-lfs-pointer",
        _write(
            "lfs.onnx",
            "version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
            "size 102400000\n",
        ),
        (2,),
        ("OL002",),
    ),
    Case("sparse-over-2gib", _sparse_over_2gib, (2,), ("OL004",)),
    Case(
        "text-parse-error",
        _write("bad.onnxtxt", "<ir_version: 8>\ng (float x) => (y) { y = Relu( }"),
        (2,),
        ("OL006",),
        says="line: 2",
    ),
    Case(
        "text-not-utf8", _write("bad.onnxtxt", b"<ir_version: 8>\n\xff\xfe\x00"), (2,), ("OL006",)
    ),
    Case("nesting-10000-binary", _write("deep.onnx", s.nested_if_model(10_000)), (2,), ("OL005",)),
    Case("nesting-10000-text", _write("deep.onnxtxt", s.nested_if_text(10_000)), (2,), ("OL005",)),
    # past protobuf's own 100-message decode limit, below onnxlint's default of 64 subgraphs
    Case("nesting-40-binary", _write("deep40.onnx", s.nested_if_model(40)), (2,), ("OL005",)),
    Case("nesting-40-text", _write("deep40.onnxtxt", s.nested_if_text(40)), (2,), ("OL005",)),
    Case(
        "nesting-over-configured-limit",
        _with_limits("max-subgraph-depth = 3", _write("deep5.onnx", s.nested_if_model(5))),
        (2,),
        ("OL005",),
        says="nested 4 deep",
    ),
    Case(
        "nodes-3m-default-limit",
        _write("many.onnx", s.many_nodes_model(3_000_000)),
        (2,),
        ("OL007",),
        says="over the limit of 200000",
        slow=True,  # ~4 s of wire scanning by design
    ),
    Case(
        "nodes-hidden-in-subgraph",
        _with_limits("max-nodes = 1000", _write("hidden.onnx", s.many_nodes_model(5000, True))),
        (2,),
        ("OL007",),
    ),
    Case(
        "billion-length-claim", _write("claim.onnx", s.length_claim_model(10**9)), (2,), ("OL002",)
    ),
    Case("invalid-utf8-name", _write("utf8.onnx", s.invalid_utf8_model()), (2,), ("OL002",)),
    Case("dim-2^62", _write("dim62.onnx", s.huge_dims_model(2**62)), (1,), ("OL101",)),
    Case(
        "billion-dims-no-initializer",
        _write("billion.onnx", s.huge_dims_model(10**9, initializer_dims=False)),
        (0, 1),
        (),
    ),
    *(
        Case(
            f"transfer-2^62-{ep}",
            _write("transfer.onnx", s.huge_transfer_model(2**62)),
            (1,),
            (),
            args=("--ep", ep),
        )
        for ep in ("cpu", "qnn", "openvino", "tensorrt")
    ),
    # partition prediction inlines the function and infers the inlined graph again: ONNX's
    # data propagation would spell out the 10^9-element rank-1 tensor (5 GB, found by fuzzing)
    Case(
        "huge-rank-1-tensor-through-an-inlined-function",
        _write("inlined.onnx", onnx.parser.parse_model(HUGE_WHEN_INLINED)),
        (0, 1),
        (),
        args=("--ep", "qnn"),
    ),
    Case("cycle", _write("cycle.onnx", s.cycle_model()), (1,), ("OL108",)),
    Case(
        "self-referencing-subgraph",
        _write("selfref.onnx", s.self_referencing_subgraph_model()),
        (1,),
        ("OL101",),
    ),
    Case("model-is-fifo", _fifo, (2,), ("OL001",)),
    Case("model-is-device-symlink", _device_link, (2,), ("OL001",)),
    Case("folder-with-fifo", _folder_with_fifo, (2,), ("OL001",)),
]


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.slow else []) for c in CASES],
)
def test_hostile_file(tmp_path: Path, case: Case) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    args = case.build(folder)
    before = s.snapshot(folder)
    run = s.run_cli(*args, *case.args, "--fail-on", "hint", cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode in case.exit_codes, (run.returncode, run.stdout[-2000:], run.stderr)
    codes = run.codes
    for code in case.codes:
        assert code in codes, codes
    if case.exit_codes == (2,):
        assert any(c.startswith("OL0") for c in codes), codes
    assert "OL099" not in codes, run.stdout  # no rule crashed on it
    if case.says:
        assert case.says in run.stdout, run.stdout
    assert run.seconds < MAX_SECONDS
    assert run.peak_rss_mb < MAX_RSS_MB, run.peak_rss_mb
    assert s.snapshot(folder) == before
    print(f"{case.id}: rc={run.returncode} {run.seconds:.2f}s peak {run.peak_rss_mb:.0f} MB")
