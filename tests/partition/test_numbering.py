"""Partitions are numbered top-down: in the order a reader of the model meets each
partition's first node (a body's nodes right after the node that holds the body), at
both graph levels, so the CLI's table and the editor's lenses agree with the text."""

from __future__ import annotations

import onnx

from onnxlint.analyses.level_graph import text_ranks
from onnxlint.index import ModelIndex

from .conftest import partitions

#: the If's bodies sit between branch0 and nonzero0 in the text: numbered by graph and
#: ORT's order, they came after nonzero0's CPU partition (and the level-1 graph, which
#: ORT writes in its own order, swapped the two bodies)
MODEL = """<ir_version: 8, opset_import: ["" : 17]>
m (float[1,4] x, bool c) => (float[1,4] y, float[1,4] z, int64[2,?] idx) {
   [relu0] a = Relu (x)
   [branch0] y = If (c) <
      then_branch = then_g () => (float[1,4] t) { [then_relu] t = Relu (a) },
      else_branch = else_g () => (float[1,4] e) { [else_neg] e = Neg (a) }
   >
   [nonzero0] idx = NonZero (a)
   [relu1] z = Relu (a)
}
"""


def _firsts(level: str) -> list[str]:
    plan = partitions(MODEL, ["qnn"]).plan(level)
    assert plan is not None and plan.graph is not None
    assert [p.id for p in plan.partitions] == list(range(1, len(plan.partitions) + 1))
    return [plan.graph.source_path.get(p.first, p.first) for p in plan.partitions]


def test_text_ranks_put_bodies_after_their_node() -> None:
    ranks = text_ranks(ModelIndex(onnx.parser.parse_model(MODEL)))
    order = sorted(ranks, key=ranks.__getitem__)
    assert [p.rsplit("/", 1)[-1] for p in order] == [
        "relu0",
        "branch0",
        "then_relu",
        "else_neg",
        "nonzero0",
        "relu1",
    ]


def test_partitions_numbered_top_down_at_both_levels() -> None:
    for level in ("exported", "optimized"):
        firsts = [p.rsplit("/", 1)[-1] for p in _firsts(level)]
        # QNN: relu0, relu1 and the If; CPU: each body, and nonzero0
        assert firsts == ["relu0", "then_relu", "else_neg", "nonzero0"], (level, firsts)
