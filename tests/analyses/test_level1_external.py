"""A model whose weights live in external data gets its level-1 graph: ORT's worker reads
the data from the model's own folder once every location is checked to be a regular
file inside it (``external_data_folder``); onnxlint itself never opens the data file,
and a location that leads outside the folder still gets no level-1 graph."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.level1.eligibility import EXTERNAL_DATA_MAX_BYTES, external_data_folder
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.engine import resolve_eps
from onnxlint.index import ModelIndex
from onnxlint.loader import load


def _model() -> onnx.ModelProto:
    """MatMul by a [64, 64] weight, then an Identity (which level 1 removes)."""
    w = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], "mm"),
        helper.make_node("Identity", ["m"], ["y"], "ident"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _save(folder: Path, data_name: str = "w.bin") -> Path:
    model = _model()
    onnx.external_data_helper.convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location=data_name, size_threshold=0
    )
    path = folder / "m.onnx"
    onnx.save_model(model, str(path))
    return path


def _context(path: Path) -> LintContext:
    cfg = Config()
    loaded = load(str(path), cfg.limits)
    assert loaded.model is not None
    return LintContext(
        loaded=loaded, index=ModelIndex(loaded.model), config=cfg, eps=resolve_eps(["qnn"], cfg)
    )


def test_external_data_in_the_model_folder_gets_a_level1_graph(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    path = _save(tmp_path)
    ctx = _context(path)
    assignment = ctx.analysis(Assignment)
    level = assignment.level("optimized")
    assert level is not None, assignment.optimized_note
    ops = {n.op_type for n in level.graph.index.nodes}
    assert "MatMul" in ops and "Identity" not in ops  # ORT's level 1 ran, with the weights


def test_a_location_leading_outside_the_folder_gets_none(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    inside = tmp_path / "model"
    inside.mkdir()
    path = _save(outside)
    os.replace(path, inside / "m.onnx")
    os.symlink(outside / "w.bin", inside / "w.bin")  # resolves outside the model folder
    ctx = _context(inside / "m.onnx")
    assert ctx.loaded.model is not None
    assert external_data_folder(ctx.loaded.model, ctx.loaded.base_dir) is None
    assignment = ctx.analysis(Assignment)
    assert assignment.level("optimized") is None
    assert "external data" in (assignment.optimized_note or "")


def test_only_a_model_with_checked_external_data_names_a_folder(tmp_path: Path) -> None:
    assert external_data_folder(_model(), tmp_path) is None  # no external data
    path = _save(tmp_path)
    model = onnx.load(str(path), load_external_data=False)
    assert external_data_folder(model, None) is None  # bytes: no folder to read from
    assert external_data_folder(model, tmp_path) == tmp_path
    (tmp_path / "w.bin").unlink()
    assert external_data_folder(model, tmp_path) is None  # OL010: missing


def test_external_data_past_the_limit_names_no_folder(tmp_path: Path) -> None:
    path = _save(tmp_path)
    model = onnx.load(str(path), load_external_data=False)
    with open(tmp_path / "w.bin", "r+b") as fh:  # sparse: nothing written, nothing read
        os.truncate(fh.fileno(), EXTERNAL_DATA_MAX_BYTES + 1)
    assert external_data_folder(model, tmp_path) is None
