"""Every writer, every bad output target (issue #20, "clear write failures").

Writers: the lint report (``-o``), the HTML report (``--html``), the baseline
(``--write-baseline``), ``fix-shapes -o``, ``compile -o`` and ``probe -o``. Targets: the
input model itself, a symbolic link to it, a hard link to it, a folder, a symbolic link to
some other file, and (where mounting is allowed) a read-only folder. Each is one line on
stderr naming the path and the reason, exit code 2, the folder byte-for-byte and mtime
unchanged (input untouched, no temp file), and the other file a link points to untouched.
Before, ``onnxlint m.onnx -o m.onnx`` replaced the model with its own report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from tests.hostile import support as s
from tests.hostile.test_write_failures import _in_mount, needs_mount

#: writer -> arguments after ``python -m onnxlint``, with {model} and {out}
WRITERS: dict[str, list[str]] = {
    "lint -o": ["{model}", "--format", "json", "--no-progress", "-o", "{out}"],
    "lint --html": ["{model}", "--no-progress", "--html", "{out}"],
    "lint --write-baseline": ["{model}", "--no-progress", "--write-baseline", "{out}"],
    "fix-shapes -o": [
        "fix-shapes",
        "{model}",
        "-o",
        "{out}",
        "--dim",
        "N=1",
        "--no-lint",
        "--force",
    ],
    "compile -o": ["compile", "{model}", "--ep", "qnn", "-o", "{out}", "--overwrite"],
    "probe -o": ["probe", "--ep", "cpu", "-o", "{out}"],
}


def _model(path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path.write_bytes(model.SerializeToString())


def _input(folder: Path, model: Path) -> Path:
    return model


def _link_to_input(folder: Path, model: Path) -> Path:
    (folder / "link.onnx").symlink_to(model.name)
    return folder / "link.onnx"


def _hard_link_to_input(folder: Path, model: Path) -> Path:
    os.link(model, folder / "hard.onnx")
    return folder / "hard.onnx"


def _folder(folder: Path, model: Path) -> Path:
    (folder / "out.onnx").mkdir()
    return folder / "out.onnx"


def _link_elsewhere(folder: Path, model: Path) -> Path:
    (folder / "victim.txt").write_text("the user's file\n")
    (folder / "out.onnx").symlink_to("victim.txt")
    return folder / "out.onnx"


#: how a line may say that the target is the model being read
_IS_INPUT = ("input", "source model")
#: target -> (how to make it, the line must hold one of these)
TARGETS: dict[str, tuple[Callable[[Path, Path], Path], tuple[str, ...]]] = {
    "input": (_input, _IS_INPUT),
    "link-to-input": (_link_to_input, ("symbolic link", *_IS_INPUT)),
    "hard-link-to-input": (_hard_link_to_input, _IS_INPUT),
    "folder": (_folder, ("Is a directory",)),
    "link-elsewhere": (_link_elsewhere, ("symbolic link",)),
}


def _argv(writer: str, model: Path, out: Path) -> list[str]:
    args = [a.format(model=model, out=out) for a in WRITERS[writer]]
    return [sys.executable, "-m", "onnxlint", *args]


def _check_one_line(
    run: subprocess.CompletedProcess[str], out: Path, reasons: tuple[str, ...]
) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 2, (run.returncode, run.stdout[-1000:], run.stderr[-2000:])
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert str(out) in lines[0] and any(r in lines[0] for r in reasons), lines[0]


def _refused_untouched(
    folder: Path, writer: str, model: Path, out: Path, reasons: tuple[str, ...]
) -> None:
    """Run ``writer`` from ``folder``: one line naming ``out`` and a reason, nothing changed."""
    before = s.snapshot(folder)
    run = subprocess.run(
        _argv(writer, model, out),
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=s.CLI_TIMEOUT_S,
        check=False,
    )
    _check_one_line(run, out, reasons)
    assert s.snapshot(folder) == before


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_bad_output_target_is_one_line_and_touches_nothing(
    tmp_path: Path, writer: str, target: str
) -> None:
    make, reasons = TARGETS[target]
    if writer == "probe -o" and "input" in target:
        pytest.skip("probe reads no model")
    model = tmp_path / "m.onnx"
    _model(model)
    out = make(tmp_path, model)
    _refused_untouched(tmp_path, writer, model, out, reasons)


@needs_mount
@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_into_a_read_only_folder(tmp_path: Path, writer: str) -> None:
    model = tmp_path / "m.onnx"
    _model(model)
    ro = tmp_path / "ro"
    ro.mkdir()
    out = ro / ("out.json" if writer == "probe -o" else "out.onnx")
    before = s.snapshot(tmp_path)
    run = _in_mount(
        tmp_path,
        f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro}",
        _argv(writer, model, out),
    )
    _check_one_line(run, out, ("Read-only file system",))
    assert s.snapshot(tmp_path) == before


@pytest.mark.parametrize("writer", ["lint -o", "lint --html", "lint --write-baseline"])
def test_the_weights_file_of_a_model_is_an_input_too(tmp_path: Path, writer: str) -> None:
    """``onnxlint m.onnx -o m.data``, where m.data holds the model's external weights:
    refused like the model itself, the weights untouched."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="m.data", size_threshold=0)
    out = tmp_path / "m.data"
    _refused_untouched(tmp_path, writer, path, out, ("an input of this run",))
