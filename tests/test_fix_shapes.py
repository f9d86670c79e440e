"""``onnxlint fix-shapes`` and :func:`onnxlint.fixes.fix_shapes`: the fixed model is valid, has no
symbolic dims left for the fixed names, and computes what the original computes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx.reference import ReferenceEvaluator

import onnxlint
from onnxlint.fixes import FixShapesError, fix_shapes, request_from_fix_args

from .conftest import parse, run_cli

H = '<ir_version: 8, opset_import: ["" : 17]>\n'

TRANSFORMER = (
    H
    + """g (float[batch, sequence, 16] x) => (float[batch, sequence, 4, 4] y) {
    s = Shape(x)
    i0 = Constant<value = int64[1] {0}>()
    i1 = Constant<value = int64[1] {1}>()
    b = Gather<axis = 0>(s, i0)
    q = Gather<axis = 0>(s, i1)
    heads = Constant<value = int64[2] {4, 4}>()
    shp = Concat<axis = 0>(b, q, heads)
    t = Reshape(x, shp)
    y = Relu(t)
}"""
)
IMAGE = (
    H
    + """g (float[batch, 3, ?, ?] x) => (float[batch, 2, ?, ?] y)
    <float[2, 3, 1, 1] w = {1.0, 0.5, -1.0, 2.0, 0.0, 1.0}> {
    y = Conv(x, w)
}"""
)
FLATTEN_RESHAPE = (
    H
    + """g (float[batch, 4, 4] x) => (float[batch, 16] y) {
    shp = Constant<value = int64[2] {0, -1}>()
    y = Reshape(x, shp)
}"""
)
EXPAND_TO_INPUT = (
    H
    + """g (float[batch, 8] x, float[8] bias) => (float[batch, 8] y) {
    s = Shape(x)
    e = Expand(bias, s)
    y = Add(x, e)
}"""
)
IF_WITH_SUBGRAPH = (
    H
    + """g (bool c, float[batch, 4] x) => (float[batch, 4] y) {
    y = If(c) <then_branch = t () => (float[batch, 4] a) { a = Relu(x) },
               else_branch = e () => (float[batch, 4] b) { b = Neg(x) }>
}"""
)
LOOP_OVER_BATCH = (
    H
    + """g (float[batch, 4] x) => (float[4] y) {
    s = Shape(x)
    i = Constant<value = int64 {0}>()
    n = Gather(s, i)
    t = Constant<value = bool {1}>()
    z = Constant<value = float[4] {0.0, 0.0, 0.0, 0.0}>()
    y = Loop(n, t, z) <body = b (int64 k, bool c, float[4] acc) => (bool co, float[4] acc_out) {
        co = Identity(c)
        row = Gather<axis = 0>(x, k)
        acc_out = Add(acc, row)
    }>
}"""
)

CASES = [
    # (id, model, dims, inputs, feeds: input -> shape after fixing, names that must be gone)
    ("transformer", TRANSFORMER, {"batch": 2, "sequence": 8}, {}, {"x": (2, 8, 16)}),
    ("image-by-input-shape", IMAGE, {}, {"x": (1, 3, 5, 7)}, {"x": (1, 3, 5, 7)}),
    ("image-dim-and-input", IMAGE, {"batch": 1}, {"x": (1, 3, 6, 6)}, {"x": (1, 3, 6, 6)}),
    ("reshape-zero-and-minus-one", FLATTEN_RESHAPE, {"batch": 3}, {}, {"x": (3, 4, 4)}),
    ("expand-to-input-shape", EXPAND_TO_INPUT, {"batch": 5}, {}, {"x": (5, 8), "bias": (8,)}),
    ("if-subgraph", IF_WITH_SUBGRAPH, {"batch": 2}, {}, {"c": (), "x": (2, 4)}),
    ("loop-over-batch", LOOP_OVER_BATCH, {"batch": 3}, {}, {"x": (3, 4)}),
]


def _all_dim_params(model: onnx.ModelProto) -> set[str]:
    found: set[str] = set()

    def walk(g: onnx.GraphProto) -> None:
        for vi in (*g.input, *g.output, *g.value_info):
            found.update(
                d.dim_param for d in vi.type.tensor_type.shape.dim if d.HasField("dim_param")
            )
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)

    walk(model.graph)
    return found


def _random_feeds(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> dict:
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in model.graph.input:
        shape = shapes[vi.name]
        if vi.type.tensor_type.elem_type == onnx.TensorProto.BOOL:
            feeds[vi.name] = np.array(rng.random() > 0.5)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize(
    ("case_id", "text", "dims", "inputs", "shapes"), CASES, ids=[c[0] for c in CASES]
)
def test_fixed_model_is_valid_static_and_equivalent(
    case_id: str, text: str, dims: dict, inputs: dict, shapes: dict
) -> None:
    original = parse(text)
    before = original.SerializeToString()
    result = fix_shapes(original, dims, inputs)
    assert original.SerializeToString() == before  # the input model is never mutated
    fixed = result.model
    assert result.changed
    onnx.checker.check_model(fixed, full_check=True)
    fixed_names = set(dims) | set(result.dims)
    assert not (_all_dim_params(fixed) & fixed_names)
    for vi in fixed.graph.input:
        assert [d.dim_value for d in vi.type.tensor_type.shape.dim] == list(shapes[vi.name])
    assert result.remaining == {}
    feeds = _random_feeds(original, shapes)
    want = ReferenceEvaluator(original).run(None, feeds)
    got = ReferenceEvaluator(fixed).run(None, feeds)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    report = onnxlint.lint(fixed, eps=["qnn"], config={"select": ["OL3"]})
    assert report.diagnostics == []


def test_size_computations_become_constants_and_their_nodes_go() -> None:
    result = fix_shapes(parse(TRANSFORMER), {"batch": 2, "sequence": 8})
    assert result.folded == ["main/Reshape_7: input 1 'shp' -> [2, 8, 4, 4]"]
    assert [n.op_type for n in result.model.graph.node] == ["Reshape", "Relu"]
    assert result.removed_nodes == 7
    unfolded = fix_shapes(parse(TRANSFORMER), {"batch": 2, "sequence": 8}, fold=False)
    assert unfolded.folded == [] and len(unfolded.model.graph.node) == 9


def test_a_size_read_twice_becomes_one_initializer() -> None:
    text = TRANSFORMER.replace(
        "    y = Relu(t)", "    t2 = Reshape(x, shp)\n    u = Add(t, t2)\n    y = Relu(u)"
    )
    result = fix_shapes(parse(text), {"batch": 2, "sequence": 8})
    assert len(result.folded) == 2
    assert [t.name for t in result.model.graph.initializer] == ["shp__static"]
    onnx.checker.check_model(result.model, full_check=True)


def test_reshape_minus_one_is_resolved() -> None:
    result = fix_shapes(parse(FLATTEN_RESHAPE), {"batch": 3})
    (init,) = [t for t in result.model.graph.initializer if t.name.endswith("__static")]
    assert onnx.numpy_helper.to_array(init).tolist() == [3, 16]


def test_dims_left_dynamic_are_reported() -> None:
    result = fix_shapes(parse(IMAGE), {"batch": 1})
    assert result.remaining == {"x": ["x[2] = ?", "x[3] = ?"]}


@pytest.mark.parametrize(
    ("text", "dims", "inputs", "message"),
    [
        (TRANSFORMER, {"batchsize": 1}, {}, "no graph input has a dim named 'batchsize'"),
        (TRANSFORMER, {"batch": 0}, {}, "must be a positive integer"),
        (TRANSFORMER, {}, {"y": (1, 2, 16)}, "--input y: no such graph input"),
        (TRANSFORMER, {}, {"x": (1, 16)}, "declares rank 3, got 2 dims"),
        (TRANSFORMER, {}, {"x": (1, 8, 32)}, "dim 2 is 16 in the model, not 32"),
        (
            TRANSFORMER,
            {"batch": 1},
            {"x": (2, 8, 16)},
            "conflicting values for dim 'batch': 1 (--dim batch=1) and 2 (--input x)",
        ),
    ],
)
def test_bad_requests_are_explained(text: str, dims: dict, inputs: dict, message: str) -> None:
    with pytest.raises(FixShapesError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fix_shapes(parse(text), dims, inputs)


@pytest.mark.parametrize(
    ("text", "values", "missing"),
    [
        (TRANSFORMER, {"sequence": 8}, None),
        (TRANSFORMER, {}, "no value chosen for: sequence"),
        (IMAGE, {"x[2]": 5, "x[3]": 7}, None),
        (IMAGE, {"x[2]": 5}, "no value chosen for: x[3]"),
        (H + "g (float[] x) => (float[] y) {\n y = Relu(x)\n}", {"x": (2, 3)}, None),
    ],
)
def test_a_findings_fix_args_drive_the_rewrite(
    text: str, values: dict, missing: str | None
) -> None:
    """What a code action does: read the finding's fix back, ask for the open values, apply."""
    model = parse(text)
    report = onnxlint.lint(model, eps=["qnn"], config={"select": ["OL301", "OL302"]})
    args = report.diagnostics[0].fix.args
    if missing is not None:
        with pytest.raises(FixShapesError, match=re.escape(missing)):
            request_from_fix_args(args, values)
        return
    dims, inputs = request_from_fix_args(args, values)
    fixed = fix_shapes(model, dims, inputs).model
    assert onnxlint.lint(fixed, eps=["qnn"], config={"select": ["OL3"]}).diagnostics == []


# -- the command ---------------------------------------------------------------------------


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(parse(TRANSFORMER), path)
    return path


def test_cli_writes_a_new_model_and_prints_the_ort_options(model_file: Path) -> None:
    out = model_file.with_name("m.static.onnx")
    before = model_file.read_bytes()
    proc = run_cli(
        "fix-shapes", str(model_file), "-o", str(out), "--dim", "batch=1", "--dim", "sequence=4"
    )
    assert proc.returncode == 0, proc.stderr
    assert model_file.read_bytes() == before
    fixed = onnx.load(out)
    onnx.checker.check_model(fixed, full_check=True)
    assert "so.add_free_dimension_override_by_name('batch', 1)" in proc.stdout
    assert "so.add_free_dimension_override_by_name('sequence', 4)" in proc.stdout
    assert "Checked 1 model: 0 errors, 0 warnings" in proc.stdout  # the result was linted
    assert sorted(p.name for p in model_file.parent.iterdir()) == ["m.onnx", "m.static.onnx"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "{model}", "--dim", "batch=1"], "refusing to overwrite the input model"),
        (["-o", "{other}", "--dim", "batch=1"], "exists; pass --force"),
        (["--dim", "batch=1"], "give -o OUTPUT"),
        (["-o", "{new}"], "nothing to fix"),
        (["-o", "{new}", "--dim", "batch"], "--dim expects NAME=VALUE"),
        (["-o", "{new}", "--dim", "batch=N"], "must be a positive integer"),
        (["-o", "{new}", "--input", "x=1,a,3"], "dims must be integers"),
        (["-o", "{new}", "--dim", "nope=1"], "no graph input has a dim named 'nope'"),
    ],
)
def test_cli_usage_errors_exit_2_and_touch_nothing(
    model_file: Path, args: list[str], message: str
) -> None:
    other = model_file.with_name("other.onnx")
    other.write_bytes(b"keep me")
    before = model_file.read_bytes()
    subs = {"model": model_file, "other": other, "new": model_file.with_name("new.onnx")}
    proc = run_cli("fix-shapes", str(model_file), *[a.format(**subs) for a in args])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert model_file.read_bytes() == before and other.read_bytes() == b"keep me"
    assert not subs["new"].exists()


def test_cli_in_place_replaces_the_input(model_file: Path) -> None:
    model_file.chmod(0o640)
    proc = run_cli("fix-shapes", str(model_file), "--in-place", "--dim", "batch=1", "--no-lint")
    assert model_file.stat().st_mode & 0o777 == 0o640  # the input keeps its permissions
    assert proc.returncode == 0, proc.stderr
    dims = [d.dim_value for d in onnx.load(model_file).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 0, 16]  # 'sequence' stays symbolic (dim_value 0 = unset)
    assert "still dynamic: x[1] = 'sequence'" in proc.stdout
    assert sorted(p.name for p in model_file.parent.iterdir()) == ["m.onnx"]


def test_cli_unreadable_model_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00garbage\xff")
    proc = run_cli("fix-shapes", str(bad), "-o", str(tmp_path / "o.onnx"), "--dim", "b=1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not (tmp_path / "o.onnx").exists()


def test_cli_writes_onnx_text_when_asked(model_file: Path) -> None:
    out = model_file.with_name("m.static.onnxtxt")
    proc = run_cli(
        "fix-shapes", str(model_file), "-o", str(out), "--input", "x=2,3,16", "--no-lint"
    )
    assert proc.returncode == 0, proc.stderr
    fixed = onnx.parser.parse_model(out.read_text())
    assert [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim] == [2, 3, 16]


@pytest.mark.slow
@pytest.mark.torch
def test_torch_export_with_dynamic_axes(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch, CPU)")

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(16, 8)

        def forward(self, x):  # type: ignore[no-untyped-def]
            b, s, _ = x.shape
            return self.proj(x).reshape(b, s, 2, 4).relu()

    path = tmp_path / "net.onnx"
    torch.onnx.export(
        Net().eval(),
        (torch.randn(2, 5, 16),),
        str(path),
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "batch", 1: "sequence"}, "y": {0: "batch", 1: "sequence"}},
        opset_version=17,
        dynamo=False,
    )
    original = onnx.load(path)
    report = onnxlint.lint(original, eps=["qnn"], config={"select": ["OL301"]})
    assert [d.message.split(";")[0] for d in report.diagnostics] == [
        "graph input 'x' has dynamic dims: x[0] = 'batch', x[1] = 'sequence'"
    ]
    result = fix_shapes(original, {"batch": 1, "sequence": 6})
    onnx.checker.check_model(result.model, full_check=True)
    assert not (_all_dim_params(result.model) & {"batch", "sequence"})
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 6, 16)).astype(np.float32)}
    want = ReferenceEvaluator(original).run(None, feeds)
    got = ReferenceEvaluator(result.model).run(None, feeds)
    np.testing.assert_allclose(want[0], got[0], rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(1, 4), sequence=st.integers(1, 9), fold=st.booleans())
def test_any_fixed_sizes_keep_the_outputs(batch: int, sequence: int, fold: bool) -> None:
    original = parse(TRANSFORMER)
    fixed = fix_shapes(original, {"batch": batch, "sequence": sequence}, fold=fold).model
    feeds = _random_feeds(original, {"x": (batch, sequence, 16)})
    want = ReferenceEvaluator(original).run(None, feeds)[0]
    got = ReferenceEvaluator(fixed).run(None, feeds)[0]
    assert got.shape == (batch, sequence, 4, 4)
    np.testing.assert_array_equal(want, got)
