"""No analysis reads a tensor's bytes from external data, and the loader sees every
tensor that can hold it (issue #20, item 1).

The partition analysis once read a Loop's trip count with ``numpy_helper.to_array``,
which follows an external-data location relative to the working directory: the first
8 bytes of a file outside the model's folder came back in the report. The loader
checked initializers and attributes of the main graph and its subgraphs, but not
function bodies' subgraphs, sparse tensors or training graphs, so ``--confirm`` handed
such models to ONNX Runtime and the level-1 graph was built for them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.level1 import skip_reason
from onnxlint.analyses.partition import Partitions
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.engine import resolve_eps
from onnxlint.index import ModelIndex
from onnxlint.loader import load
from onnxlint.tensors import inline_array, inline_scalar_int, iter_tensors
from tests.hostile import support as s

SECRET = 424242


def _external(tensor: TensorProto, location: str, length: int) -> TensorProto:
    tensor.ClearField("raw_data")
    tensor.ClearField("int64_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _loop_model(location: str) -> bytes:
    """benchmarks' loop_with_fallback, its trip count ``M`` stored as external data."""
    sys.path.insert(0, str(s.REPO / "benchmarks"))
    import partition_models

    model = partition_models.loop_with_fallback()
    trips = next(t for t in model.graph.initializer if t.name == "M")
    _external(trips, location, 8)
    return model.SerializeToString()


def _secret(path: Path) -> None:
    path.write_bytes(np.array(SECRET, np.int64).tobytes())


def _loop_notes(path: Path) -> list[str]:
    cfg = Config()
    loaded = load(path, cfg.limits)
    assert loaded.model is not None
    ctx = LintContext(
        loaded=loaded,
        index=ModelIndex(loaded.model),
        config=cfg,
        eps=resolve_eps(["cuda"], cfg),
    )
    plan = ctx.analysis(Partitions).plan("exported")
    assert plan is not None
    return [c.repeat for c in plan.crossings if c.repeat]


def test_trip_count_is_not_read_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "m.onnx").write_bytes(_loop_model("secret.bin"))
    _secret(tmp_path / "secret.bin")  # exists only relative to the working directory
    monkeypatch.chdir(tmp_path)
    notes = _loop_notes(folder / "m.onnx")
    assert notes, "the loop body should have crossings"
    assert not any(str(SECRET) in n for n in notes), notes
    assert all("trip count" in n for n in notes), notes


def test_trip_count_is_not_read_through_a_folder_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, outside = tmp_path / "model", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    _secret(outside / "secret.bin")
    (folder / "data").symlink_to(outside, target_is_directory=True)
    (folder / "m.onnx").write_bytes(_loop_model("data/secret.bin"))
    monkeypatch.chdir(folder)
    loaded = load(folder / "m.onnx")
    assert [d.code for d in loaded.diagnostics] == ["OL011"]
    assert "symlink" in loaded.diagnostics[0].message
    notes = _loop_notes(folder / "m.onnx")
    assert notes and not any(str(SECRET) in n for n in notes), notes


@pytest.mark.parametrize("where", ["cwd", "folder-symlink"])
def test_cli_never_opens_the_trip_count(tmp_path: Path, where: str) -> None:
    """The same through the CLI, the outside file a FIFO: opening it would hang."""
    folder, outside = tmp_path / "model", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    os.mkfifo(outside / "secret.bin")
    if where == "cwd":
        location, cwd = "secret.bin", outside
    else:
        (folder / "data").symlink_to(outside, target_is_directory=True)
        location, cwd = "data/secret.bin", folder
    (folder / "m.onnx").write_bytes(_loop_model(location))
    before = s.snapshot(tmp_path)
    run = s.run_cli(folder / "m.onnx", "--ep", "cuda", "--report", "partitions", cwd=cwd)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
    assert ("OL010" if where == "cwd" else "OL011") in run.codes, run.codes
    assert s.snapshot(tmp_path) == before


def test_inline_array_never_follows_a_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _secret(tmp_path / "secret.bin")
    monkeypatch.chdir(tmp_path)
    tensor = _external(numpy_helper.from_array(np.array(1, np.int64), "t"), "secret.bin", 8)
    assert inline_array(tensor) is None
    assert inline_scalar_int(tensor) is None
    # external_data entries alone (location left at DEFAULT) are not trusted either
    odd = numpy_helper.from_array(np.array(7, np.int64), "t")
    odd.external_data.add(key="location", value="secret.bin")
    assert inline_array(odd) is None
    assert inline_scalar_int(numpy_helper.from_array(np.array(7, np.int64), "t")) == 7
    huge = TensorProto(name="h", data_type=TensorProto.INT64, dims=[1 << 40])
    assert inline_array(huge) is None  # declared size past the cap: not decoded


# -- tensors the loader did not visit -----------------------------------------------------
def _tensor(location: str) -> TensorProto:
    return _external(helper.make_tensor("w", TensorProto.FLOAT, [4], [0.0] * 4), location, 16)


def _sparse(location: str) -> onnx.SparseTensorProto:
    values = _tensor(location)
    values.dims[:] = [1]
    indices = helper.make_tensor("i", TensorProto.INT64, [1], [0])
    return helper.make_sparse_tensor(values, indices, [4])


def _hostile_model(where: str, location: str) -> onnx.ModelProto:
    """A valid graph (Relu) plus one external tensor at ``where``."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    functions: list[onnx.FunctionProto] = []
    training: list[onnx.TrainingInfoProto] = []
    if where == "sparse-constant":
        nodes.insert(0, helper.make_node("Constant", [], ["c"], sparse_value=_sparse(location)))
    elif where == "sparse-attribute-list":
        attr = helper.make_attribute("s", [_sparse(location)])
        node = helper.make_node("Constant", [], ["c"], name="c", value_float=1.0)
        node.attribute.append(attr)
        nodes.insert(0, node)
    elif where in ("function-subgraph", "function-default"):
        const = helper.make_node("Constant", [], ["t"], value=_tensor(location))
        branch = helper.make_graph(
            [const], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])]
        )
        other = helper.make_graph(
            [helper.make_node("Identity", ["a"], ["e"])],
            "else",
            [],
            [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])],
        )
        body = [
            helper.make_node("ReduceMin", ["a"], ["m"], keepdims=0),
            helper.make_node("Cast", ["m"], ["c"], to=TensorProto.BOOL),
            helper.make_node("If", ["c"], ["b"], then_branch=branch, else_branch=other),
        ]
        if where == "function-default":
            body = [helper.make_node("Identity", ["a"], ["b"])]
        fn = helper.make_function("local", "f", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
        if where == "function-default":
            fn.attribute_proto.append(helper.make_attribute("w", _tensor(location)))
        functions.append(fn)
        nodes = [helper.make_node("f", ["x"], ["y"], domain="local", name="call")]
    elif where in ("training-initialization", "training-algorithm"):
        graph = helper.make_graph(
            [helper.make_node("Constant", [], ["k"], value=_tensor(location))],
            "train",
            [],
            [helper.make_tensor_value_info("k", TensorProto.FLOAT, [4])],
        )
        info = onnx.TrainingInfoProto()
        target = info.initialization if where == "training-initialization" else info.algorithm
        target.CopyFrom(graph)
        training.append(info)
    elif where == "sparse-initializer":
        pass
    else:
        raise AssertionError(where)
    graph = helper.make_graph(nodes, "g", [x], [y])
    if where == "sparse-initializer":
        graph.sparse_initializer.append(_sparse(location))
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        ir_version=8,
        functions=functions,
    )
    model.training_info.extend(training)
    return model


PLACES = [
    "sparse-constant",
    "sparse-attribute-list",
    "sparse-initializer",
    "function-subgraph",
    "function-default",
    "training-initialization",
    "training-algorithm",
]


@pytest.mark.parametrize("where", PLACES)
def test_every_tensor_is_visited(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(tmp_path / "secret.bin")
    model = _hostile_model(where, str(tmp_path / "secret.bin"))
    assert any(t.data_location == TensorProto.EXTERNAL for t, _ in iter_tensors(model))
    (folder / "m.onnx").write_bytes(model.SerializeToString())
    loaded = load(folder / "m.onnx")
    assert loaded.model is not None
    assert [d.code for d in loaded.diagnostics] == ["OL011"], loaded.diagnostics
    # ORT would read it too: the level-1 graph is not built for such a model
    assert skip_reason(loaded.model) is not None


@pytest.mark.parametrize("where", ["sparse-constant", "function-subgraph", "training-algorithm"])
def test_confirm_refuses_hidden_external_data(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(tmp_path / "secret.bin")
    model = _hostile_model(where, str(tmp_path / "secret.bin"))
    (folder / "m.onnx").write_bytes(model.SerializeToString())
    before = s.snapshot(tmp_path)
    run = s.run_cli(folder / "m.onnx", "--confirm", "--no-cache", "--ep", "cpu", cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
    assert "OL011" in run.codes, run.codes
    assert s.snapshot(tmp_path) == before


def test_measure_sees_nesting_in_function_bodies() -> None:
    """A function body's subgraphs count toward max-subgraph-depth like the main graph's."""
    from onnxlint.limits import Limits

    model = _hostile_model("function-subgraph", "w.bin")
    loaded = load(model, Limits(max_subgraph_depth=0))
    assert [d.code for d in loaded.diagnostics] == ["OL005"]


def test_only_the_tensors_module_decodes_tensor_data() -> None:
    """Every value read from a tensor goes through onnxlint.tensors.inline_array; nothing
    in the package asks onnx to read external data."""
    needles = ("to_array(", "external_data_helper", "load_external_data_for")
    offenders = [
        str(p.relative_to(s.REPO))
        for p in (s.REPO / "onnxlint").rglob("*.py")
        if p.name != "tensors.py" and any(n in p.read_text() for n in needles)
    ]
    assert offenders == []
