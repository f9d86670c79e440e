"""Node labels in graph paths: a node's real name whenever that name identifies it.

A graph path is ``main``, ``main/Loop_3:body``, ``fn:local.MyFn``; a node path is
its graph's path, ``/``, then the node's label. The label is

- the node's name, as is, when the name is non-empty and unique in its graph and
  holds none of the path syntax (``/``, ``:``, ``"``, ``\\``, control characters,
  surrounding blanks): ``main/conv1``;
- the name quoted like a JSON string when it is unique but holds such characters
  (TorchScript and dynamo exports name nodes ``/model/encoder/layer.0/MatMul``), or
  when it would read as another node's synthetic label: ``main/"/model/encoder/MatMul"``;
- a synthetic ``OpType_index`` only for an empty or duplicated name (:func:`is_synthetic`
  tells the two apart, so front ends can say so).

Every name round-trips: :func:`unquote` gives the name back from its label. This is
the only place labels are made; the index, the loader's messages and locations use it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

_NEEDS_QUOTES = re.compile(r'[/:"\\\x00-\x1f\x7f]|^\s|\s$')
#: ``json.dumps(name, ensure_ascii=False)`` for a string, with the encoder made once:
#: ``dumps`` builds a new one per call when given any option (once per node name)
_json_string = json.JSONEncoder(ensure_ascii=False).encode


def synthetic_label(op_type: str, index: int) -> str:
    """The made-up label of an unnamed or duplicate-named node: ``Conv_3``."""
    return f"{op_type or 'node'}_{index}"


def quote(name: str) -> str:
    """``name`` as a label: unchanged when plain, else a JSON string (``"/a/b"``)."""
    return _json_string(name) if _NEEDS_QUOTES.search(name) else name


def unquote(label: str) -> str:
    """The node name a quoted label stands for (a plain label is its own name)."""
    if len(label) >= 2 and label.startswith('"') and label.endswith('"'):
        try:
            value = json.loads(label)
        except ValueError:
            return label
        return value if isinstance(value, str) else label
    return label


def node_labels(nodes: Sequence[tuple[str, str]]) -> list[str]:
    """The label of each ``(name, op_type)`` of one graph, in order."""
    return label_table(nodes)[0]


def label_table(nodes: Sequence[tuple[str, str]]) -> tuple[list[str], Counter[str], set[str]]:
    """:func:`node_labels`, with what :func:`relabelled` needs to label one renamed node
    later: how many nodes bear each name, and the synthetic labels given."""
    counts = Counter(name for name, _ in nodes if name)
    synthetic = {
        i: synthetic_label(op, i) for i, (name, op) in enumerate(nodes) if counts[name] != 1
    }
    taken = set(synthetic.values())
    labels = []
    for i, (name, _) in enumerate(nodes):
        if i in synthetic:
            labels.append(synthetic[i])
            continue
        labels.append(_real_label(name, taken))
    return labels, counts, taken


def _real_label(name: str, taken: set[str]) -> str:
    label = quote(name)
    # a real name that spells another node's synthetic label is quoted to stay distinct
    return _json_string(name) if label in taken else label


def relabelled(
    counts: Counter[str],
    taken: set[str],
    index: int,
    was: tuple[str, str],
    now: tuple[str, str],
) -> str | None:
    """The label of node ``index`` of a graph (its ``(name, op_type)`` was ``was``, now
    ``now``) when that change leaves every other node's label as it was; None when it may
    not (then label the graph again). ``counts`` and ``taken``: the graph's
    :func:`label_table` before the change.

    Another label moves only when a name count crosses one (the old name leaves one other
    bearer, the new one had one), or when the node's own synthetic label comes or goes
    while some node is named like it (that node's quoting would change)."""
    (old, old_op), (new, new_op) = was, now
    if old != new and ((old and counts[old] == 2) or (new and counts[new] == 1)):
        return None
    before = synthetic_label(old_op, index) if not old or counts[old] != 1 else None
    bearers = counts[new] + (old != new)
    after = synthetic_label(new_op, index) if not new or bearers != 1 else None
    if before != after and any(label is not None and counts[label] for label in (before, after)):
        return None
    if after is not None:
        return after
    rest = taken - {before} if before is not None else taken
    return _real_label(new, rest)


def is_synthetic(label: str | None, name: str | None) -> bool:
    """Whether ``label`` was made up (the node is unnamed or its name is not unique)."""
    if label is None:
        return False
    return not name or unquote(label) != name
