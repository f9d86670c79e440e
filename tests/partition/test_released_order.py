"""The plan's released nodes are listed in the graph's topological order, whatever the string hash seed.

The JSON report writes ``released`` as it was filled; filled from a set of node paths,
its order followed Python's per-process string hashing, and the report of the same model
differed from run to run (found comparing the 10k-node chain's report before and after
issue 19's changes).
"""

from __future__ import annotations

from .conftest import partitions

CHAINS = 24


def _chains() -> str:
    lines = []
    outs = []
    for k in range(CHAINS):
        lines += [
            f"    s{k} = Shape(x)",
            f"    i{k} = Constant <value = int64[1] {{0}}> ()",
            f"    b{k} = Gather <axis = 0> (s{k}, i{k})",
            f"    c{k} = Constant <value = int64[1] {{16}}> ()",
            f"    shp{k} = Concat <axis = 0> (b{k}, c{k})",
            f"    y{k} = Reshape(x, shp{k})",
        ]
        outs.append(f"float[N,16] y{k}")
    return (
        '<ir_version: 10, opset_import: ["" : 23]>\n'
        f"g (float[N,16] x) => ({', '.join(outs)}) {{\n" + "\n".join(lines) + "\n}\n"
    )


def test_released_nodes_are_in_graph_order() -> None:
    plan = partitions(_chains(), ["cuda"]).plan("exported")
    assert plan is not None
    # each chain's Gather and Concat move to CPU (GetCpuPreferredNodes)
    assert len(plan.released) == 2 * CHAINS
    lg = plan.graph
    assert lg is not None
    in_order = [n.path for g in lg.graphs() for n in lg.order(g) if n.path in plan.released]
    assert list(plan.released) == in_order  # the partitioner's (topological) order
