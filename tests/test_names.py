"""Real node names: a name is a node's identity whenever it is non-empty and unique in its
graph, whatever it holds; only empty or duplicate names get a synthetic label."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.baseline import Baseline
from onnxlint.config import Config
from onnxlint.engine import lint
from onnxlint.index import ModelIndex
from onnxlint.names import is_synthetic, node_labels, quote, unquote


@pytest.mark.parametrize(
    ("nodes", "labels"),
    [
        ([("conv1", "Conv"), ("", "Relu")], ["conv1", "Relu_1"]),
        ([("a", "Add"), ("a", "Add")], ["Add_0", "Add_1"]),  # duplicates: both synthetic
        (
            [("/model/encoder/layer.0/attention/MatMul", "MatMul")],
            ['"/model/encoder/layer.0/attention/MatMul"'],
        ),
        ([("scope:x", "Add"), ('say "hi"', "Add")], ['"scope:x"', '"say \\"hi\\""']),
        ([(" padded", "Add"), ("tab\there", "Add")], ['" padded"', '"tab\\there"']),
        # a real name that spells another node's synthetic label is quoted to stay distinct
        ([("", "Add"), ("Add_0", "Add")], ["Add_0", '"Add_0"']),
        ([("Add_0", "Add"), ("Mul_1", "Mul")], ["Add_0", "Mul_1"]),  # no clash: as is
        ([("layer[0]*?", "Add"), ("ノード.1", "Add")], ["layer[0]*?", "ノード.1"]),
    ],
)
def test_labels(nodes: list[tuple[str, str]], labels: list[str]) -> None:
    assert node_labels(nodes) == labels
    for (name, _), label in zip(nodes, labels, strict=True):
        assert is_synthetic(label, name) == (not name or [n for n, _ in nodes].count(name) > 1)
        if not is_synthetic(label, name):
            assert unquote(label) == name  # every real name round-trips


@pytest.mark.parametrize("name", ["plain", "/a/b.0/C", 'q"uote', "back\\slash", "a:b", "\n"])
def test_quote_round_trips(name: str) -> None:
    assert unquote(quote(name)) == name


def _torch_like(insert_scale: bool = False) -> onnx.ModelProto:
    """A TorchScript-style export: every node named by its module path, dynamic dims."""
    nodes, inits = [], []
    x = "input_ids"
    for layer in range(3):
        scope = f"/model/encoder/layer.{layer}/attention"
        w = f"onnx::MatMul_{100 + layer}"
        inits.append(numpy_helper.from_array(np.ones((8, 8), np.float32), w))
        nodes.append(
            helper.make_node("MatMul", [x, w], [f"{scope}/MatMul_output_0"], name=f"{scope}/MatMul")
        )
        x = f"{scope}/MatMul_output_0"
        if insert_scale and layer == 0:
            s = "onnx::Mul_scale"
            inits.append(numpy_helper.from_array(np.array(0.5, np.float32), s))
            nodes.append(
                helper.make_node("Mul", [x, s], [f"{scope}/Mul_output_0"], name=f"{scope}/Mul")
            )
            x = f"{scope}/Mul_output_0"
        nodes.append(
            helper.make_node(
                "Softmax", [x], [f"{scope}/Softmax_output_0"], name=f"{scope}/Softmax", axis=-1
            )
        )
        x = f"{scope}/Softmax_output_0"
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/model/Identity"))
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("input_ids", TensorProto.FLOAT, ["batch", "sequence", 8])],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", 8]
            )
        ],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)  # fmt: skip


def test_torch_names_are_the_node_paths() -> None:
    index = ModelIndex(_torch_like())
    paths = [n.path for n in index.nodes]
    assert paths[0] == 'main/"/model/encoder/layer.0/attention/MatMul"'
    assert paths[-1] == 'main/"/model/Identity"'
    assert all(index.node_by_path(p) is n for p, n in zip(paths, index.nodes, strict=True))
    loc = index.nodes[0].location()
    assert not loc.synthetic
    assert loc.describe() == 'main/"/model/encoder/layer.0/attention/MatMul" (MatMul)'


def test_synthetic_labels_are_shown_as_such() -> None:
    model = _torch_like()
    model.graph.node[0].name = ""
    model.graph.node[1].name = model.graph.node[2].name = "dup"
    index = ModelIndex(model)
    assert index.nodes[0].location().describe() == "main/MatMul_0 (MatMul, unnamed)"
    assert index.nodes[1].location().describe() == "main/Softmax_1 (Softmax, name 'dup' not unique)"


def test_torch_re_export_with_one_inserted_op_keeps_its_baseline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = Config(eps=("qnn",), select=("OL5",))
    before = lint(_torch_like(), config=config, path_label="model.onnx")
    assert len(before.diagnostics) >= 7  # one per node: the dims are dynamic for QNN
    base = Baseline.from_reports([before], root=tmp_path)
    after = lint(_torch_like(insert_scale=True), config=config, path_label="model.onnx")
    result = base.filter([after])
    assert result.stale == []  # every recorded finding still matches
    assert result.hidden == len(before.diagnostics)
    new = result.reports[0].diagnostics
    assert new and {d.location.node_name for d in new} == {"/model/encoder/layer.0/attention/Mul"}


def test_per_node_ignores_match_real_names_and_quoted_paths() -> None:
    model = _torch_like()
    target = "/model/encoder/layer.0/attention/MatMul"

    def flagged(ignores: dict[str, list[str]]) -> set[str | None]:
        cfg = Config(eps=("qnn",), select=("OL504",), per_node_ignores=ignores)
        return {d.location.node_name for d in lint(model, config=cfg).diagnostics}

    everything = flagged({})
    assert target in everything
    for pattern in (target, f'main/"{target}"', "/model/encoder/layer.0/*"):
        assert target not in flagged({pattern: ["OL504"]}), pattern
    assert flagged({"/model/encoder/layer.0/*": ["OL504"]}) == everything - {
        target,
        "/model/encoder/layer.0/attention/Softmax",
    }
