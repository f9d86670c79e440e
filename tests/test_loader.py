"""Loading: every bad input becomes a load diagnostic with its code; external data is never read."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxlint
from onnxlint.limits import Limits
from onnxlint.loader import load
from onnxlint.modelfile.external import unsafe_location

from .conftest import light_models, parse

VALID = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n [r] y = Relu(x)\n}'


def _codes(report: onnxlint.Report) -> list[str]:
    return [d.code for d in report.diagnostics]


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("empty.onnx", b"", "OL003"),
        ("garbage.onnx", b"\xff\xfe\x00\x01not a protobuf at all\x80", "OL002"),
        ("text.onnx", b"hello, I am a text file\n", "OL002"),
        ("png.onnx", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "OL002"),
        (
            "lfs.onnx",
            b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12345\n",
            "OL002",
        ),
        ("bad.onnxtxt", b"<ir_version: 8>\ng (float x => y {", "OL006"),
    ],
)
def test_unreadable_inputs(tmp_path: Path, name: str, content: bytes, code: str) -> None:
    p = tmp_path / name
    p.write_bytes(content)
    report = onnxlint.lint(p, config={})
    assert report.fatal
    assert _codes(report) == [code]


def test_truncated_model(tmp_path: Path) -> None:
    data = parse(VALID).SerializeToString()
    p = tmp_path / "cut.onnx"
    p.write_bytes(data[: len(data) // 2])
    report = onnxlint.lint(p, config={})
    assert report.fatal and _codes(report) in (["OL002"],)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    assert _codes(onnxlint.lint(tmp_path / "nope.onnx", config={})) == ["OL001"]
    assert onnxlint.lint(tmp_path, config={}).diagnostics[0].message_id == "not_regular"


def test_text_format_is_parsed(tmp_path: Path) -> None:
    p = tmp_path / "m.onnxtxt"
    p.write_text(VALID)
    loaded = load(p)
    assert loaded.is_text and loaded.model is not None and not loaded.diagnostics


def test_limits_are_enforced() -> None:
    nested = parse(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (bool c, float[2] x) => (float[2] y) {\n"
        " [if0] y = If(c) <then_branch = t () => (float[2] a) { a = Relu(x) }, "
        "else_branch = e () => (float[2] b) { b = Neg(x) }>\n}"
    )
    assert [d.code for d in load(nested, Limits(max_subgraph_depth=0)).diagnostics] == ["OL005"]
    assert [d.code for d in load(nested, Limits(max_nodes=2)).diagnostics] == ["OL007"]
    data = nested.SerializeToString()
    assert [d.code for d in load(data, Limits(max_file_bytes=10)).diagnostics] == ["OL004"]


def _model_with_external(
    location: str, length: int | None = None, offset: int = 0
) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = onnx.TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])],
        [w],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_load_tells_whether_a_tensor_is_external(tmp_path: Path) -> None:
    """``LoadedModel.external`` (the checker's copy and the editor's next edit read it
    instead of walking every tensor again) says what a walk of the tensors says."""
    from onnxlint.loader import load_text
    from onnxlint.modelfile.textedit import NodeSite, splice_node_edit
    from onnxlint.tensors import has_external_data

    path = tmp_path / "m.onnx"
    (tmp_path / "w.bin").write_bytes(b"\0" * 16)
    path.write_bytes(_model_with_external("w.bin", 16).SerializeToString())
    outside = load(path)
    assert outside.model is not None and outside.external is True
    assert has_external_data(outside.model)
    text = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[4] x) => (float[4] y) {\n    y = Relu(x)\n}\n'
    inline = load_text(text.encode(), None, "m.onnxtxt")
    assert inline.model is not None and inline.external is False
    # an edit of one node keeps the answer when that node holds no external tensor
    site = NodeSite((), None, 0, 2, 2)
    for statement in (
        "    y = Sigmoid(x)",
        "    y = Constant <value: tensor = float[4] {1,2,3,4}> ()",
    ):
        new = text.replace("    y = Relu(x)", statement)
        splice = splice_node_edit(inline.model, text, new, site, Limits(), external=False)
        assert splice is not None and splice.loaded.external is False, statement
    unknown = splice_node_edit(inline.model, text, text.replace("Relu", "Tanh"), site, Limits())
    assert unknown is not None and unknown.loaded.external is None  # not told: not known


@pytest.mark.parametrize(
    ("location", "weights", "length", "expected"),
    [
        ("w.bin", 16, 16, []),
        ("w.bin", 16, None, []),
        ("w.bin", 8, 16, ["OL012"]),
        ("w.bin", 8, None, ["OL012"]),
        ("missing.bin", None, 16, ["OL010"]),
        ("/etc/passwd", None, 16, ["OL011"]),
        ("../outside.bin", None, 16, ["OL011"]),
        ("sub/../../outside.bin", None, 16, ["OL011"]),
        ("C:\\weights.bin", None, 16, ["OL011"]),
    ],
)
def test_external_data_references(
    tmp_path: Path, location: str, weights: int | None, length, expected
) -> None:
    if weights is not None:
        (tmp_path / location).write_bytes(b"\0" * weights)
    path = tmp_path / "m.onnx"
    path.write_bytes(_model_with_external(location, length).SerializeToString())
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    report = onnxlint.lint(path, config={"select": ["load"]})
    assert _codes(report) == expected
    assert not report.fatal
    assert before == {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}


def test_symlink_escaping_the_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"\0" * 16)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    os.symlink(outside, model_dir / "w.bin")
    path = model_dir / "m.onnx"
    path.write_bytes(_model_with_external("w.bin", 16).SerializeToString())
    report = onnxlint.lint(path, config={"select": ["load"]})
    assert _codes(report) == ["OL011"]
    assert "symlink" in report.diagnostics[0].message


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "w.bin")  # opening it for reading would block forever
    path = tmp_path / "m.onnx"
    path.write_bytes(_model_with_external("w.bin", 16).SerializeToString())
    report = onnxlint.lint(path, config={"select": ["load"]})
    assert _codes(report) == ["OL011"]


@pytest.mark.parametrize(
    ("location", "unsafe"),
    [
        ("w.bin", False),
        ("a/b/w.bin", False),
        ("/abs", True),
        ("..", True),
        ("a/../../b", True),
        ("\\\\srv\\share", True),
        ("", True),
    ],
)
def test_unsafe_location(location: str, unsafe: bool) -> None:
    assert (unsafe_location(location) is not None) is unsafe


@pytest.mark.parametrize("path", light_models(), ids=lambda p: p.stem)
def test_light_models_load_cleanly(path: Path) -> None:
    loaded = load(path)
    assert loaded.model is not None and not loaded.diagnostics and loaded.content_hash


@pytest.mark.parametrize("elements", [16, 3 << 20], ids=["small", "hashed-beside"])
def test_the_content_hash_is_the_sha256_of_the_file(tmp_path: Path, elements: int) -> None:
    """A large file is hashed in a thread while it is decoded; the hash is the same."""
    import hashlib

    from onnxlint.modelfile import read

    w = numpy_helper.from_array(np.arange(elements, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [elements])],
        [w],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    data = path.read_bytes()
    assert (len(data) >= read.HASH_BESIDE_FROM_BYTES) == (elements > 16)
    loaded = load(path)
    assert loaded.model is not None
    assert loaded.content_hash == hashlib.sha256(data).hexdigest()


def test_a_node_edit_read_declines_what_it_cannot_check(tmp_path: Path) -> None:
    """``read_node_edit`` reads bytes whose one changed node it checks, and declines
    (None: the whole load reads the file) whenever a check cannot be made on that node."""
    import hashlib

    from onnxlint.lsp.carryover import Layout
    from onnxlint.modelfile.read import read_node_edit

    model = parse(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (float[4] x) => (float[4] y) {\n    [a] t = Relu(x)\n    [b] y = Neg(t)\n}\n"
    )
    data = model.SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    layout = Layout.of(data)
    assert layout is not None and len(layout.nodes) == 2
    span = layout.nodes[1]
    got = read_node_edit(path, data, digest, span, Limits(), False)
    assert got is not None and got.model == model and got.content_hash == digest
    assert got.wire is data and got.external is False and not got.problems
    assert read_node_edit(path, data, digest, span, Limits(), True) is None  # external data
    assert read_node_edit(path, data, digest, span, Limits(), None) is None  # not known
    assert read_node_edit(path, data[:-1], digest, span, Limits(), False) is None  # not the file
    assert read_node_edit(path, data, digest, (span[0], span[0] + 3), Limits(), False) is None
    tight = Limits(max_node_io=1)  # the node reads one value and writes one: two
    assert read_node_edit(path, data, digest, span, tight, False) is None
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    link = outside / "m.onnx"
    link.symlink_to(path)
    assert read_node_edit(link, data, digest, span, Limits(), False) is None  # leads outside
