"""ORT's GraphViewer order of a graph's nodes, on their paths and edges alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reverse_dfs_order(
    paths: Sequence[str], preds: Mapping[str, list[str]], succs: Mapping[str, list[str]]
) -> list[int]:
    """Positions of ``paths`` in ORT's order: a reverse DFS from the leaf nodes, the
    highest-index input first; after a cycle (an invalid model) the remaining nodes in
    file order."""
    # a path names the last node that has it (as the edges' dicts do)
    index = {p: i for i, p in enumerate(paths)}
    # each node's distinct producers, lowest position first: pushed in that order, the
    # highest is visited first
    below = {index[p]: sorted({index[q] for q in preds[p]}) for p in index}
    # ORT sorts inputs by ascending index before pushing: the highest index is visited
    # first (measured, onnxruntime-openvino 1.24.1: a cut at a refused node between two
    # producers of one consumer leaves the higher-index producer's chain before the cut)
    stack = [index[p] for p in paths if not succs[p]]
    visited = bytearray(len(paths))
    out: list[int] = []
    while stack:
        i = stack.pop()
        if i < 0:  # leaving: every producer is out
            out.append(~i)
            continue
        if visited[i]:
            continue
        visited[i] = 1
        stack.append(~i)
        stack += [j for j in below[i] if not visited[j]]
    if len(out) < len(paths):
        seen = {paths[i] for i in out}
        out += [i for i, p in enumerate(paths) if p not in seen]
    return out
