"""The memory budget: a file under 100 MB lints in under 1 GiB of peak RSS, or is refused
with a limit diagnostic before the memory is spent (issue #20, "a memory budget").

Declarations cost a few bytes on the wire and 100-200 bytes each once protobuf has
decoded them. Before the loader counted them on the wire, these 36-90 MB files were
decoded first and refused after: 1.77 GB (value_info), 3.1 GB (empty initializers) and
1.77 GB (an If branch declaring 18 million outputs) at peak; each is now OL008 before
decoding. Peak RSS is measured in a CLI subprocess (``support.run_cli``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlint.limits import Limits
from onnxlint.loader import load
from onnxlint.modelfile.prescan import over_limits_on_wire
from tests.hostile import support as s

#: the budget for any input file under 100 MB
BUDGET_MB = 1024
ENTRIES = 18_000_000
_NAME_ONLY = s.field_bytes(1, b"o")  # ValueInfoProto{name="o"}: 5 bytes as a field


def _if_with_outputs(count: int) -> bytes:
    body = s.field_bytes(2, b"then") + s.field_bytes(12, _NAME_ONLY) * count
    attr = s.field_bytes(1, b"then_branch") + s.field_varint(20, 5) + s.field_bytes(6, body)
    node = s.field_bytes(1, b"c") + s.field_bytes(2, b"y") + s.field_bytes(4, b"If")
    return s.model_bytes(s.field_bytes(1, node + s.field_bytes(5, attr)))


def _value_info(count: int) -> bytes:
    return s.model_bytes(s.field_bytes(1, s.relu_node()) + s.field_bytes(13, _NAME_ONLY) * count)


def _initializers(count: int) -> bytes:
    return s.model_bytes(s.field_bytes(1, s.relu_node()) + s.field_bytes(5, b"") * count)


CASES = {"value_info": _value_info, "initializers": _initializers, "graph_io": _if_with_outputs}


@pytest.mark.slow
@pytest.mark.parametrize("what", list(CASES))
def test_declarations_are_refused_before_decoding(tmp_path: Path, what: str) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(CASES[what](ENTRIES))
    assert path.stat().st_size < 100_000_000
    run = s.run_cli(path, cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 2
    assert run.codes == ["OL008"]
    assert run.peak_rss_mb < BUDGET_MB, run.peak_rss_mb


@pytest.mark.parametrize(
    ("what", "limits", "expected"),
    [
        ("value_info", Limits(max_value_info=10), ("value_info", {"count": 11, "limit": 10})),
        ("initializers", Limits(max_initializers=10), ("initializers", {"count": 11, "limit": 10})),
        (
            "graph_io",
            Limits(max_graph_io=10),
            ("graph_io", {"where": "<subgraph>", "count": 11, "limit": 10}),
        ),
    ],
)
def test_the_wire_count_stops_at_the_first_count_over(
    what: str, limits: Limits, expected: tuple[str, dict[str, object]]
) -> None:
    data = CASES[what](1000)
    assert over_limits_on_wire(data, limits) == expected
    assert over_limits_on_wire(CASES[what](10), limits) is None
    assert over_limits_on_wire(data, Limits()) is None


def test_wire_and_decoded_counts_agree_on_node_io_and_main_graph_io() -> None:
    node = s.field_bytes(1, b"x") * 11 + s.field_bytes(2, b"y") + s.field_bytes(4, b"Concat")
    data = s.model_bytes(s.field_bytes(1, node) + s.field_bytes(11, _NAME_ONLY) * 3)
    assert over_limits_on_wire(data, Limits(max_node_io=11)) == (
        "node_io",
        {"where": "the model", "count": 12, "limit": 11},
    )
    assert over_limits_on_wire(data, Limits(max_graph_io=2)) == (
        "graph_io",
        {"where": "main", "count": 3, "limit": 2},
    )
    # the same refusals after decoding (a file too small to be counted on the wire)
    for limits in (Limits(max_node_io=11), Limits(max_graph_io=2)):
        loaded = load(data, limits)
        assert loaded.fatal and [d.code for d in loaded.diagnostics] == ["OL008"]
    # a file that is not protobuf is left to the decoder
    assert over_limits_on_wire(b"\xff" * 64, Limits(max_graph_io=1)) is None


@pytest.mark.slow
def test_a_chain_of_small_nodes_is_refused_within_the_budget(tmp_path: Path) -> None:
    """400,000 Relu nodes in 13.7 MB linted in 1.13 GB with the old default limit
    (2,000,000); the default of 200,000 refuses it (OL007) within the budget."""
    import onnx
    from onnx import TensorProto, helper

    n = 400_000
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"r{i}") for i in range(n)]
    x = helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 4])
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    path = tmp_path / "chain.onnx"
    onnx.save(model, str(path))
    del model, nodes
    run = s.run_cli(path, "--ep", "qnn", cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 2 and run.codes == ["OL007"], run.codes
    assert run.peak_rss_mb < BUDGET_MB, run.peak_rss_mb
    assert Limits().max_nodes < n


def _long(n: int) -> bytes:
    """``n`` as a two-byte varint (valid protobuf, though not the shortest encoding)."""
    assert n < 0x80
    return bytes([n | 0x80, 0])


def test_the_wire_walk_reads_one_byte_and_longer_varints_alike() -> None:
    # the walk reads one-byte tags, lengths and values inline and longer ones by a call
    # (field 6 here is a varint the walk skips, never decodes):
    # the same node written with every varint padded to two bytes counts the same
    short_node = s.field_bytes(1, b"x") + s.field_bytes(2, b"y") + s.field_varint(6, 1)
    long_node = (
        b"".join(
            _long(tag) + _long(len(payload)) + payload
            for tag, payload in (((1 << 3) | 2, b"x"), ((2 << 3) | 2, b"y"))
        )
        + _long(6 << 3)
        + _long(1)
    )
    for node in (short_node, long_node):
        data = s.model_bytes(s.field_bytes(1, node) * 3)
        assert over_limits_on_wire(data, Limits(max_nodes=2)) == (
            "nodes",
            {"count": 3, "limit": 2},
        )
        assert over_limits_on_wire(data, Limits(max_node_io=1)) == (
            "node_io",
            {"where": "the model", "count": 2, "limit": 1},
        )
    # a varint cut off by the end of its message (tag, length or value) is malformed
    for cut in (b"\x0a", b"\x8a", b"\x0a\x85", b"\x30", b"\x30\x81"):
        assert over_limits_on_wire(s.model_bytes(s.field_bytes(1, cut)), Limits()) is None
