"""ORT's symbolic shape inference answers are kept on disk per input (issue 19): a lint of
a model seen before, and a what-if pinning the same dims, read the answer back instead of
importing sympy and running ORT's tool (0.3 s to seconds per model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

import onnxlint
from onnxlint.analyses import symbolic, symbolic_cache
from onnxlint.analyses.shapes import Shapes, value_type_of
from onnxlint.fixes.shapes import fix_shapes

from ..conftest import parse

#: ONNX has no schema for the contrib BiasAdd, nor analyses.contrib_types a rule (no CPU
#: kernel to measure it with): only ORT's symbolic inference knows 't'
CONTRIB = (
    '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>\n'
    "g (float[batch,4] x) => (float[batch,4] y) {\n [m] t = com.microsoft.BiasAdd(x, x, x)\n"
    " [r] y = Relu(t)\n}"
)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(folder))
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "0")
    return folder


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[onnx.ModelProto]:
    """The models ORT's tool was run on (it still runs)."""
    asked: list[onnx.ModelProto] = []
    real = symbolic.symbolic_infer

    def counting(model: onnx.ModelProto, weights: Any = None) -> onnx.ModelProto | None:
        asked.append(model)
        return real(model, weights)

    monkeypatch.setattr(symbolic, "symbolic_infer", counting)
    return asked


def _model_file(tmp_path: Path, text: str = CONTRIB) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(parse(text), path)
    return path


def _t_type(report: onnxlint.Report) -> list[tuple[str, str, str]]:
    return [(d.code, d.message_id, d.message) for d in report.diagnostics]


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / symbolic_cache.FOLDER).glob("*.symbolic"))


def _stored_key(cache: Path) -> dict[str, Any]:
    """The key of the one entry in ``cache``."""
    (entry,) = _entries(cache)
    key: dict[str, Any] = json.loads(entry.read_bytes().partition(b"\n")[0])["key"]
    return key


def _shapes_of(path: Path) -> Shapes:
    from onnxlint.context import LintContext
    from onnxlint.index import ModelIndex
    from onnxlint.loader import load

    loaded = load(path)
    assert loaded.model is not None and loaded.content_hash
    ctx = LintContext(loaded=loaded, index=ModelIndex(loaded.model), config=onnxlint.Config())
    return ctx.analysis(Shapes)


def test_a_second_lint_reads_the_answer_instead_of_running_ort(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto]
) -> None:
    path = _model_file(tmp_path)
    first = _shapes_of(path)
    assert len(calls) == 1 and first.used_symbolic
    assert first.value_type("t") is not None and first.value_type("t").shape == ("batch", 4)
    (entry,) = _entries(cache)
    header = json.loads(entry.read_bytes().partition(b"\n")[0])
    assert header["schema"] == symbolic_cache.SCHEMA and header["status"] == "ok"
    second = _shapes_of(path)
    assert len(calls) == 1  # not run again
    assert second.used_symbolic and second.value_type("t") == first.value_type("t")
    assert second._table == first._table


def test_a_lint_from_the_cache_reports_what_a_lint_that_ran_ort_reports(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto]
) -> None:
    path = _model_file(tmp_path)
    ran = onnxlint.lint(path, eps=["qnn"], config={})
    ran_ort = len(calls)  # the model's shapes, and the what-if's pinned copy (batch=1)
    read = onnxlint.lint(path, eps=["qnn"], config={})
    assert ran_ort == 2 and len(calls) == ran_ort
    assert _t_type(ran) == _t_type(read) and ran.diagnostics
    assert [w.after for w in ran.what_ifs] == [w.after for w in read.what_ifs] != []


def test_a_failed_run_is_kept_too(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []

    def failing(model: onnx.ModelProto, weights: Any = None) -> None:
        asked.append(1)
        return None

    monkeypatch.setattr(symbolic, "symbolic_infer", failing)
    path = _model_file(tmp_path)
    assert not _shapes_of(path).used_symbolic
    (entry,) = _entries(cache)
    assert json.loads(entry.read_bytes().partition(b"\n")[0])["status"] == "error"
    assert not _shapes_of(path).used_symbolic and asked == [1]


def test_the_cache_switch_keeps_answers_off_the_disk(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    path = _model_file(tmp_path)
    _shapes_of(path)
    _shapes_of(path)
    assert len(calls) == 2 and _entries(cache) == []


def test_a_model_without_an_origin_hash_is_not_cached(
    cache: Path, calls: list[onnx.ModelProto]
) -> None:
    model = parse(CONTRIB)
    Shapes.of_model(model)
    Shapes.of_model(model)
    assert len(calls) == 2 and _entries(cache) == []


def test_another_model_or_another_origin_is_another_entry(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto]
) -> None:
    _shapes_of(_model_file(tmp_path))
    other = tmp_path / "other"
    other.mkdir()
    _shapes_of(_model_file(other, CONTRIB.replace("t = com", "u = com").replace("(t)", "(u)")))
    assert len(calls) == 2 and len(_entries(cache)) == 2
    # the same input under another origin (weights' data it stands for) is asked again
    inferred = parse(CONTRIB)
    a = symbolic_cache.key_material(inferred, "a" * 64, "types")
    b = symbolic_cache.key_material(inferred, "b" * 64, "types")
    assert a is not None and b is not None and a != b
    assert symbolic_cache.entry_path(a) != symbolic_cache.entry_path(b)


def test_a_model_whose_nodes_were_renamed_reads_the_stored_answer(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto]
) -> None:
    # what an editor does to a .onnxtxt: ORT's tool writes node names only into its logs
    first = _shapes_of(_model_file(tmp_path))
    other = tmp_path / "other"
    other.mkdir()
    renamed = CONTRIB.replace("[m] t", "[gelu_renamed] t")
    second = _shapes_of(_model_file(other, renamed))
    assert len(calls) == 1 and len(_entries(cache)) == 1
    assert second.used_symbolic and second._table == first._table


def _with_weight(tmp_path: Path, folder: str, node: str, value: float) -> Path:
    """CONTRIB with its node ``m`` named ``node`` and a 4096-element initializer (large
    enough to be left out of the copy ORT is given) filled with ``value``."""
    import numpy as np

    model = parse(CONTRIB.replace("[m] t", f"[{node}] t"))
    big = np.full((64, 65), value, dtype=np.float32)
    model.graph.initializer.append(onnx.numpy_helper.from_array(big, "unused_weight"))
    (tmp_path / folder).mkdir()
    onnx.save(model, tmp_path / folder / "m.onnx")
    return tmp_path / folder / "m.onnx"


@pytest.mark.parametrize(
    "limit", [symbolic_cache.WEIGHTS_HASH_MAX_BYTES, 0], ids=["hashed", "origin"]
)
def test_the_data_of_weights_left_out_is_in_the_key(
    tmp_path: Path,
    cache: Path,
    calls: list[onnx.ModelProto],
    monkeypatch: pytest.MonkeyPatch,
    limit: int,
) -> None:
    monkeypatch.setattr(symbolic_cache, "WEIGHTS_HASH_MAX_BYTES", limit)
    for folder, node, value in [("a", "m", 0.0), ("b", "renamed", 0.0), ("c", "m", 1.0)]:
        assert _shapes_of(_with_weight(tmp_path, folder, node, value)).used_symbolic
    # hashed: the renamed copy with the same weights reads the answer, other weights do
    # not; past the limit the file's hash stands for the weights, so every file is asked
    assert len(calls) == (2 if limit else 3) == len(_entries(cache))


def test_origin_is_in_the_key_only_when_weights_were_left_out(cache: Path) -> None:
    model = parse(CONTRIB)
    before = model.SerializeToString()
    complete = [symbolic_cache.key_material(model, o * 64, "types", left={}) for o in "ab"]
    partial = [symbolic_cache.key_material(model, o * 64, "types") for o in "ab"]
    assert complete[0] is not None and complete[0] == complete[1]
    assert partial[0] is not None and partial[0] != partial[1]
    assert model.SerializeToString() == before  # the key is computed from a copy


def test_the_key_ignores_node_names_and_doc_strings_in_bodies_and_functions() -> None:
    from onnx import helper

    def model(name: str, doc: str) -> onnx.ModelProto:
        body = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"], name=name, doc_string=doc)],
            "body",
            [],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
        )
        fn = helper.make_function(
            "local",
            "F",
            ["a"],
            ["b"],
            [helper.make_node("If", ["a"], ["b"], name=name, then_branch=body, else_branch=body)],
            [helper.make_opsetid("", 17)],
        )
        graph = helper.make_graph(
            [
                helper.make_node("F", ["c"], ["z"], domain="local", name=name),
                helper.make_node("If", ["c"], ["w"], name=name, then_branch=body, else_branch=body),
            ],
            "g",
            [helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
            [helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [1])],
        )
        return helper.make_model(
            graph,
            functions=[fn],
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        )

    plain = symbolic_cache._without_node_names(model("a", ""))
    assert symbolic_cache._without_node_names(model("b", "some text")) == plain
    other = model("a", "")
    other.graph.node[1].attribute[0].g.node[0].output[0] = "y2"  # a value name counts
    assert symbolic_cache._without_node_names(other) != plain


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: b"garbage",
        lambda raw: raw.replace(b'"status": "ok"', b'"status": "odd"'),
        lambda raw: raw.replace(symbolic_cache.SCHEMA.encode(), b"other/1"),
        lambda raw: raw[:-3],  # the payload no longer matches its checksum
        lambda raw: raw.replace(b'"onnx": "', b'"onnx": "0.'),  # another key
    ],
    ids=["garbage", "status", "schema", "truncated", "key"],
)
def test_a_damaged_entry_is_discarded_and_asked_again(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto], damage: Any
) -> None:
    path = _model_file(tmp_path)
    want = _shapes_of(path)._table
    (entry,) = _entries(cache)
    entry.write_bytes(damage(entry.read_bytes()))
    assert _shapes_of(path)._table == want
    assert len(calls) == 2  # asked ORT again, and stored a good entry
    _shapes_of(path)
    assert len(calls) == 2


def test_an_entry_that_is_a_link_is_not_followed(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto]
) -> None:
    path = _model_file(tmp_path)
    _shapes_of(path)
    (entry,) = _entries(cache)
    target = tmp_path / "elsewhere"
    target.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(target)
    _shapes_of(path)
    assert len(calls) == 2 and not entry.is_symlink()


def test_without_sympy_no_stored_answer_applies(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _model_file(tmp_path)
    _shapes_of(path)
    monkeypatch.setattr(symbolic_cache, "_sympy_version", lambda: None)
    assert symbolic_cache.key_material(parse(CONTRIB), "a" * 64, "types") is None


def test_only_the_tool_of_the_build_in_the_key_is_stored() -> None:
    from onnxlint.runtime.identity import ort_identity

    assert symbolic._symbolic_class() is not None
    identity = ort_identity()
    assert identity is not None and symbolic._tool_is_from(identity)
    assert not symbolic._tool_is_from({**identity, "package": str(Path("elsewhere").resolve())})


def test_the_shape_fix_caches_the_pinned_copy_under_its_origin(
    cache: Path, calls: list[onnx.ModelProto]
) -> None:
    model = parse(CONTRIB)
    plain = fix_shapes(model, {"batch": 2})
    assert len(calls) == 1 and _entries(cache) == []  # no origin: nothing stored
    first = fix_shapes(model, {"batch": 2}, origin="c" * 64)
    second = fix_shapes(model, {"batch": 2}, origin="c" * 64)
    assert len(calls) == 2 and len(_entries(cache)) == 1
    for result in (first, second):
        assert result.model.SerializeToString() == plain.model.SerializeToString()
    assert {vi.name: value_type_of(vi.type) for vi in second.model.graph.value_info}["t"].shape == (
        2,
        4,
    )
    fix_shapes(model, {"batch": 3}, origin="c" * 64)  # another pinned copy: another input
    assert len(calls) == 3


def test_a_second_process_does_not_import_sympy(tmp_path: Path) -> None:
    path = _model_file(tmp_path)
    probe = (
        "import sys, onnxlint; r = onnxlint.lint(sys.argv[1], eps=['qnn'], config={}); "
        "print(len(r.diagnostics), 'sympy' in sys.modules)"
    )
    env = {**os.environ, "ONNXLINT_CACHE_DIR": str(tmp_path / "c"), "ONNXLINT_NO_CACHE": "0"}

    def run() -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", probe, str(path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
        return out.stdout.split()

    first = run()
    assert first[1] == "True"  # ran ORT's tool
    assert run() == [first[0], "False"]  # the same findings, from the file


@pytest.mark.parametrize(
    "payload",
    ["a table", [["t", "float", [1, 2.5], "tensor"]], [["t", 3, None, "tensor"]], [["t"]]],
    ids=["not-a-list", "float-dim", "int-dtype", "short-row"],
)
def test_a_stored_table_of_the_wrong_shape_is_asked_again(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto], payload: Any
) -> None:
    path = _model_file(tmp_path)
    want = _shapes_of(path)._table
    material = _stored_key(cache)
    symbolic_cache.put(material, payload)  # a valid entry (checksum and key) of a bad table
    assert _shapes_of(path)._table == want and len(calls) == 2


def test_stored_value_info_of_the_wrong_shape_is_asked_again(
    cache: Path, calls: list[onnx.ModelProto]
) -> None:
    model = parse(CONTRIB)
    want = fix_shapes(model, {"batch": 2}, origin="d" * 64).model.SerializeToString()
    material = _stored_key(cache)
    assert material["answer"] == "value_info"
    symbolic_cache.put(material, ["not base64!"])
    assert fix_shapes(model, {"batch": 2}, origin="d" * 64).model.SerializeToString() == want
    assert len(calls) == 2


def test_the_configuration_s_cache_switch_is_honoured_by_the_lint_and_its_what_if(
    tmp_path: Path, cache: Path, calls: list[onnx.ModelProto]
) -> None:
    path = _model_file(tmp_path)
    off = {"confirm": {"cache": False}}  # `--no-cache`, `cache = false`
    first = onnxlint.lint(path, eps=["qnn"], config=off)
    second = onnxlint.lint(path, eps=["qnn"], config=off)
    assert len(calls) == 4 and _entries(cache) == []  # shapes and what-if, twice each
    assert _t_type(first) == _t_type(second) and first.what_ifs


def test_weights_holding_more_than_their_dims_declare_are_not_hashed_past_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(symbolic_cache, "WEIGHTS_HASH_MAX_BYTES", 200)
    small = onnx.helper.make_tensor("w", onnx.TensorProto.FLOAT, [4], b"\0" * 16, raw=True)
    assert symbolic_cache._weights_key("o", {"w": small}).startswith("sha256:")
    # four elements declared (32 bytes at most), a kilobyte stored: the file's hash stands in
    lying = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[4])
    lying.raw_data = b"\0" * 1024
    assert symbolic_cache._weights_key("o", {"w": lying}) == "origin:o"
    negative = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[-1])
    assert symbolic_cache._weights_key("o", {"w": negative}) == "origin:o"
    assert symbolic_cache._weights_key("o", {}) is None
    assert symbolic_cache._weights_key("o", None) == "origin:o"
