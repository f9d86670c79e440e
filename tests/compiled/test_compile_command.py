"""``onnxlint compile``: refusals (fast) and real QNN compiles, embedded and not (slow)."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import onnx
import pytest

from onnxlint.cli import main
from onnxlint.compiled import COMPILE_OPTIONS_KEY, SOURCE_HASH_KEY

from ..confirm.ep_support import require_ep
from .helpers import codes, lint_file, tiny_conv

# -- refusals: nothing is compiled, nothing the user owns is touched ----------------


@pytest.mark.parametrize(
    ("args", "make_output", "stderr_has"),
    [
        (["--ep", "qnn", "-o", "{out}"], True, "exists"),
        (["--ep", "qnn", "-o", "{src}", "--overwrite"], False, "must not be the source"),
        (["--ep", "nosuchep", "-o", "{out}"], False, "unknown execution provider"),
        (["--ep", "qnn", "--ep-option", "novalue", "-o", "{out}"], False, "KEY=VALUE"),
        (["--ep", "qnn", "-o", "{tmp}/no/such/folder/out.onnx"], False, "does not exist"),
    ],
    ids=["output-exists", "output-is-source", "unknown-ep", "bad-ep-option", "no-folder"],
)
def test_compile_refuses(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    make_output: bool,
    stderr_has: str,
) -> None:
    src = tmp_path / "model.onnx"
    onnx.save(tiny_conv(), str(src))
    out = tmp_path / "model_ctx.onnx"
    if make_output:
        out.write_bytes(b"user data")
    before = src.read_bytes()
    argv = [a.format(out=out, src=src, tmp=tmp_path) for a in args]
    assert main(["compile", str(src), *argv]) == 2
    assert stderr_has in capsys.readouterr().err
    assert src.read_bytes() == before
    if make_output:
        assert out.read_bytes() == b"user data"


def test_compile_refuses_an_unreadable_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "broken.onnx"
    src.write_bytes(b"\x08\x07garbage")
    assert main(["compile", str(src), "-o", str(tmp_path / "out.onnx")]) == 2
    assert "broken.onnx" in capsys.readouterr().err
    assert not (tmp_path / "out.onnx").exists()


# -- real compiles on the QNN HTP simulator -----------------------------------------


@pytest.fixture(scope="module")
def qnn_compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One source model compiled twice (embedded and sidecar), shared by the module."""
    require_ep("qnn")
    folder = tmp_path_factory.mktemp("qnn")
    src = folder / "model.onnx"
    onnx.save(tiny_conv(), str(src))
    out: dict[str, object] = {"src": src, "folder": folder}
    for embed in (True, False):
        target = folder / f"model_{'embed' if embed else 'sidecar'}_ctx.onnx"
        t0 = time.perf_counter()
        rc, payload = _compile_json(src, target, embed)
        out[f"{embed}"] = (rc, payload, target, time.perf_counter() - t0)
    return out


def _compile_json(src: Path, target: Path, embed: bool) -> tuple[int, dict[str, object]]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(
            [
                "compile",
                str(src),
                "--ep",
                "qnn",
                "-o",
                str(target),
                "--embed" if embed else "--no-embed",
                "--json",
            ]
        )
    return rc, json.loads(buf.getvalue())


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.parametrize("embed", [True, False], ids=["embedded", "sidecar"])
def test_qnn_compile_records_hash_options_and_validates(
    qnn_compiled: dict[str, object], embed: bool
) -> None:
    rc, payload, target, _ = qnn_compiled[f"{embed}"]  # type: ignore[misc]
    assert rc == 0, payload
    model = onnx.load(str(target), load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    src = qnn_compiled["src"]
    assert meta[SOURCE_HASH_KEY] == hashlib.sha256(Path(src).read_bytes()).hexdigest()  # type: ignore[arg-type]
    options = json.loads(meta[COMPILE_OPTIONS_KEY])
    assert options["ep"] == "QNNExecutionProvider" and options["embed"] is embed
    assert options["optimization"] == "disabled" and options["options"]["soc_model"] == "60"
    assert "ep_compatibility_info.QNNExecutionProvider" in meta
    ctx_nodes = [n for n in model.graph.node if n.op_type == "EPContext"]
    assert len(ctx_nodes) == 1
    embed_mode = next(a.i for a in ctx_nodes[0].attribute if a.name == "embed_mode")
    assert embed_mode == (1 if embed else 0)
    assert payload["validation"]["ok"] and payload["validation"]["inference"]["ok"]  # type: ignore[index]
    assert isinstance(payload["compile_s"], float) and payload["compile_s"] > 0
    sidecars = [Path(f) for f in payload["files"] if not str(f).endswith(".onnx")]  # type: ignore[union-attr]
    assert (len(sidecars) == 0) is embed
    # the rewritten model keeps the permissions ORT gave the files it wrote
    assert (
        Path(target).stat().st_mode & 0o777
        == (Path(target).parent / "model.onnx").stat().st_mode & 0o777
    )
    # no staging folder is left behind
    assert not [p for p in Path(target).parent.iterdir() if p.name.startswith(".onnxlint-compile")]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qnn_compiled_model_lint_says_why_compatibility_cannot_be_checked(
    qnn_compiled: dict[str, object],
) -> None:
    _, _, target, _ = qnn_compiled["False"]  # type: ignore[misc]
    report = lint_file(target, source=str(qnn_compiled["src"]))
    got = codes(report)
    assert got.get("OL701") == ["default"]
    assert "OL709" not in got  # compiled from this very source
    compat = [d for d in report.diagnostics if d.code == "OL708"]
    assert len(compat) == 1
    # the x86_64 simulator exposes a CPU device, and QNN validates NPU devices only
    assert compat[0].message_id in ("unavailable", "status")
    if compat[0].message_id == "unavailable":
        assert "NPU" in compat[0].message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qnn_compiled_sidecar_corrupted_or_mispointed(qnn_compiled: dict[str, object]) -> None:
    _, payload, target, _ = qnn_compiled["False"]  # type: ignore[misc]
    folder = Path(target).parent / "broken"
    folder.mkdir()
    model = onnx.load(str(target), load_external_data=False)
    sidecar = next(Path(f) for f in payload["files"] if str(f).endswith(".bin"))  # type: ignore[union-attr]
    # 1. sidecar truncated to nothing
    shutil.copy(target, folder / "a.onnx")
    (folder / sidecar.name).write_bytes(b"")
    assert codes(lint_file(folder / "a.onnx")).get("OL703") == ["empty"]
    # 2. ep_cache_context pointing at a file that is not there / out of the folder
    for name, location, code in (("b", "elsewhere.bin", "OL703"), ("c", "../../x.bin", "OL704")):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        for n in m.graph.node:
            for a in n.attribute:
                if a.name == "ep_cache_context":
                    a.s = location.encode()
        onnx.save(m, str(folder / f"{name}.onnx"))
        assert code in codes(lint_file(folder / f"{name}.onnx"))
    # 3. a recompiled source: the old compiled model is stale
    other = folder / "other_source.onnx"
    onnx.save(tiny_conv("conv_renamed"), str(other))
    stale = codes(lint_file(target, source=str(other)))
    assert stale.get("OL709") == ["mismatch"]


#: light models up to this many nodes are compiled and validated (alexnet, zfnet512): the
#: HTP simulator takes minutes per larger one on a 2-core machine (measured under load:
#: alexnet, 40 nodes, 66 s to compile + 70 s for the validating inference; squeezenet,
#: 105 nodes, 131 s to compile; resnet50, 415 nodes, still compiling after 15 min)
LIGHT_MAX_NODES = 40


def _compile_models() -> list[Path]:
    from ..conftest import REPO, light_models

    examples = [p for p in (REPO / "examples").rglob("*") if p.suffix in (".onnx", ".onnxtxt")]
    light = [m for m in light_models() if len(onnx.load(str(m)).graph.node) <= LIGHT_MAX_NODES]
    return sorted(examples) + light


def _compile_cases() -> list[tuple[Path, str]]:
    models = _compile_models()
    return [(m, "disabled") for m in models] + [(m, "basic") for m in models if m.stem == "demo"]


@pytest.mark.slow
@pytest.mark.ort_qnn
@pytest.mark.parametrize(
    ("model", "optimization"),
    _compile_cases(),
    ids=[f"{m.stem}-{o}" for m, o in _compile_cases()],
)
def test_qnn_compile_validates_every_example_and_light_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: Path, optimization: str
) -> None:
    """No false errors of compile's own validation: main_context=0 nodes, the IR version
    ORT itself writes, and "validation ok" never printed above a counted error."""
    require_ep("qnn")
    target = tmp_path / f"{model.stem}_ctx.onnx"
    args = ["compile", str(model), "--ep", "qnn", "-o", str(target)]
    assert main([*args, "--optimization", optimization]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    _, _, rest = out.partition("validation ok")
    assert rest, out
    counted = rest.split("not counted by validation")[0]
    assert " error:" not in counted, out
    from onnxlint.config import Config
    from onnxlint.engine import lint

    report = lint(target, config=Config(select=("OL0", "OL2", "OL7")), path_label=str(target))
    assert not report.errors, [d.message for d in report.errors]
