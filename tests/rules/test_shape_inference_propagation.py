"""OL300 says whose failure it reports: a model that strict ONNX inference passes but its
data propagation refuses (ONNX's propagation fails on the two branches of an If that
reuse one value name, as optimum's merged decoders do: "Data for input 0 already exists")
gets a note saying so, not a warning that shape inference failed."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from onnxlint.config import Config
from onnxlint.engine import lint


def _if_model(same_names: bool) -> onnx.ModelProto:
    def branch(prefix: str, out: str) -> onnx.GraphProto:
        return helper.make_graph(
            [
                helper.make_node("Shape", ["x"], [f"{prefix}_s"], name=f"{prefix}_shape"),
                helper.make_node(
                    "Cast", [f"{prefix}_s"], [out], name=f"{prefix}_cast", to=TensorProto.FLOAT
                ),
            ],
            prefix,
            [],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2])],
        )

    node = helper.make_node(
        "If",
        ["c"],
        ["y"],
        name="branch_on_cache",
        then_branch=branch("first", "t_out"),
        else_branch=branch("first" if same_names else "second", "e_out"),
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)  # passes without propagation
    return model


def _ol300(model: onnx.ModelProto) -> list[tuple[str, str]]:
    report = lint(model, config=Config())
    return [(d.severity.label, d.message) for d in report.diagnostics if d.code == "OL300"]


def test_a_failure_of_data_propagation_alone_is_a_note_that_says_so() -> None:
    (found,) = _ol300(_if_model(same_names=True))
    severity, message = found
    assert severity == "info"
    assert message.startswith("ONNX shape inference with data propagation failed")
    assert "strict inference without it passes" in message
    assert "already exists" in message  # ONNX's own words follow


def test_a_model_propagation_passes_on_gets_no_ol300() -> None:
    assert _ol300(_if_model(same_names=False)) == []


def test_a_strict_failure_is_still_a_warning() -> None:
    model = _if_model(same_names=False)
    # a declared output shape that contradicts inference: strict inference fails
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 5
    found = _ol300(model)
    assert found and found[0][0] == "warning", found
    assert found[0][1].startswith("ONNX shape inference failed:"), found
