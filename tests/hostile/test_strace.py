"""Proof by system call: no command opens a file outside the model's folder (issue #20).

Each command runs under ``strace -f -e trace=open,openat`` (children included: the
level-1 and confirmation workers) on a model whose tensors name an outside file in
three ways: an absolute location, a folder symlink inside the model's folder that points
outside, and a plain name that exists only relative to the working directory. The test
fails on any open of that file, whatever the path it was opened by. The language
server is driven over its protocol the same way (workspace scan, confirmation, graph
view, an edit, the model as ONNX text in the editor).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from onnx import TensorProto, helper

from tests.hostile.support import REPO

STRACE = shutil.which("strace")
SECRET = "secret-weights.bin"


def _strace_works() -> bool:
    if STRACE is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(
        [STRACE, "-f", "-e", "trace=openat", "-o", "/dev/null", "true"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _strace_works(), reason="needs strace and ptrace")


def _external(name: str, location: str) -> TensorProto:
    tensor = TensorProto(name=name, data_type=TensorProto.INT64, dims=[] if name == "M" else [2])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "8")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _hostile(folder: Path, outside: Path) -> Path:
    """benchmarks' Loop model, its trip count and two more constants external, all three
    leading to ``outside/SECRET`` (the trip count by a plain name: the one the partition
    analysis once read relative to the working directory)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import partition_models

    (outside / SECRET).write_bytes(bytes(16))
    (folder / "data").symlink_to(outside, target_is_directory=True)
    model = partition_models.loop_with_fallback()
    trips = next(t for t in model.graph.initializer if t.name == "M")
    trips.CopyFrom(_external("M", SECRET))
    for i, ref in enumerate([str(outside / SECRET), f"data/{SECRET}"]):
        const = helper.make_node("Constant", [], [f"unused{i}"], value=_external(f"w{i}", ref))
        model.graph.node.insert(0, const)
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


COMMANDS = {
    "lint": ["--format", "json", "--no-progress"],
    "lint-cuda": ["--ep", "cuda", "--report", "partitions", "--format", "json", "--no-progress"],
    "confirm": ["--ep", "cpu", "--confirm", "--no-cache", "--format", "json", "--no-progress"],
    "fix-shapes": None,
    "compile": None,
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_command_opens_the_outside_file(tmp_path: Path, command: str) -> None:
    folder, outside = tmp_path / "model", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    model = _hostile(folder, outside)
    if command == "fix-shapes":
        args = ["fix-shapes", str(model), "-o", str(folder / "fixed.onnx"), "--dim", "N=1"]
    elif command == "compile":
        args = ["compile", str(model), "--ep", "qnn", "-o", str(folder / "ctx.onnx")]
    else:
        args = [str(model), *(COMMANDS[command] or [])]
    log = tmp_path / "strace.log"
    proc = subprocess.run(
        [
            STRACE or "strace",
            "-f",
            "-e",
            "trace=open,openat",
            "-o",
            str(log),
            sys.executable,
            "-m",
            "onnxlint",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=outside,  # where a working-directory fallback would find the plain name
        timeout=300,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stdout[-2000:], proc.stderr)
    opened = [line for line in log.read_text().splitlines() if SECRET in line]
    assert opened == [], opened


@pytest.mark.asyncio(loop_scope="function")
async def test_the_language_server_never_opens_the_outside_file(tmp_path: Path) -> None:
    """The server under strace on a workspace holding the hostile model: the workspace
    scan with an EP that partitions Loop bodies (CUDA; the partition analysis read the
    trip count before), confirmation on (CPU sessions), the graph view and its features,
    the file changing on disk, and the same graph as ONNX text opened in the editor."""
    import onnx
    from lsprotocol import types as lsp
    from pytest_lsp import ClientServerConfig, LanguageClient

    from onnxlint.lsp.workspace import graph_uri, path_to_uri
    from tests.lsp.session import start_session
    from tests.lsp.test_server_e2e import graph_view, wait_until

    folder, outside = tmp_path / "model", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    model = _hostile(folder, outside)
    text = folder / "m.onnxtxt"
    text.write_text(onnx.printer.to_text(onnx.load(str(model), load_external_data=False)))
    log = tmp_path / "strace.log"
    settings = {"eps": ["cuda", "cpu"], "confirm": True, "debounceMs": 0}
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    config = ClientServerConfig(
        server_command=[
            STRACE or "strace", "-f", "-e", "trace=open,openat", "-o", str(log),
            sys.executable, "-m", "onnxlint", "lsp",
        ],
        server_env=env,
    )  # fmt: skip
    cwd = os.getcwd()
    os.chdir(outside)  # where a working-directory fallback would find the plain name
    try:
        client = cast(LanguageClient, await config.start())
    finally:
        os.chdir(cwd)
    try:
        client.set_configuration(settings, section="onnxlint")
        await start_session(client, folder, settings)
        uri = path_to_uri(model)
        await wait_until(lambda: client.diagnostics.get(uri), 120)
        codes = {str(d.code) for d in client.diagnostics[uri]}
        assert {"OL010", "OL011"} & codes, codes
        view = await graph_view(client, model)
        assert view["nodes"]
        guri = graph_uri(model)
        ident = lsp.TextDocumentIdentifier(uri=guri)
        await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident))
        await client.text_document_code_lens_async(lsp.CodeLensParams(ident))
        client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams([lsp.FileEvent(uri, lsp.FileChangeType.Changed)])
        )
        turi = path_to_uri(text)
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(turi, "onnx", 1, text.read_text()))
        )
        await wait_until(lambda: client.diagnostics.get(turi), 120)
        # the confirmation ran (and was refused before ORT saw the model)
        await wait_until(
            lambda: any(str(d.code) == "OL908" for d in client.diagnostics.get(guri, [])), 120
        )
        await client.shutdown_session()
    finally:
        await client.stop()
    lines = log.read_text().splitlines()
    assert any(f'"{model}"' in line for line in lines), "strace saw the server read nothing"
    opened = [line for line in lines if SECRET in line]
    assert opened == [], opened
