"""``SourceMap.definition_of`` reads the first tokens before it builds the table of every
definition (a finding without a node, on a graph input or an initializer, is published
after each edit): on every name and graph, with the reading window as shipped and one of
a few tokens, it gives what the table gives, the enclosing graphs included."""

from __future__ import annotations

import pytest

from onnxlint.index import ModelIndex
from onnxlint.limits import Limits
from onnxlint.loader import load_text
from onnxlint.lsp import sourcemap
from onnxlint.lsp.printer import render_graph_view
from onnxlint.lsp.sourcemap import SourceMap, Token
from onnxlint.lsp.textmap import map_text_source
from tests.lsp.models import NESTED
from tests.lsp.test_rule_reuse import OPSETS, SHAPES


def _long() -> str:
    """More tokens than the window: a chain of nodes, an If reading values from outside."""
    body = "\n".join(f"   [n{k}] v{k + 1} = Relu (v{k})" for k in range(1200))
    return f"""<ir_version: 8, opset_import: ["" : 17]>
long (float[4] v0, bool c) => (float[4] v1200, float[4] h) <float[4] w = {{1, 2, 3, 4}}> {{
{body}
   h = If (c) <then_branch = t () => (float[4] o) {{ o = Add (v7, w) }}, else_branch = e () => (float[4] p) {{ p = Neg (v1199) }}>
}}
"""


def _by_the_table(smap: SourceMap, name: str, graph: str) -> Token | None:
    first: dict[tuple[str, str], Token] = {}
    for tok in smap.tokens:
        if tok.role in ("output", "graph-input", "initializer"):
            first.setdefault((tok.graph, tok.name), tok)
    g: str | None = graph
    while g is not None:
        if (g, name) in first:
            return first[(g, name)]
        g = smap.outer.get(g)
    return None


@pytest.mark.parametrize("window", [sourcemap.DEFINITION_SCAN, 3])
def test_definition_of_is_the_first_definition_in_token_order(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    monkeypatch.setattr(sourcemap, "DEFINITION_SCAN", window)
    for text in (NESTED, SHAPES, OPSETS, _long()):
        model = load_text(text.encode(), Limits()).model
        assert model is not None
        index = ModelIndex(model)
        for smap in (map_text_source(text, index), render_graph_view(index)):
            names = {tok.name for tok in smap.tokens} | {"absent"}
            for graph in smap.outer:
                for name in names:
                    want = _by_the_table(smap, name, graph)
                    assert smap.definition_of(name, graph) is want, (graph, name)
