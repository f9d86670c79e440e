"""``edits.checker_after_node_edit`` takes the checker's "accepted" over for an edit of one
node only when the whole-model checker accepts the edited model too: checked on up to
four nodes with attributes of each model onnx ships for its tests, edited in the ways a
user edits a node (a value changed, an attribute removed, added, retyped; a rename)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import onnx
import pytest

from onnxlint.analyses.checked import CheckerVerdict
from onnxlint.analyses.edits import checker_after_node_edit
from onnxlint.index import differs_in_names_only

BASE = Path(onnx.__file__).parent / "backend" / "test" / "data"


def _accepted(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model)
    except Exception:
        return False
    return True


def _bump(attr: onnx.AttributeProto) -> bool:
    if attr.type == onnx.AttributeProto.INT:
        attr.i += 1
    elif attr.type == onnx.AttributeProto.INTS and attr.ints:
        attr.ints[0] += 1
    elif attr.type == onnx.AttributeProto.FLOAT:
        attr.f += 0.5
    else:
        return False
    return True


def _retype(attr: onnx.AttributeProto) -> bool:
    if attr.type != onnx.AttributeProto.INT:
        return False
    value = attr.i
    attr.ClearField("i")
    attr.type, attr.f = onnx.AttributeProto.FLOAT, float(value)
    return True


EDITS: dict[str, Callable[[onnx.NodeProto], bool]] = {
    "value changed": lambda n: _bump(n.attribute[0]),
    "attribute removed": lambda n: bool(n.attribute.pop(0)),
    "unknown attribute added": lambda n: bool(
        n.attribute.append(onnx.helper.make_attribute("not_an_attribute", 1)) or True
    ),
    "attribute retyped": lambda n: _retype(n.attribute[0]),
    "renamed": lambda n: bool(setattr(n, "name", n.name + "_renamed") or True),
}


def _cases() -> Iterator[tuple[str, onnx.ModelProto, int]]:
    for path in sorted(BASE.glob("**/*.onnx")):
        model = onnx.load(str(path), load_external_data=False)
        if not _accepted(model):
            continue
        with_attributes = [k for k, n in enumerate(model.graph.node) if n.attribute]
        for k in with_attributes[:4]:
            yield path.parent.name, model, k


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_accepted_verdict_is_taken_over_only_when_the_checker_agrees(edit: str) -> None:
    accepted = CheckerVerdict.accepted()
    taken = declined = 0
    for name, model, k in _cases():
        edited = onnx.ModelProto()
        edited.CopyFrom(model)
        was, now = model.graph.node[k], edited.graph.node[k]
        if not EDITS[edit](now):
            continue
        names_only = differs_in_names_only(was, now)
        got = checker_after_node_edit(accepted, edited, was, now, True, names_only)
        if got is None:
            declined += 1
            continue
        taken += 1
        assert got.failure is None
        assert _accepted(edited), (edit, name, k)  # never "accepted" for a refused model
    assert taken + declined >= 20, edit
    if edit in ("value changed", "renamed"):
        assert taken > declined, edit  # what a user's edits mostly are is taken over


def test_a_refused_or_unknown_verdict_is_never_taken_over() -> None:
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 17]>\ng (float[1,4] x) => (float[1,4] y) {\n'
        "    [s] y = Softmax <axis: int = 1> (x)\n}\n"
    )
    refused = CheckerVerdict.accepted()
    refused.failure = (True, "some problem")
    node = model.graph.node[0]
    assert checker_after_node_edit(refused, model, node, node, True, True) is None
    # a node of a domain the checker does not know, or one outside the main graph
    odd = onnx.NodeProto()
    odd.CopyFrom(node)
    odd.domain = "custom"
    accepted = CheckerVerdict.accepted()
    assert checker_after_node_edit(accepted, model, odd, odd, True, False) is None
    assert checker_after_node_edit(accepted, model, node, node, False, False) is None
    # a tensor attribute kept in a file: check_node would look for the file
    external = onnx.NodeProto()
    external.CopyFrom(node)
    tensor = onnx.helper.make_tensor("t", onnx.TensorProto.FLOAT, [1], [1.0])
    tensor.ClearField("float_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="weights.bin")
    external.attribute.append(onnx.helper.make_attribute("value", tensor))
    assert checker_after_node_edit(accepted, model, node, external, True, False) is None
