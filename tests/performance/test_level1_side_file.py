"""ORT's level-1 graph is asked with the large folded weights in a side file that nobody
reads; that file is the null device, so the weights are never written (issue 19: about
half of a cold lint of a model whose weights come from ConstantOfShape)."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

from onnxlint.runtime.client import start_optimize
from tests.conftest import parse

# ORT folds the ConstantOfShape into a 64 KiB initializer: past the side file's 1 KiB
MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[128,128] x) => (float[128,128] y)
<int64[2] shape = {128, 128}>
{
    w = ConstantOfShape <value = float[1] {0.5}> (shape)
    y = Add(x, w)
}
"""


def _level1(tmp_path: Path, model: Path, name: str, discard: bool) -> Path:
    out = tmp_path / name
    out.mkdir()
    res = start_optimize(
        model, out / "level1.onnx", external_initializers="level1.weights", discard_external=discard
    ).result()[0]
    assert res.ok, res.error
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="the null device is linked on POSIX")
def test_folded_weights_are_not_written_and_the_graph_is_the_same(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    model = tmp_path / "m.onnx"
    onnx.save(parse(MODEL), str(model))
    kept = _level1(tmp_path, model, "kept", discard=False)
    dropped = _level1(tmp_path, model, "dropped", discard=True)
    assert (kept / "level1.weights").stat().st_size >= 128 * 128 * 4  # the folded weights
    assert not (dropped / "level1.weights").is_file()  # absent, or the null device
    assert (kept / "level1.onnx").read_bytes() == (dropped / "level1.onnx").read_bytes()
    graph = onnx.load(str(dropped / "level1.onnx"), load_external_data=False).graph
    assert [n.op_type for n in graph.node] == ["Add"]  # ORT did fold it
