"""What a lint no longer does to a large model: serialise it, hash it or copy its weights
more often than it must (issue 19).

On a model with hundreds of MB of weights each ``SerializeToString``/``ByteSize`` and
each full copy costs about a second. These tests count the mechanisms, not time: the
level-1 cache key of a model read from a file comes from the loader's hash (no second
serialisation, warm or cold), ORT is handed a verified copy of the file, a ModelProto
is measured once, a what-if's pinned copy is not hashed, and ORT's session types copy
the weights once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnxlint import engine, tensors
from onnxlint.analyses import level1, session_types
from onnxlint.analyses.level1 import cache as level1_cache
from onnxlint.config import Config
from onnxlint.modelfile import read as modelfile_read
from onnxlint.runtime import client
from onnxlint.tensors import DATALESS_MIN_ELEMENTS
from tests.conftest import parse
from tests.performance.test_stages import MODEL as SHAPE_RELU_RESHAPE
from tests.test_level1_cache import MODEL as LEVEL1_MODEL

#: ORT folds its Shape of a static input: the level-1 graph needs the worker (not inert)
MODEL = LEVEL1_MODEL


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(level1.NO_CACHE_ENV, raising=False)
    return tmp_path / "cache" / "level1"


class Counts:
    """Counts the level-1 job's serialisations and the workers it starts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.serialized = 0
        self.workers: list[Path] = []
        real_serialize, real_start = level1.serialize, client.start_optimize

        def serialize(model: onnx.ModelProto) -> bytes:
            self.serialized += 1
            return real_serialize(model)

        def start(model: Any, *args: Any, **kwargs: Any) -> client.PendingRun:
            self.workers.append(Path(model))
            self.given = Path(model).read_bytes()
            return real_start(model, *args, **kwargs)

        monkeypatch.setattr(level1, "serialize", serialize)
        monkeypatch.setattr(client, "start_optimize", start)


def _lint(source: Any) -> Any:
    return engine.lint(source, eps=["qnn"], partition_summary=True)


def test_a_model_file_is_keyed_by_its_hash_and_given_to_ort_as_read(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(parse(MODEL), path)
    data = path.read_bytes()
    counts = Counts(monkeypatch)

    cold = _lint(path)
    assert counts.serialized == 0  # the key is the loader's hash
    assert len(counts.workers) == 1
    assert counts.given == data  # ORT reads exactly the file's bytes
    entries = list(cache_dir.glob("*.level1"))
    assert len(entries) == 1
    material = level1_cache.key_material(data)
    assert material is not None
    assert entries[0].name.startswith(level1_cache.cache_key(material))

    warm = _lint(path)
    assert counts.serialized == 0 and len(counts.workers) == 1  # a hit, nothing serialised
    assert [p.to_dict() for p in warm.partitions] == [p.to_dict() for p in cold.partitions]


def test_a_model_proto_is_still_serialised_for_ort(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = Counts(monkeypatch)
    model = parse(MODEL)
    _lint(model)
    assert counts.serialized == 1 and len(counts.workers) == 1
    assert counts.given == model.SerializeToString()


def test_a_file_changed_after_reading_falls_back_to_the_parsed_model(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.onnx"
    model = parse(MODEL)
    onnx.save(model, path)
    loaded = modelfile_read.read(path)
    path.write_bytes(path.read_bytes() + b"\x00")  # not what the lint parsed any more
    assert loaded.model is not None and loaded.real_path is not None
    file = level1.model_file(loaded, loaded.model)
    assert file is not None
    counts = Counts(monkeypatch)
    job = level1.Level1Job(loaded.model, cache_dir=cache_dir, file=file).start()
    try:
        graph, _ = job.result()
    finally:
        job.close()
    assert graph is not None
    assert counts.serialized == 1
    assert counts.given == loaded.model.SerializeToString()


def test_no_file_for_text_or_a_rewritten_model(tmp_path: Path) -> None:
    text = tmp_path / "m.onnxtxt"
    text.write_text(MODEL)
    loaded = modelfile_read.read(text)
    assert loaded.model is not None
    assert level1.model_file(loaded, loaded.model) is None
    binary = tmp_path / "m.onnx"
    onnx.save(parse(MODEL), binary)
    loaded = modelfile_read.read(binary)
    assert loaded.model is not None
    assert level1.model_file(loaded, loaded.model) is not None
    copy = onnx.ModelProto()
    copy.CopyFrom(loaded.model)
    assert level1.model_file(loaded, copy) is None  # e.g. dims written in by --assume-dim


def _hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = modelfile_read._hash

    def counted(data: bytes) -> str:
        sizes.append(len(data))
        return real(data)

    monkeypatch.setattr(modelfile_read, "_hash", counted)
    return sizes


def test_a_model_proto_is_hashed_once_and_unhashed_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = parse(MODEL)
    sizes = _hashes(monkeypatch)
    loaded = modelfile_read.read(model)
    assert sizes == [model.ByteSize()] and loaded.size == model.ByteSize()
    assert loaded.content_hash == hashlib.sha256(model.SerializeToString(True)).hexdigest()
    measured: list[int] = []
    real_size = modelfile_read.serialized_size
    monkeypatch.setattr(
        modelfile_read, "serialized_size", lambda m: measured.append(1) or real_size(m)
    )
    quiet = modelfile_read.read(model, hash_proto=False)
    # neither hashed nor measured: the size only decides whether to hash
    assert len(sizes) == 1 and quiet.content_hash == "" and quiet.size == 0
    assert measured == []


def test_the_what_if_lint_does_not_hash_its_pinned_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(level1.NO_CACHE_ENV, "1")
    path = tmp_path / "dyn.onnx"
    onnx.save(parse(SHAPE_RELU_RESHAPE), path)
    calls: list[bool] = []
    real = engine.lint

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("hash_proto", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "lint", spy)
    report = _lint(path)
    assert report.what_ifs, "the model's dynamic dim should give QNN a what-if"
    assert report.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert calls == [True, False]  # the user's model, then the pinned copy unhashed


def _weighted_model() -> onnx.ModelProto:
    n = DATALESS_MIN_ELEMENTS * 2
    w = numpy_helper.from_array(np.arange(n, dtype=np.float32).reshape(n, 1), "w")
    shape = numpy_helper.from_array(np.array([1, n], dtype=np.int64), "shape")
    g = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Reshape", ["w", "shape"], ["wr"]),
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Reshape", ["m", "s"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [w, shape],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_session_types_copy_the_weights_once(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _weighted_model()
    before = model.SerializeToString()
    inferred_shapes: list[int] = []
    real_infer = onnx.shape_inference.infer_shapes

    def infer(m: onnx.ModelProto, *args: Any, **kwargs: Any) -> onnx.ModelProto:
        # the inference pass never sees the large weight's data
        w = next(t for t in m.graph.initializer if t.name == "w")
        inferred_shapes.append(len(w.raw_data))
        return real_infer(m, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", infer)
    calls = {"dataless_copy": 0, "restore_data": 0}
    for name in calls:
        real = getattr(tensors, name)

        def counted(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(tensors, name, counted)
    out = session_types.infer_session_types(model)
    # the Shape of a static input is a constant: a second pass, on the same light copy
    assert len(inferred_shapes) >= 2 and set(inferred_shapes) == {0}
    assert calls == {"dataless_copy": 1, "restore_data": 1}
    assert model.SerializeToString() == before  # the input is never changed
    w_in = next(t for t in model.graph.initializer if t.name == "w")
    w_out = next(t for t in out.graph.initializer if t.name == "w")
    assert w_out.raw_data == w_in.raw_data  # the data is back in the result
    y = next(v for v in (*out.graph.value_info, *out.graph.output) if v.name == "m")
    assert [d.dim_value for d in y.type.tensor_type.shape.dim] == [1, 1]


class _CountingOnnx:
    """The ``onnx`` module as the checker's verdict sees it, counting the ModelProtos it makes."""

    def __init__(self) -> None:
        self.made = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(onnx, name)

    def ModelProto(self) -> onnx.ModelProto:  # stands in for the class
        self.made += 1
        return onnx.ModelProto()


UNKNOWN_OP = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    [f] y = Frobnicate(x)
}
"""


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-data"])
def test_the_checker_rule_copies_the_model_at_most_once(
    external: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint.analyses import checked

    model = parse(UNKNOWN_OP)
    if external:
        w = model.graph.initializer.add()
        w.name, w.data_type = "w", onnx.TensorProto.FLOAT
        w.dims.extend([4])
        w.data_location = onnx.TensorProto.EXTERNAL
        w.external_data.add(key="location", value="w.bin")
        (tmp_path / "w.bin").write_bytes(bytes(16))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    counting = _CountingOnnx()
    monkeypatch.setattr(checked, "onnx", counting)
    engine.lint(path, config=engine.Config(select=("OL101",)))
    # inline: the copy with the unknown op set aside; external data: the copy without it
    # (made in tensors.without_external_data, not counted here) and no second one
    assert counting.made == (0 if external else 1)


def _sized_model(sizes: list[int], typed: bool = False, doc: bool = False) -> onnx.ModelProto:
    """A graph adding float vectors of the given element counts (as raw data by default)."""
    inits = []
    for i, n in enumerate(sizes):
        t = numpy_helper.from_array(np.ones(n, dtype=np.float32), f"w{i}")
        if typed:
            t.ClearField("raw_data")
            t.float_data.extend([1.0] * n)
        if doc:
            t.doc_string = "weights"
        inits.append(t)
    nodes = [helper.make_node("Identity", [f"w{i}"], [f"y{i}"]) for i in range(len(sizes))]
    outs = [
        helper.make_tensor_value_info(f"y{i}", onnx.TensorProto.FLOAT, None)
        for i in range(len(sizes))
    ]
    g = helper.make_graph(nodes, "g", [], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    "sizes, typed, doc",
    [
        ([10], False, False),  # nothing large: ByteSize itself
        ([DATALESS_MIN_ELEMENTS + 1], False, False),
        ([5000, 40_000, 3, 2**21], False, False),  # 2, 3 and 4-byte length prefixes
        ([5000, 2**22], True, False),  # typed data: measured the ordinary way
        ([5000], False, True),  # another field on the tensor: likewise
    ],
)
def test_serialized_size_is_bytesize(sizes: list[int], typed: bool, doc: bool) -> None:
    from onnxlint.modelfile.measure import serialized_size

    model = _sized_model(sizes, typed, doc)
    assert serialized_size(model) == model.ByteSize() == len(model.SerializeToString())


#: pinned dims: the Reshape's shape folds, and ``heads`` (read only by the size
#: computation) is left unused while the weight ``w`` stays
_FOLDABLE = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 8, 16] x) => (float[2, 8, 4, 4] y)
    <int64[2] heads = {4, 4}, float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    s = Shape(x)
    i0 = Constant<value = int64[1] {0}>()
    i1 = Constant<value = int64[1] {1}>()
    b = Gather<axis = 0>(s, i0)
    q = Gather<axis = 0>(s, i1)
    shp = Concat<axis = 0>(b, q, heads)
    t = Reshape(x, shp)
    y = Add(t, w)
}
"""


def test_folding_sizes_removes_initializers_in_place_without_copying_the_kept_ones() -> None:
    """The what-if's fix used to clear the initializers and add the kept ones again, a
    copy of every weight; the kept tensors are now the same messages as before."""
    from onnxlint.fixes.shapes import _fold_size_inputs

    model = parse(_FOLDABLE)
    weight = model.graph.initializer[1]
    folded, removed = _fold_size_inputs(model)
    assert folded and removed == 6
    names = [t.name for t in model.graph.initializer]
    assert names == ["w", "shp__static"]
    assert model.graph.initializer[0] is weight  # not a copy


def _count_weight_restores(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many weights each ``restore_data`` call that has any to put back puts back."""
    from onnxlint.analyses import level_graph

    restored: list[int] = []
    real = tensors.restore_data

    def counted(model: onnx.ModelProto, left: dict[str, Any]) -> onnx.ModelProto:
        if left:
            restored.append(len(left))
        return real(model, left)

    monkeypatch.setattr(tensors, "restore_data", counted)
    monkeypatch.setattr(level_graph, "restore_data", counted)
    return restored


def test_a_lint_reads_the_inferred_types_without_copying_the_weights_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Shapes analysis and the session types infer on a copy without the large
    weights' data; the assignment reads only their types, so no weight is copied back
    (it was once per inference, about a second per lint of BERT-base)."""
    restored = _count_weight_restores(monkeypatch)
    report = engine.lint(_weighted_model(), eps=["qnn"], partition_summary=True, what_if=False)
    assert report.partitions  # the assignment ran, on the inferred types
    assert restored == []


def test_the_level_graph_gets_the_weights_back_when_it_keeps_the_inferred_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from onnxlint.analyses.level_graph import EXPORTED, build_level_graph
    from onnxlint.analyses.session_types import infer_session_types_without_weights
    from onnxlint.index import ModelIndex

    model = _weighted_model()
    inferred, left = infer_session_types_without_weights(model)
    assert left and not next(t for t in inferred.graph.initializer if t.name == "w").raw_data
    restored = _count_weight_restores(monkeypatch)
    # the lint's own index: only the types are read, nothing is put back
    build_level_graph(
        model, EXPORTED, inferred=inferred, source_index=ModelIndex(model), weights_left_out=left
    )
    assert restored == []
    # no index to reuse: the copy becomes the level graph's model, with its weights
    lg = build_level_graph(model, EXPORTED, inferred=inferred, weights_left_out=left)
    assert restored == [1] and lg.model is inferred
    w = next(t for t in lg.model.graph.initializer if t.name == "w")
    assert w.raw_data == next(t for t in model.graph.initializer if t.name == "w").raw_data


def _ort_types(model: onnx.ModelProto) -> dict[str, Any]:
    from onnxlint.analyses.shapes import collect_value_types

    return collect_value_types(model)


def _contrib_model() -> onnx.ModelProto:
    """Large weights, and an op ONNX has no schema for (only ORT's tool types it: no rule of
    analyses.contrib_types either)."""
    n = DATALESS_MIN_ELEMENTS * 2
    w = numpy_helper.from_array(np.ones((4, n), dtype=np.float32), "w")
    b = numpy_helper.from_array(np.ones((n,), dtype=np.float32), "b")
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("BiasAdd", ["a", "b", "a"], ["f"], domain="com.microsoft"),
            helper.make_node("Relu", ["f"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [w, b],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(g, opset_imports=opsets)


def test_ort_symbolic_inference_reads_the_weights_where_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ORT's symbolic inference copied the whole model, and the Shapes analysis put every
    weight back into its inferred copy first; the tool now copies the copy without the
    weights and reads the values from the original tensors: the same types, no restore."""
    from onnxlint.analyses import symbolic as symbolic_module
    from onnxlint.analyses.shapes import (
        Shapes,
        infer_model,
        infer_model_without_weights,
        symbolic_infer,
    )
    from onnxlint.context import LintContext
    from onnxlint.index import ModelIndex
    from onnxlint.loader import LoadedModel

    model = _contrib_model()
    with_data, _ = infer_model(model)
    want = symbolic_infer(with_data)
    assert want is not None
    given: list[onnx.ModelProto] = []
    real = symbolic_module.symbolic_infer

    def spy(m: onnx.ModelProto, weights: Any = None) -> Any:
        given.append(m)
        return real(m, weights)

    monkeypatch.setattr(symbolic_module, "symbolic_infer", spy)
    restored = _count_weight_restores(monkeypatch)
    ctx = LintContext(loaded=LoadedModel(model=model), index=ModelIndex(model), config=Config())
    shapes = ctx.analysis(Shapes)
    assert shapes.used_symbolic and len(given) == 1
    stub = next(t for t in given[0].graph.initializer if t.name == "w")
    assert not stub.raw_data  # the tool was given the copy without the weights
    assert restored == []
    # the tool's answer without the weights in its copy is the answer with them
    light, _, left = infer_model_without_weights(model)
    assert left
    got = real(light, left)
    assert got is not None
    assert _ort_types(got) == _ort_types(want)
