"""Unnamed nodes in real sessions (``runtime.session_names``): the session's copy names
them, its result unnames them again in the model's order, so that ``--confirm`` and the
accuracy benchmark pair them with the model's nodes exactly.

ORT lists the nodes it assigned partition by partition (QNN's first, then the CPU's), so
pairing unnamed nodes by op type in the order reported went wrong wherever partitions
interleave: 54 of the 358 unnamed nodes of the held-out SwiftF0 wheel model at QNN's
disabled level, every one right once named (measured with onnxruntime 1.32.0 +
onnxruntime-qnn 2.7.0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.config import Config
from onnxlint.engine import lint
from onnxlint.runtime import session_names
from onnxlint.runtime.results import AssignedNode, NodeVerdict, SessionResult

QNN = "QNNExecutionProvider"
CPU = "CPUExecutionProvider"


def two_chains(named: str = "") -> onnx.ModelProto:
    """Two independent chains of unnamed nodes: ``x`` has a dynamic dim (QNN refuses its
    nodes: "Cannot get shape"), ``y`` a static shape (QNN takes its nodes). In the model
    the dynamic chain's Relu comes first; ORT reports QNN's partition first."""
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"]),
        helper.make_node("Relu", ["y"], ["yr"]),
        helper.make_node("Sigmoid", ["xr"], ["xs"], named),
        helper.make_node("Sigmoid", ["yr"], ["ys"]),
        helper.make_node(
            "Constant", [], ["k"], value=numpy_helper.from_array(np.ones(4, np.float32))
        ),
        helper.make_node("Add", ["ys", "k"], ["ya"]),
    ]
    graph = helper.make_graph(
        nodes,
        "two_chains",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("xs", TensorProto.FLOAT, [1, "n"]),
            helper.make_tensor_value_info("ya", TensorProto.FLOAT, [1, 4]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_unnamed_nodes_get_names_by_position_that_no_node_has() -> None:
    model = two_chains(named=f"{session_names.PREFIX}2")
    names = session_names.unnamed_names(model)
    # the Constant is never reported; the named Sigmoid keeps its name
    assert sorted(names.values()) == [0, 1, 3, 5]
    assert all(name.startswith("_" + session_names.PREFIX) for name in names)


def test_the_copy_is_named_and_the_callers_model_is_not() -> None:
    model = two_chains()
    before = model.SerializeToString()
    got = session_names.named_copy(model)
    assert got is not None
    data, names = got
    copy = onnx.load_model_from_string(data)
    assert {copy.graph.node[i].name: i for i in names.values()} == names
    assert model.SerializeToString() == before


def test_a_file_is_named_in_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(two_chains(), str(path))
    before = path.read_bytes()
    got = session_names.named_copy(path)
    assert got is not None and len(got[1]) == 5
    assert path.read_bytes() == before


def test_nothing_is_named_where_a_copy_would_lose_files(tmp_path: Path) -> None:
    """External data and EPContext sidecars resolve beside the model: the session reads
    the file itself, and its unnamed nodes pair as before."""
    model = two_chains()
    model.graph.initializer.append(numpy_helper.from_array(np.ones(4, np.float32), "w"))
    path = tmp_path / "ext.onnx"
    onnx.save(model, str(path), save_as_external_data=True, size_threshold=0)
    assert session_names.named_copy(path) is None
    ctx = two_chains()
    ctx.graph.node.append(helper.make_node("EPContext", ["y"], ["z"], domain="com.microsoft"))
    assert session_names.named_copy(ctx) is None
    named = two_chains()
    for i, node in enumerate(named.graph.node):
        node.name = f"n{i}"
    assert session_names.named_copy(named) is None


def test_a_result_is_unnamed_again_in_the_models_order() -> None:
    names = {"u0": 0, "u1": 1, "u3": 3, "u5": 5}

    def node(name: str, op: str, ep: str) -> AssignedNode:
        return AssignedNode(name, op, "", ep)

    reported = [  # partition by partition, as ORT lists them
        node("u1", "Relu", QNN),
        node("u3_token_4", "Sigmoid", QNN),
        node("u5", "Add", QNN),
        node("u0", "Relu", CPU),
        node("kept", "Sigmoid", CPU),
        node("Transpose_token_2", "Transpose", QNN),
    ]
    result = SessionResult(
        "r",
        "ok",
        QNN,
        assignment=reported,
        verdicts=[NodeVerdict("Relu", "u0", 0, False, "Cannot get shape")],
    )
    back = session_names.restore(result, names)
    assert [(n.name, n.op_type, n.ep) for n in back.assignment] == [
        ("kept", "Sigmoid", CPU),
        ("Transpose_token_2", "Transpose", QNN),
        ("", "Relu", CPU),
        ("", "Relu", QNN),
        ("", "Sigmoid", QNN),
        ("", "Add", QNN),
    ]
    assert back.verdicts[0].name == "" and back.verdicts[0].reason == "Cannot get shape"
    assert session_names.restore(result, {}) is result


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_confirm_pairs_unnamed_nodes_across_interleaved_partitions(tmp_path: Path) -> None:
    """With the copy named, ``--confirm`` agrees with the prediction on every node; the
    pairing by the order ORT reports swapped the two Relus and the two Sigmoids."""
    pytest.importorskip("onnxruntime_qnn")
    path = tmp_path / "two_chains.onnx"
    onnx.save(two_chains(), str(path))
    config = Config(confirm={"mode": "run", "cache-dir": str(tmp_path / "cache")})
    report = lint(path, eps=["qnn"], config=config, path_label=str(path))
    levels = {d["level"]: d for c in report.stats["confirmation"] for d in c["levels"]}
    assert set(levels) == {"disabled", "default"}
    for level in levels.values():
        assert level["agreement"] == 1.0, level


def test_the_levels_of_one_model_share_its_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions of one file (``--confirm``'s two levels) name it once, and each result
    comes back unnamed, in the model's order (CPU sessions)."""
    from onnxlint.runtime.client import SessionRequest, run_sessions

    path = tmp_path / "m.onnx"
    onnx.save(two_chains(), str(path))
    made: list[object] = []
    real = session_names.named_copy

    def counted(model: str | Path | bytes | onnx.ModelProto) -> tuple[bytes, dict[str, int]] | None:
        made.append(model)
        return real(model)

    monkeypatch.setattr(session_names, "named_copy", counted)
    requests = [
        SessionRequest(path, id=level, optimization=level, name_unnamed=True)
        for level in ("disabled", "basic")
    ]
    results = run_sessions(requests, "cpu")
    assert len(made) == 1
    for res in results:
        assert res.ok, res.error
        assert [(n.name, n.op_type) for n in res.assignment] == [
            ("", "Relu"),
            ("", "Relu"),
            ("", "Sigmoid"),
            ("", "Sigmoid"),
            ("", "Add"),
        ]
