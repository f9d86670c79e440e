"""An edit inside one node statement of an ``.onnxtxt`` is read by parsing that statement
alone (``modelfile.textedit``, issue 19), and the result is what reading the whole new
text gives: the same model, hash, size and (no) problems, edit by edit, on a printed
model with quoted and missing names, If bodies, a local function and comments. Whatever
the splice cannot prove (two statements, a broken parse, a deeper nesting, a name over
the limit, a node holding a body) is left to the whole read."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint.index import ModelIndex
from onnxlint.limits import Limits
from onnxlint.loader import load_text
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.textmap import map_text_source
from onnxlint.lsp.workspace import analyse, path_to_uri
from onnxlint.modelfile import textedit
from tests.lsp.test_text_map_reuse import _branch

NODES = 300


def _model() -> onnx.ModelProto:
    nodes = []
    prev = "x"
    for i in range(NODES):
        out = f"/layers.{i}/out"
        if i % 100 == 50:
            nodes.append(
                helper.make_node(
                    "If",
                    ["cond"],
                    [out],
                    name=f"/layers.{i}/If",
                    then_branch=_branch(f"then{i}", prev, i),
                    else_branch=_branch(f"else{i}", prev, i),
                )
            )
        elif i % 7 == 3:
            nodes.append(helper.make_node("Add", [prev, "bias"], [out]))  # unnamed
        elif i % 11 == 5:
            nodes.append(helper.make_node("Twice", [prev], [out], domain="local", name=f"tw{i}"))
        else:
            op = ("Relu", "Sigmoid", "Softmax")[i % 3]
            attrs = {"axis": -1} if op == "Softmax" else {}
            name = f"/layers.{i}/{op}_{i % 5}"
            nodes.append(helper.make_node(op, [prev], [out], name=name, **attrs))
        prev = out
    twice = helper.make_function(
        "local",
        "Twice",
        ["a"],
        ["b"],
        [
            helper.make_node("Relu", ["a"], ["r"], name="twice_relu"),
            helper.make_node("Add", ["r", "r"], ["b"], name="twice_add"),
        ],
        [helper.make_opsetid("", 17)],
    )
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor("bias", TensorProto.FLOAT, [4], [0.5, 1.0, 1.5, 2.0])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[twice],
    )


@pytest.fixture(scope="module")
def printed() -> str:
    text = onnx.printer.to_text(_model())
    # a comment before the model and one after a node: the parser skips both
    text = "# exported by hand\n" + text
    return re.sub(r'(\n\s*\["/layers\.20/[^\n]*)', r"\1   # a comment", text, count=1)


def _read(text: str, limits: Limits | None = None) -> onnx.ModelProto:
    loaded = load_text(text.encode(), limits or Limits())
    assert loaded.model is not None and not loaded.problems
    return loaded.model


def _try(old: str, new: str, limits: Limits | None = None) -> textedit.Splice | None:
    """The splice of ``old`` -> ``new``, its site found as the language server finds it."""
    limits = limits or Limits()
    model = _read(old, limits)
    index = ModelIndex(model)
    smap = map_text_source(old, index)
    span = textedit.changed_span(old, new)
    entry = smap.node_at(old.count("\n", 0, span[0]))
    if entry is None:
        return None
    ref = index.node_by_path(entry.path)
    assert ref is not None
    site = textedit.node_site(model, ref, entry.line, max(entry.line, entry.end_line))
    if site is None:
        return None
    return textedit.splice_node_edit(model, old, new, site, limits, span)


def _same_as_reading(new: str, splice: textedit.Splice) -> None:
    got = splice.loaded
    want = load_text(new.encode(), Limits())
    assert want.model is not None and not want.problems
    assert got.model is not None
    assert got.model.SerializeToString(deterministic=True) == want.model.SerializeToString(
        deterministic=True
    )
    assert (got.content_hash, got.size, got.is_text, got.problems) == (
        want.content_hash,
        want.size,
        True,
        [],
    )


def _edit_line(text: str, pattern: str, edit: object) -> str:
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if re.search(pattern, line))
    lines[at] = edit(lines[at]) if callable(edit) else str(edit)
    return "\n".join(lines)


# edits that a splice reads: (what, line pattern, edit)
ACCEPTED = [
    ("a node renamed", r'\["/layers\.7/', lambda s: s.replace('"/layers.7/Sigmoid_2"', "renamed")),
    ("an attribute changed", r"axis: int = -1", lambda s: s.replace("= -1", "= 0", 1)),
    ("an op changed", r'\["/layers\.7/', lambda s: s.replace("Sigmoid (", "Tanh (")),
    ("an input moved", r'\["/layers\.9/', lambda s: s.replace('("/layers.8/out")', "(bias)")),
    (
        "an attribute added",
        r'\["/layers\.12/',
        lambda s: s.replace("Relu (", "Elu <alpha: float = 0.5> ("),
    ),
    ("a comment added", r'\["/layers\.13/', lambda s: s + "  # why"),
    ("a commented line's name", r"# a comment", lambda s: s.replace('"/layers.20/', '"/l20/')),
    ("a node inside an If body", r'\["/then50/Neg"\]', lambda s: s.replace("Neg (", "Abs (")),
    ("a node of the local function", r"\[twice_relu\]", lambda s: s.replace("Relu (", "Elu (")),
    (
        "an unnamed node named",
        r'= Add \("/layers\.2/out"',
        lambda s: s.replace("   ", "   [n] ", 1),
    ),
    (
        "a list attribute added",
        r'\["/layers\.11/',
        lambda s: s.replace("Softmax <axis: int = -1> (", "Softmax <axis: ints = [1]> ("),
    ),
    ("a call of the local function renamed", r"\[tw5\]", lambda s: s.replace("[tw5]", "[tw_5]")),
]


@pytest.mark.parametrize(("what", "pattern", "edit"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_an_edit_inside_one_statement_reads_as_the_whole_text(
    printed: str, what: str, pattern: str, edit: object
) -> None:
    new = _edit_line(printed, pattern, edit)
    assert new != printed
    got = _try(printed, new)
    assert got is not None, what
    _same_as_reading(new, got)


# edits a splice must leave to the whole read: (what, line pattern, edit, readable)
DECLINED = [
    ("a second statement", r'\["/layers\.7/', lambda s: s + ' z = Relu ("/layers.7/out")', True),
    ("a broken parse", r'\["/layers\.7/', lambda s: s.rstrip(")"), False),
    ("the statement deleted", r'\["/layers\.7/', "", True),
    ("a node's body", r'\["/layers\.50/If"\]', lambda s: s.replace("If (", "If  ("), True),
]


@pytest.mark.parametrize(
    ("what", "pattern", "edit", "readable"), DECLINED, ids=[d[0] for d in DECLINED]
)
def test_what_the_splice_cannot_prove_is_read_whole(
    printed: str, what: str, pattern: str, edit: object, readable: bool
) -> None:
    new = _edit_line(printed, pattern, edit)
    assert _try(printed, new) is None, what
    loaded = load_text(new.encode(), Limits())
    assert (loaded.model is not None) == readable, what


def test_two_lines_edited_at_once_are_read_whole(printed: str) -> None:
    new = _edit_line(printed, r'\["/layers\.7/', lambda s: s.replace("Sigmoid (", "Tanh ("))
    new = _edit_line(new, r'\["/layers\.9/', lambda s: s.replace("Relu (", "Tanh ("))
    assert _try(printed, new) is None


def test_a_name_over_the_limit_is_left_to_the_load_rule(printed: str) -> None:
    limits = Limits(max_name_length=64)
    new = _edit_line(
        printed, r'\["/layers\.7/', lambda s: s.replace("/layers.7/Sigmoid_2", "n" * 80)
    )
    assert _try(printed, new, limits) is None
    codes = [p.code for p in load_text(new.encode(), limits).problems]
    assert codes == ["OL008"]


def test_the_old_model_is_not_changed(printed: str) -> None:
    model = _read(printed)
    before = model.SerializeToString(deterministic=True)
    index = ModelIndex(model)
    smap = map_text_source(printed, index)
    new = _edit_line(printed, r'\["/layers\.7/', lambda s: s.replace("Sigmoid (", "Tanh ("))
    span = textedit.changed_span(printed, new)
    entry = smap.node_at(printed.count("\n", 0, span[0]))
    assert entry is not None
    ref = index.node_by_path(entry.path)
    assert ref is not None
    site = textedit.node_site(model, ref, entry.line, entry.end_line)
    assert site is not None
    got = textedit.splice_node_edit(model, printed, new, site, Limits(), span)
    assert got is not None and got.loaded.model is not model
    assert (
        got.was is model.graph.node[site.index]
        and got.now is got.loaded.model.graph.node[site.index]
    )
    assert model.SerializeToString(deterministic=True) == before


def test_random_one_line_edits_read_as_the_whole_text(printed: str) -> None:
    """Random renames, op swaps and stray characters on node lines: every splice the
    reader accepts is the whole read; a good share is accepted."""
    rng = random.Random(7)
    lines = printed.split("\n")
    node_lines = [
        i for i, line in enumerate(lines) if re.match(r"\s*(\[[^\]]*\]\s*)?\S+.* = ", line)
    ]
    accepted = 0
    for _ in range(120):
        at = rng.choice(node_lines)
        line = lines[at]
        kind = rng.randrange(4)
        if kind == 0:
            edited = re.sub(
                r"\[([^\]]*)\]", lambda m: f"[{m.group(1)}_{rng.randrange(99)}]", line, count=1
            )
        elif kind == 1:
            edited = re.sub(r"= (Relu|Sigmoid|Neg|Abs) ", "= Tanh ", line, count=1)
        elif kind == 2:
            k = rng.randrange(len(line) + 1)
            edited = line[:k] + rng.choice(["(", ")", '"', "<", ",", "x", "]", "#", " "]) + line[k:]
        else:
            edited = line.replace("(", "( ", 1)
        if edited == line:
            continue
        new = "\n".join([*lines[:at], edited, *lines[at + 1 :]])
        got = _try(printed, new)
        if got is None:
            continue
        accepted += 1
        _same_as_reading(new, got)
    assert accepted >= 40


@pytest.fixture
def whole() -> Iterator[list[int]]:
    """Each whole read of a text document by the language server's analysis."""
    from onnxlint.lsp import workspace

    reads: list[int] = []
    original = workspace.load_text

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workspace, "load_text", counted)
        yield reads


def test_the_language_server_reads_an_edit_by_its_statement(
    tmp_path: Path, printed: str, whole: list[int]
) -> None:
    """A re-lint of an edited document splices, and publishes what a fresh lint does."""
    doc = tmp_path / "m.onnxtxt"
    doc.write_text(printed)
    uri = path_to_uri(doc)
    settings = Settings()
    state = analyse(uri, doc, printed.encode(), settings)
    whole.clear()  # the edits from here
    text = printed
    for k in range(3):
        text = _edit_line(
            text, r"axis: int = ", lambda s, k=k: re.sub(r"= -?\d+", f"= {k}", s, count=1)
        )
        state = analyse(uri, doc, text.encode(), settings, previous=state.source, prior=state)
        fresh = analyse(uri, doc, text.encode(), Settings())
        assert state.report.to_dict() == fresh.report.to_dict()
    # three edits, three fresh lints: only the fresh ones read the whole text
    assert len(whole) == 3


def test_the_server_hands_an_open_document_its_latest_result(
    tmp_path: Path, printed: str, whole: list[int]
) -> None:
    """The lint service passes a text document's latest state to the next analysis, so an
    edit typed in the editor is spliced, not read whole."""
    import asyncio

    from onnxlint.lsp import workspace
    from onnxlint.lsp.service import LintService

    doc = tmp_path / "m.onnxtxt"
    doc.write_text(printed)
    uri = path_to_uri(doc)
    buffer = {"text": printed, "version": 1}
    published: list[workspace.ModelState] = []

    async def scenario() -> None:
        svc = LintService(
            published.append, lambda _u: (str(buffer["text"]), int(buffer["version"]))
        )
        await svc.schedule(uri, doc, delay=0)
        buffer["text"] = _edit_line(
            printed, r'\["/layers\.7/', lambda s: s.replace("Sigmoid (", "Tanh (")
        )
        buffer["version"] = 2
        await svc.schedule(uri, doc, delay=0)
        svc.shutdown()

    asyncio.run(scenario())
    assert [s.version for s in published] == [1, 2]
    assert len(whole) == 1  # the open; the edit was spliced
    fresh = analyse(uri, doc, str(buffer["text"]).encode(), Settings())
    assert published[-1].report.to_dict() == fresh.report.to_dict()


def test_a_failing_shortcut_costs_the_shortcut_not_the_lint(
    tmp_path: Path, printed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "m.onnxtxt"
    uri = path_to_uri(doc)
    state = analyse(uri, doc, printed.encode(), Settings())

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(textedit, "splice_node_edit", broken)
    new = _edit_line(printed, r'\["/layers\.7/', lambda s: s.replace("Sigmoid (", "Tanh ("))
    got = analyse(uri, doc, new.encode(), Settings(), previous=state.source, prior=state)
    fresh = analyse(uri, doc, new.encode(), Settings())
    assert got.report.to_dict() == fresh.report.to_dict()
    assert any("injected" in n for n in got.notes)
