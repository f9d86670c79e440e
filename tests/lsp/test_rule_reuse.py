"""After a one-node edit, the rules' run takes the previous lint's findings over where the
rule declares what it reads and the edit leaves that as it was (``onnxlint.walk``, issue
19): ``Rule.node_local`` rules for every node but the edited one, ``Rule.model_reads``
rules when the index was moved, the node kept its operator and the analyses they read
were taken over. Edit by edit (renames onto a finding's node or one its finding names,
an attribute, another operator, a name another node has, a node named or its name
removed, an input moved), in a chain of edits, for a binary model saved again, with an
EP and after a crash: the result is a fresh lint's (findings, the types hover shows, the
index), and what was taken over is what the declarations allow."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import onnx
import pytest

from onnxlint.index import ModelIndex
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, analyse, path_to_uri
from onnxlint.rule import Rule, all_rules
from onnxlint.walk import RuleFindings, _Carry
from tests.lsp.models import lint_edit
from tests.test_index_edit import signature

#: dead nodes (OL107), a node out of order (OL108), a shape lost at a custom op (OL303,
#: OL203), a chain folded from static shapes (OL801) and one from constants (OL802),
#: an unnamed node
SHAPES = """<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
reuse (float[N,4] x, float[2,4] s) => (float[N,4] y, float[8] f, float[N,4] m, float[4] c) <float[4] w = {1,2,3,4}> {
   [soft] a = Softmax <axis: int = -1> (x)
   [relu] y = Relu (a)
   [dead] u = Sigmoid (a)
   [dead2] u2 = Neg (u)
   [mystery] q = custom.Mystery (x)
   [after] m = Relu (q)
   [shape] sh = Shape (s)
   [cast] shf = Cast <to: int = 1> (sh)
   [tile] f = Tile (shf, four)
   [four] four = Constant <value: tensor = int64[1] {4}> ()
   [wcast] wc = Cast <to: int = 1> (w)
   c = Neg (wc)
}
"""

#: an unknown operator (OL204), an unknown domain (OL203), an undefined value (OL104),
#: a deprecated operator (OL205), sizes from runtime values (OL410: from a graph input,
#: and two from a node the findings name), tensors whose data is short of their dims
#: (OL109: an initializer, a Constant's value)
OPSETS = """<ir_version: 8, opset_import: ["" : 17, "acme" : 1]>
opsets (float[1,4] x, float[1,1,2,2] img, float[4] scales) => (float[1,4] y, float[1,4] z, float[1,4] v, float[1,1,4,4] up, float[4] kk, int64[M] r, int64[K] r2) <float[4] short = {1.0, 2.0}> {
   [unknown] t = Foo (x)
   [acme] t2 = acme.Bar (x)
   [undef] y = Add (x, missing)
   [ok] z = Relu (x)
   [other] v = Sigmoid (z)
   [up] up = Upsample <mode: string = "nearest"> (img, scales)
   [badconst] k = Constant <value: tensor = float[4] {1.0, 2.0}> ()
   [sum] kk = Add (k, short)
   [mx] mxv = ReduceMax <keepdims: int = 0> (x)
   [toint] cnt = Cast <to: int = 7> (mxv)
   [start] s0 = Constant <value: tensor = int64 {0}> ()
   [step] s1 = Constant <value: tensor = int64 {1}> ()
   [rng] r = Range (s0, cnt, s1)
   [rng2] r2 = Range (s0, cnt, s1)
}
"""

NODE_LOCAL = {r.code for r in all_rules() if r.node_local}
MODEL_READS = {r.code for r in all_rules() if r.model_reads is not None}

# (what, model, old text, new text, node findings taken over, model findings taken over)
EDITS = [
    ("a node renamed", SHAPES, "[relu]", "[act]", True, True),
    ("a dead node renamed", SHAPES, "[dead]", "[alive]", True, True),
    ("a shape origin renamed", SHAPES, "[mystery]", "[myst]", True, True),
    ("a chain's first node renamed", SHAPES, "[shape]", "[shp]", True, True),
    ("a node a chain's finding names renamed", SHAPES, "[cast]", "[tocast]", True, True),
    ("the node read out of order renamed", SHAPES, "[four]", "[const4]", True, True),
    ("an unnamed node named", SHAPES, "c = Neg", "[named] c = Neg", True, True),
    ("a name removed", SHAPES, "[wcast] ", "", True, True),
    ("an attribute", SHAPES, "axis: int = -1", "axis: int = 0", True, True),
    ("another operator on a dead node", SHAPES, "= Sigmoid (a)", "= Tanh (a)", True, False),
    ("another operator in a chain", SHAPES, "Cast <to: int = 1> (w)", "Abs (w)", True, False),
    ("a name another node has", SHAPES, "[cast]", "[relu]", False, False),
    ("an input moved", SHAPES, "Relu (a)", "Relu (x)", False, False),
    ("an output renamed", SHAPES, "u2 = Neg (u)", "u3 = Neg (u)", False, False),
    ("an unknown operator renamed", OPSETS, "[unknown]", "[u2]", True, True),
    ("an unknown operator made known", OPSETS, "= Foo (x)", "= Relu (x)", True, False),
    ("a node reading an undefined value renamed", OPSETS, "[undef]", "[undefined]", True, True),
    ("a known operator made unknown", OPSETS, "= Sigmoid (z)", "= Foo (z)", True, False),
    ("a deprecated operator renamed", OPSETS, "[up]", "[upsample]", True, True),
    ("a node with a short tensor renamed", OPSETS, "[badconst]", "[bc]", True, True),
    ("a short tensor made whole", OPSETS, "{1.0, 2.0}> ()", "{1.0, 2.0, 3.0, 4.0}> ()", True, True),
    ("a domain", OPSETS, "acme.Bar (x)", "custom.Bar (x)", True, False),
]


def _lint(doc: Path, text: str, settings: Settings, prior: ModelState | None) -> ModelState:
    state: ModelState = lint_edit(doc, text, settings, prior)
    return state


def assert_fresh(state: ModelState, fresh: ModelState, what: str) -> None:
    """What the server publishes and answers from ``state`` is ``fresh``'s."""
    assert state.report.to_dict() == fresh.report.to_dict(), what
    assert dict(state.value_types.items()) == dict(fresh.value_types.items()), what
    assert state.index is not None and fresh.index is not None
    assert signature(state.index) == signature(ModelIndex(state.index.model)), what
    if fresh.source is not None:
        assert state.source is not None and state.source.nodes == fresh.source.nodes, what


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The rules each lint ran, by code: ``check_model`` calls under ``"model"``, and under
    ``"node"`` the node-local rules' ``check_node`` calls."""
    calls: dict[str, list[str]] = {"model": [], "node": []}
    for rule in all_rules():
        if rule.code in MODEL_READS:
            monkeypatch.setattr(rule, "check_model", _counting(rule.check_model, calls["model"]))
        if rule.code in NODE_LOCAL:
            monkeypatch.setattr(rule, "check_node", _counting(rule.check_node, calls["node"]))
    return calls


def _counting(method: Any, calls: list[str]) -> Any:
    def counted(self: Rule, *args: Any) -> None:
        calls.append(self.code)
        method(self, *args)

    return counted


def _nodes(text: str) -> int:
    return sum(1 for line in text.split("\n") if re.match(r"\s+(\[\w+\] )?\w+ = ", line))


@pytest.mark.parametrize(
    ("what", "text", "old", "new", "nodes", "model"), EDITS, ids=[e[0] for e in EDITS]
)
def test_an_edit_takes_findings_over_only_where_they_stand(
    tmp_path: Path,
    checked: dict[str, list[str]],
    what: str,
    text: str,
    old: str,
    new: str,
    nodes: bool,
    model: bool,
) -> None:
    doc = tmp_path / "m.onnxtxt"
    settings = Settings()
    before = _lint(doc, text, settings, None)
    assert isinstance(before.analyses.get(RuleFindings), RuleFindings)
    edited = text.replace(old, new, 1)
    assert edited != text
    checked["model"].clear()
    checked["node"].clear()
    after = _lint(doc, edited, settings, before)
    ran_model, ran_node = list(checked["model"]), list(checked["node"])
    assert_fresh(after, _lint(doc, edited, settings, None), what)
    # node-local rules: checked on the edited node alone, or on every node
    assert len(ran_node) == (len(NODE_LOCAL) if nodes else len(NODE_LOCAL) * _nodes(text)), what
    assert (not ran_model) is model, what


def test_every_node_renamed_in_turn_and_in_a_chain(tmp_path: Path) -> None:
    """Each named node of both models gets a new name, another node's name (a duplicate),
    and its old name back, each edit linted from the previous result."""
    for k, text in enumerate((SHAPES, OPSETS)):
        doc = tmp_path / f"m{k}.onnxtxt"
        settings = Settings()
        state = _lint(doc, text, settings, None)
        lines = text.split("\n")
        named = [k for k, line in enumerate(lines) if line.lstrip().startswith("[")]
        names = [lines[k].split("]")[0].strip(" [") for k in named]
        for at, name, other in zip(named, names, [*names[1:], names[0]], strict=True):
            for new in (f"{name}_renamed", other, name):
                current = state.source.text if state.source is not None else text
                lines = current.split("\n")
                lines[at] = f"   [{new}]" + lines[at].split("]", 1)[1]
                edited = "\n".join(lines)
                state = _lint(doc, edited, settings, state)
                assert_fresh(state, _lint(doc, edited, settings, None), f"{name} -> {new}")


def test_a_lint_with_an_ep_takes_the_node_findings_over(
    tmp_path: Path, checked: dict[str, list[str]]
) -> None:
    """With an EP the analyses are computed again (their inferred copy feeds the
    assignment): the node-local rules' findings are taken over, the others run."""
    doc = tmp_path / "m.onnxtxt"
    settings = Settings(eps=("qnn",))
    before = _lint(doc, OPSETS, settings, None)
    checked["model"].clear()
    checked["node"].clear()
    edited = OPSETS.replace("[undef]", "[undefined]")
    after = _lint(doc, edited, settings, before)
    assert len(checked["node"]) == len(NODE_LOCAL)
    assert sorted(checked["model"]) != []  # OL303 and the chains read Shapes: they ran
    assert_fresh(after, _lint(doc, edited, settings, None), "with an EP")


def test_nothing_is_taken_over_after_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: dict[str, list[str]]
) -> None:
    """A crash (OL099) may not repeat: the next lint runs every rule."""
    from onnxlint.rules.opset import UnknownDomain

    doc = tmp_path / "m.onnxtxt"
    real = UnknownDomain.check_node

    def crash(self: Rule, ctx: Any, node: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(UnknownDomain, "check_node", crash)
    before = _lint(doc, SHAPES, Settings(), None)
    assert any(d.code == "OL099" for d in before.report.diagnostics)
    monkeypatch.setattr(UnknownDomain, "check_node", real)
    checked["model"].clear()
    checked["node"].clear()
    edited = SHAPES.replace("[relu]", "[act]")
    after = _lint(doc, edited, Settings(), before)
    assert len(checked["node"]) == len(NODE_LOCAL) * _nodes(SHAPES)  # every node again
    assert checked["model"]
    assert_fresh(after, _lint(doc, edited, Settings(), None), "after a crash")


def test_another_configuration_takes_nothing_over(
    tmp_path: Path, checked: dict[str, list[str]]
) -> None:
    doc = tmp_path / "m.onnxtxt"
    before = _lint(doc, SHAPES, Settings(), None)
    checked["model"].clear()
    checked["node"].clear()
    settings = Settings(ignore=("OL103",))
    edited = SHAPES.replace("[relu]", "[act]")
    after = _lint(doc, edited, settings, before)
    assert checked["model"] and len(checked["node"]) == len(NODE_LOCAL) * _nodes(SHAPES)
    assert_fresh(after, _lint(doc, edited, settings, None), "another configuration")


def test_a_finding_whose_cause_names_the_edited_node_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_Carry.model_findings`` declines a rule whose finding's cause sits on the node."""
    from dataclasses import replace

    from onnxlint.diagnostics import Cause

    doc = tmp_path / "m.onnxtxt"
    state = _lint(doc, SHAPES, Settings(), None)
    found = state.analyses[RuleFindings]
    assert state.index is not None
    node = next(n for n in state.index.nodes if n.name == "dead")
    marked = [replace(d, cause=Cause("unknown-shape", (node.label,))) for d in found.model["OL107"]]
    found.model["OL107"] = marked
    taken: list[list[Any] | None] = []
    real = _Carry.model_findings

    def spy(self: _Carry, code: str) -> list[Any] | None:
        out = real(self, code)
        if code == "OL107":
            taken.append(out)
        return out

    monkeypatch.setattr(_Carry, "model_findings", spy)
    edited = SHAPES.replace("[dead]", "[alive]")
    after = _lint(doc, edited, Settings(), state)
    assert taken == [None]
    assert_fresh(after, _lint(doc, edited, Settings(), None), "cause")


def test_a_binary_model_saved_with_one_node_renamed(
    tmp_path: Path, checked: dict[str, list[str]]
) -> None:
    model = onnx.parser.parse_model(SHAPES)
    doc = tmp_path / "m.onnx"
    before = model.SerializeToString()
    doc.write_bytes(before)
    uri = path_to_uri(doc)
    state = analyse(uri, doc, before, Settings())
    for position, name in ((2, "alive"), (6, "shp"), (11, "named")):
        edited = onnx.ModelProto()
        edited.CopyFrom(state.index.model if state.index is not None else model)
        edited.graph.node[position].name = name
        after = edited.SerializeToString()
        doc.write_bytes(after)
        checked["model"].clear()
        checked["node"].clear()
        state = analyse(uri, doc, after, Settings(), prior=state)
        assert len(checked["node"]) == len(NODE_LOCAL) and not checked["model"], name
        assert_fresh(state, analyse(uri, doc, after, Settings()), name)


@pytest.mark.parametrize(
    ("old", "new", "again"),
    [
        ("[mx]", "[maxed]", {"maxed", "rng", "rng2"}),
        ("[rng]", "[range]", {"range"}),
        ("[toint]", "[ti]", {"ti"}),
        ("keepdims: int = 0>", "keepdims: int = 0, axes: ints = [0, 1]>", {"mx"}),
    ],
)
def test_node_findings_naming_the_edited_node_are_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, again: set[str]
) -> None:
    """OL410 names the node where a runtime value starts (``node_reads``): after a rename
    of that node, the nodes whose findings name it are checked again, and only those and
    the edited node; an edit that keeps its path and operator checks the edited node only."""
    from onnxlint.rules.control_flow import DataDependentShape

    assert DataDependentShape.node_reads is not None
    seen: list[str] = []
    real = DataDependentShape.check_node

    def spy(self: Rule, ctx: Any, node: Any) -> None:
        seen.append(node.name)
        real(self, ctx, node)

    doc = tmp_path / "m.onnxtxt"
    before = _lint(doc, OPSETS, Settings(), None)
    monkeypatch.setattr(DataDependentShape, "check_node", spy)
    edited = OPSETS.replace(old, new, 1)
    after = _lint(doc, edited, Settings(), before)
    assert set(seen) == again
    assert_fresh(after, _lint(doc, edited, Settings(), None), new)


UNARY = ("Relu", "Neg", "Sigmoid", "Tanh", "Abs")


def _random_edit(text: str, rng: random.Random) -> str:
    """One line of ``text`` edited at random: a node renamed (a new name, another node's,
    a value's, none), an integer attribute changed, a unary operator swapped for another,
    or an input replaced by another value."""
    lines = text.split("\n")
    body = [k for k, line in enumerate(lines) if re.match(r"\s+(\[[^\]]*\] )?\w+ = ", line)]
    at = rng.choice(body)
    line = lines[at]
    names = re.findall(r"\[(\w+)\]", text)
    values = re.findall(r"(\w+) = ", text)
    kind = rng.randrange(4)
    if kind == 0:
        new = rng.choice([f"n{rng.randrange(1000)}", *names, *values, ""])
        bare = re.sub(r"^(\s+)\[[^\]]*\] ", r"\1", line)
        indent = len(bare) - len(bare.lstrip())
        line = bare if not new else f"{bare[:indent]}[{new}] {bare[indent:]}"
    elif kind == 1 and re.search(r": int = -?\d+", line):
        line = re.sub(r": int = -?\d+", f": int = {rng.randrange(-2, 3)}", line, count=1)
    elif kind == 2 and any(f"= {op} (" in line for op in UNARY):
        op = next(op for op in UNARY if f"= {op} (" in line)
        line = line.replace(f"= {op} (", f"= {rng.choice(UNARY)} (", 1)
    elif "(" in line and ")" in line:
        inside = line[line.rindex("(") + 1 : line.rindex(")")]
        picked = [v.strip() for v in inside.split(",") if v.strip()]
        if picked:
            line = line.replace(rng.choice(picked), rng.choice(values), 1)
    lines[at] = line
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_random_edit_chains_lint_as_fresh_lints(tmp_path: Path, seed: int) -> None:
    """Chains of random one-line edits (many taken over, many declined: duplicate names,
    undefined values, cycles, shapes changed), each linted from the result before it."""
    rng = random.Random(seed)
    for k, text in enumerate((SHAPES, OPSETS)):
        doc = tmp_path / f"m{k}.onnxtxt"
        state = _lint(doc, text, Settings(), None)
        kept = [state]
        for step in range(15):
            current = state.source.text if state.source is not None else text
            edited = _random_edit(current, rng)
            state = _lint(doc, edited, Settings(), state)
            kept.append(state)
            fresh = _lint(doc, edited, Settings(), None)
            what = f"seed {seed}, model {k}, step {step}"
            assert state.report.to_dict() == fresh.report.to_dict(), what
            assert dict(state.value_types.items()) == dict(fresh.value_types.items()), what
            if state.report.fatal:
                state = kept[-2]  # a text that does not parse: go on from the last good one


def test_a_finding_under_another_rules_code_takes_nothing_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: dict[str, list[str]]
) -> None:
    """Findings are told apart by code: a check that gives one under a code none of the
    node's rules has leaves the next lint nothing to take over."""
    from onnxlint.diagnostics import Location
    from onnxlint.rules.opset import UnknownDomain
    from onnxlint.rules.structure import DeadNode

    real = UnknownDomain.check_node

    def foreign(self: Rule, ctx: Any, node: Any) -> None:
        ctx.emit(DeadNode.make(Location(graph="main")))

    doc = tmp_path / "m.onnxtxt"
    monkeypatch.setattr(UnknownDomain, "check_node", foreign)
    before = _lint(doc, SHAPES, Settings(), None)
    assert before.analyses[RuleFindings].crashed
    monkeypatch.setattr(UnknownDomain, "check_node", real)
    checked["model"].clear()
    checked["node"].clear()
    edited = SHAPES.replace("[relu]", "[act]")
    after = _lint(doc, edited, Settings(), before)
    assert checked["model"] and len(checked["node"]) == len(NODE_LOCAL) * _nodes(SHAPES)
    assert_fresh(after, _lint(doc, edited, Settings(), None), "a foreign code")
