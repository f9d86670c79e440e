"""Regression cases for crashes and unbounded work found while hardening the loader.

Each test fails without its fix in ``onnxlint/modelfile/`` / ``onnxlint/limits.py``:
- 10,000-deep ONNX text crashed the process (SIGSEGV in ``onnx.parser``);
- protobuf's depth error ("Exceeded upb_DecodeOptions_MaxDepth") came out as OL002;
- a string field holding invalid UTF-8 crashed the model index (TypeError on bytes);
- a ModelProto nested 100,000 deep crashed ``ByteSize()`` (SIGSEGV);
- millions of empty nodes were decoded (~150 bytes each) before the node limit applied;
- ``onnx.parser`` errors were shown as ``b'...'``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import onnxlint
from onnxlint.limits import MAX_SUBGRAPH_DEPTH_CAP, Limits
from onnxlint.loader import load
from onnxlint.modelfile.measure import first_non_utf8_string, first_string_problem
from onnxlint.modelfile.prescan import count_nodes_on_wire, text_nesting
from onnxlint.modelfile.read import _read_regular_file
from tests.hostile import support as s


def _codes(report: onnxlint.Report) -> list[str]:
    return [d.code for d in report.diagnostics]


def _backend_models() -> list[Path]:
    base = Path(onnx.__file__).parent / "backend" / "test" / "data"
    return sorted(base.glob("**/*.onnx"))[:400]


def test_wire_node_count_matches_decoded_models() -> None:
    """The pre-decode count equals the decoded count on every onnx backend test model."""
    checked = 0
    for path in _backend_models():
        data = path.read_bytes()
        model = onnx.load_from_string(data)
        graphs = [model.graph]
        for ti in model.training_info:
            graphs += [ti.initialization, ti.algorithm]
        expected = sum(len(f.node) for f in model.functions)
        while graphs:
            g = graphs.pop()
            expected += len(g.node)
            for n in g.node:
                for a in n.attribute:
                    graphs += [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        assert count_nodes_on_wire(data, stop=10**9) == expected, path.name
        checked += 1
    assert checked > 50


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (s.many_nodes_model(10), 10),
        (s.many_nodes_model(10, inside_subgraph=True), 11),
        (s.many_nodes_model(5000), 101),  # stops just past ``stop``
        (s.length_claim_model(10**9), None),  # claims more bytes than exist
        (b"\x0b\x0c", None),  # a protobuf group: never valid ONNX
        (b"\xff" * 11, None),  # a varint longer than 64 bits
    ],
    ids=["flat", "in-subgraph", "stops", "length-claim", "group", "long-varint"],
)
def test_wire_node_count_edge_cases(data: bytes, expected: int | None) -> None:
    assert count_nodes_on_wire(data, stop=100) == expected


def test_wire_node_count_leaves_deep_nesting_to_the_decoder() -> None:
    assert count_nodes_on_wire(s.nested_if_model(600), stop=10**6) is None
    assert count_nodes_on_wire(s.nested_if_model(100), stop=10**6) == 101


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("a { b ( c [ d ] ) }", 3),
        ('a { "}}}{{{{{{" }', 1),  # brackets inside strings do not count
        ('a { "esc \\" {{{" }', 1),
        ("a { # {{{{ comment\n }", 1),
        (")))) {", 1),  # stray closers never go negative
        ("(" * 5000, 101),  # stops counting past ``stop``
    ],
)
def test_text_nesting(text: str, depth: int) -> None:
    assert text_nesting(text, stop=100) == depth


@pytest.mark.parametrize(
    ("source", "code", "message_id"),
    [
        (s.nested_if_text(10_000).encode(), "OL005", "parse"),
        (s.nested_if_text(40).encode(), "OL005", "parse"),
        (s.nested_if_model(10_000), "OL005", "parse"),
        (s.nested_if_model(40), "OL005", "parse"),
        (s.invalid_utf8_model(), "OL002", "decode"),
        (s.length_claim_model(2**40), "OL002", "decode"),
    ],
    ids=["text-10000", "text-40", "binary-10000", "binary-40", "utf8", "length-claim"],
)
def test_bytes_inputs(source: bytes, code: str, message_id: str) -> None:
    loaded = load(source)
    assert loaded.fatal
    assert [(d.code, d.message_id) for d in loaded.diagnostics] == [(code, message_id)]


def test_deep_text_does_not_crash_the_process() -> None:
    """Without the bracket pre-check, onnx.parser overflows the C stack (SIGSEGV)."""
    code = (
        "import sys; from tests.hostile import support as s; from onnxlint.loader import load;"
        "r = load(s.nested_if_text(10_000).encode()); sys.exit(0 if r.fatal else 3)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=s.REPO, capture_output=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_deep_modelproto_is_measured_before_bytesize() -> None:
    """A ModelProto 100,000 deep (built in place, O(n)) is refused before protobuf recurses."""
    model = onnx.ModelProto(ir_version=8)
    model.opset_import.add(version=17)
    graph = model.graph
    for _ in range(100_000):
        node = graph.node.add(op_type="If", input=["c"], output=["y"])
        graph = node.attribute.add(name="then_branch", type=onnx.AttributeProto.GRAPH).g
    report = onnxlint.lint(model, config={})
    assert report.fatal
    assert [(d.code, d.args["depth"]) for d in report.diagnostics] == [("OL005", 65)]


def test_configured_depth_is_capped() -> None:
    assert Limits(max_subgraph_depth=10**6).max_subgraph_depth == MAX_SUBGRAPH_DEPTH_CAP
    assert Limits(max_subgraph_depth=5).max_subgraph_depth == 5


def test_modelproto_at_the_depth_cap_lints_without_recursion_error() -> None:
    """Index and rules recurse per level; at the cap they must still finish."""
    model = onnx.ModelProto(ir_version=8)
    model.opset_import.add(version=17)
    graph = model.graph
    for i in range(MAX_SUBGRAPH_DEPTH_CAP):
        graph.name = f"g{i}"
        node = graph.node.add(op_type="If", input=["c"], output=["y"], name=f"if{i}")
        graph = node.attribute.add(name="then_branch", type=onnx.AttributeProto.GRAPH).g
    report = onnxlint.lint(model, config={"limits": {"max-subgraph-depth": 10**6}})
    assert not report.fatal
    assert "OL099" not in _codes(report)


@pytest.mark.slow
def test_too_many_nodes_is_refused_before_decoding() -> None:
    """3 million empty nodes: OL007 from the wire count, the decoder never runs."""
    loaded = load(s.many_nodes_model(3_000_000))
    assert [(d.code, d.args["limit"]) for d in loaded.diagnostics] == [("OL007", 200_000)]


def test_first_non_utf8_string_on_valid_models() -> None:
    for path in _backend_models()[:100]:
        assert first_non_utf8_string(onnx.load(path, load_external_data=False)) is None


def test_parse_error_message_is_text_not_bytes() -> None:
    loaded = load(b'<ir_version: 8, opset_import: ["" : 17]>\ng (float x) => (y) { y = Relu( }')
    (diag,) = loaded.diagnostics
    assert diag.code == "OL006"
    assert "b'" not in diag.message and "line: 2" in diag.message


def test_fifo_is_never_read(tmp_path: Path) -> None:
    """The open itself is non-blocking and fstat decides, so a FIFO swapped in after
    ``stat`` is refused instead of blocking forever on a writer that never comes."""
    fifo = tmp_path / "swapped.onnx"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        _read_regular_file(fifo)


def test_the_string_walk_checks_every_entry_of_a_repeated_field() -> None:
    """A repeated string field is read in one pass: a non-UTF-8 entry anywhere in it is
    found before any length, and its longest entry is the one measured."""

    def model(outputs: list[str], swap: bytes = b"") -> onnx.ModelProto:
        node = onnx.helper.make_node("Split", ["x"], outputs)
        graph = onnx.helper.make_graph([node], "g", [], [])
        data = onnx.helper.make_model(graph).SerializeToString()
        return onnx.ModelProto.FromString(data.replace(b"SWAP", swap) if swap else data)

    assert first_string_problem(model(["a", "abcdef", "ab"]), 3) == ("onnx.NodeProto.output", 6)
    assert first_string_problem(model(["a", "abcdef", "ab"]), 6) is None
    for outputs in (["abcdef", "SWAP"], ["SWAP", "abcdef"], ["a", "SWAP", "b"]):
        found = first_string_problem(model(outputs, b"\xff\xfe\xc0\x80"), 3)
        assert found == ("onnx.NodeProto.output", None), outputs
