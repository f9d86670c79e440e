"""What a lint of a large model no longer pays for (issue 19): the checker's serialisation
of a model read from a file, and the what-if fix's copies of weights it never reads.

Each test counts the mechanism (what the checker is handed, how many weights are put
back), never time; docs/performance.md lists what each one cost on BERT-base.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnxlint import engine, loader, tensors
from onnxlint.analyses.checked import SET_ASIDE_DOMAIN
from onnxlint.config import Config
from onnxlint.fixes import shapes as fix_shapes_module
from onnxlint.tensors import DEFAULT_MAX_ELEMENTS
from tests.conftest import parse
from tests.performance.test_model_copies import UNKNOWN_OP

VALID = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""

#: the checker's own finding (an attribute Relu does not have), from a file
CHECKER_BAD = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu <alpha: float = 0.5> (x)
}
"""


class _Given:
    """Records what ``onnx.checker.check_model`` is handed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.args: list[Any] = []
        real = onnx.checker.check_model

        def spy(model: Any, *args: Any, **kwargs: Any) -> None:
            self.args.append(model)
            real(model, *args, **kwargs)

        monkeypatch.setattr(onnx.checker, "check_model", spy)


def _ol101(report: Any) -> list[str]:
    return [d.message for d in report.diagnostics if d.code == "OL101"]


@pytest.mark.parametrize("text", [VALID, CHECKER_BAD], ids=["valid", "rejected"])
def test_the_checker_gets_the_file_bytes_instead_of_a_serialisation(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(parse(text), path)
    given = _Given(monkeypatch)
    config = Config(select=("OL101",))
    from_file = engine.lint(path, config=config)
    assert given.args == [path.read_bytes()]  # the parsed bytes: nothing serialised
    # the verdict is the one the checker gives the ModelProto (serialised by onnx)
    from_proto = engine.lint(onnx.load(path), config=config)
    assert isinstance(given.args[1], onnx.ModelProto)
    assert _ol101(from_file) == _ol101(from_proto)
    assert bool(_ol101(from_file)) == (text is CHECKER_BAD)


def test_a_model_the_checker_sees_changed_is_given_as_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unknown operators are set aside in a copy: the file's bytes are not that model."""
    path = tmp_path / "m.onnx"
    onnx.save(parse(UNKNOWN_OP), path)
    given = _Given(monkeypatch)
    engine.lint(path, config=Config(select=("OL101",)))
    assert len(given.args) == 1 and isinstance(given.args[0], onnx.ModelProto)
    assert any(n.domain == SET_ASIDE_DOMAIN for n in given.args[0].graph.node)


def test_the_parsed_bytes_are_kept_only_for_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(parse(VALID), path)
    assert loader.load(path).wire is None  # not kept unless asked
    assert loader.load(path, keep_wire=True).wire == path.read_bytes()
    assert loader.load(path.read_bytes(), keep_wire=True).wire == path.read_bytes()
    text = tmp_path / "m.onnxtxt"
    text.write_text(VALID)
    assert loader.load(text, keep_wire=True).wire is None  # text: no protobuf bytes
    seen: list[Any] = []
    engine.lint(path, observe=lambda ctx, report: seen.append(ctx.loaded.wire))
    assert seen == [None]  # released once the rules ran


def _big_weight_model() -> onnx.ModelProto:
    """A dynamic batch, a Shape->Reshape the fix folds, and a weight larger than any
    value onnxlint decodes (the fix leaves its data out until the end)."""
    k, n = 16, DEFAULT_MAX_ELEMENTS // 16 + 1
    w = numpy_helper.from_array(np.arange(k * n, dtype=np.float32).reshape(k, n) / 7, "w")
    tail = numpy_helper.from_array(np.array([-1], dtype=np.int64), "tail")
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Slice", ["s", "zero", "one"], ["b"]),
            helper.make_node("Concat", ["b", "tail"], ["shp"], axis=0),
            helper.make_node("Reshape", ["m", "shp"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [
            w,
            tail,
            numpy_helper.from_array(np.array([0], dtype=np.int64), "zero"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
        ],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _count_restored_weights(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the tensors whose data ``restore_data`` puts back, every call."""
    restored: list[str] = []
    real = tensors.restore_data

    def counted(model: onnx.ModelProto, left: dict[str, Any]) -> onnx.ModelProto:
        for t in model.graph.initializer:
            original = left.get(t.name)
            if original is not None and original.raw_data and not t.raw_data:
                restored.append(t.name)
        return real(model, left)

    monkeypatch.setattr(tensors, "restore_data", counted)
    monkeypatch.setattr(fix_shapes_module, "restore_data", counted)
    return restored


def test_the_shape_fix_copies_a_large_weight_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """It copied the model, then put the weights back after each of its inferences, and
    ORT's symbolic inference copied them again: now one copy, at the end."""
    model = _big_weight_model()
    restored = _count_restored_weights(monkeypatch)
    result = fix_shapes_module.fix_shapes(model, {"batch": 2})
    assert result.folded  # the Reshape's shape became an initializer: two inferences ran
    assert restored == ["w"]
    out = {t.name: t for t in result.model.graph.initializer}
    assert out["w"].raw_data == model.graph.initializer[0].raw_data
    assert out["w"] is not model.graph.initializer[0]  # a copy: the input is not changed
    assert [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim] == [
        "batch",
        "",
    ]
    onnx.checker.check_model(result.model, full_check=True)


class _CountingTensor:
    """A float tensor with raw data whose ``raw_data`` reads are counted (each read of a
    protobuf bytes field copies it: on BERT-base's weights a tenth of a second a walk)."""

    data_type = onnx.TensorProto.FLOAT
    data_location = onnx.TensorProto.DEFAULT
    external_data: tuple[()] = ()

    def __init__(self, elements: int, extra_bytes: int = 0) -> None:
        self.dims = [elements]
        self._raw = bytes(4 * elements + extra_bytes)
        self.reads = 0

    def HasField(self, name: str) -> bool:  # protobuf's spelling
        return name == "raw_data"

    @property
    def raw_data(self) -> bytes:
        self.reads += 1
        return self._raw


@pytest.mark.parametrize(
    "extra, expected", [(0, None), (4, (8, 9)), (2, (8, 0))], ids=["agrees", "more", "partial"]
)
def test_a_tensor_data_check_reads_the_raw_data_once(
    extra: int, expected: tuple[int, int] | None
) -> None:
    t = _CountingTensor(8, extra)
    assert tensors.data_mismatch(t) == expected  # type: ignore[arg-type]
    assert t.reads == 1


def _tensor_variants() -> list[onnx.TensorProto]:
    plain = numpy_helper.from_array(np.ones(5000, dtype=np.float32), "w")
    documented = onnx.TensorProto()
    documented.CopyFrom(plain)
    documented.doc_string = "weights"
    documented.segment.begin = 1
    external = onnx.TensorProto(name="e", data_type=onnx.TensorProto.FLOAT, dims=[4])
    external.data_location = onnx.TensorProto.EXTERNAL
    external.external_data.add(key="location", value="w.bin")
    strings = onnx.TensorProto(name="s", data_type=onnx.TensorProto.STRING, dims=[2])
    strings.string_data.extend([b"a", b"\xff"])
    # a name that is not UTF-8, as a hostile file holds it (protobuf field 8, length 2)
    bad_name = onnx.TensorProto()
    bad_name.ParseFromString(plain.SerializeToString() + b"\x42\x02\xc3\x28")
    out = [plain, documented, external, strings, bad_name, onnx.TensorProto()]
    if "metadata_props" in onnx.TensorProto.DESCRIPTOR.fields_by_name:
        meta = onnx.TensorProto(name="m")
        meta.metadata_props.add(key="k", value="v")
        out.append(meta)
    return out


@pytest.mark.parametrize("index", range(len(_tensor_variants())))
def test_the_string_walk_lists_a_tensor_as_list_fields_does_without_its_data(
    index: int,
) -> None:
    """The walk that checks names and UTF-8 lists a tensor's text and message fields
    itself: ``ListFields`` would hand back a copy of ``raw_data`` as well."""
    from google.protobuf.descriptor import FieldDescriptor

    from onnxlint.modelfile import measure

    tensor = _tensor_variants()[index]
    kinds = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE)
    expected = [(fd.name, v) for fd, v in tensor.ListFields() if fd.type in kinds]
    assert [(fd.name, v) for fd, v in measure._tensor_fields(tensor)] == expected
    assert all(fd.name != "raw_data" for fd, _ in measure._tensor_fields(tensor))
    model = helper.make_model(helper.make_graph([], "g", [], [], [tensor]))
    listed = measure.first_string_problem(model, 3)
    if index == 4:
        assert listed == ("onnx.TensorProto.name", None)  # not UTF-8


def test_the_level1_worker_gets_the_parsed_bytes_without_a_copy_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cold, ORT is handed the bytes the lint parsed (a copy of the file, read and hashed
    again, cost about 0.5 s on BERT-base); the job does not keep them after its start."""
    import shutil

    from onnxlint.analyses import level1
    from tests.performance.test_model_copies import MODEL as LEVEL1_MODEL
    from tests.performance.test_model_copies import Counts

    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(level1.NO_CACHE_ENV, raising=False)
    path = tmp_path / "m.onnx"
    onnx.save(parse(LEVEL1_MODEL), path)
    counts = Counts(monkeypatch)
    copies: list[Any] = []
    monkeypatch.setattr(shutil, "copyfile", lambda *a, **k: copies.append(a))
    jobs: list[Any] = []
    real_prefetch = level1.prefetch

    def prefetch(*args: Any, **kwargs: Any) -> Any:
        jobs.append(real_prefetch(*args, **kwargs))
        return jobs[-1]

    monkeypatch.setattr(level1, "prefetch", prefetch)
    report = engine.lint(path, eps=["qnn"], partition_summary=True)
    assert report.partitions
    assert len(counts.workers) == 1 and counts.given == path.read_bytes()
    assert counts.serialized == 0 and copies == []
    assert jobs and jobs[0].file is not None and jobs[0].file.data is None
