"""After an edit of one node of an ``.onnxtxt``, the language server takes the previous
Shapes analysis over when the edit provably leaves every type as it was
(``analyses.edits``, issue 19), and analyses the model again otherwise: edit by
edit, the result (findings, and the types hover shows) is a fresh lint's, and whether it
was taken over is what the rule says (a rename, an attribute that keeps the output; not
an attribute that changes it, an invalid one, a node reading propagated values, another
operator, a lint with an EP). Dataflow is taken over with Shapes, its facts' nodes
moved to the new index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onnxlint.analyses.dataflow import Dataflow
from onnxlint.analyses.shapes import Shapes
from onnxlint.index import ModelIndex
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState
from tests.lsp.models import lint_edit
from tests.test_index_edit import signature

TEXT = """<ir_version: 8, opset_import: ["" : 17]>
carry (float[N,4] x, bool c) => (float[N,4] y, float[4,N] yt, float[N,4] r, float[N,8] g) <float[4,8] w = {1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8}, float[8] b = {1,2,3,4,5,6,7,8}> {
   [soft] s = Softmax <axis: int = -1> (x)
   [relu] y = Relu (s)
   [tr] yt = Transpose <perm: ints = [1, 0]> (y)
   [gemm] g = Gemm <alpha: float = 1.0, transB: int = 0> (y, w, b)
   [shape] sh = Shape (y)
   [zero] zero = Constant <value: tensor = int64[1] {0}> ()
   [first] n = Gather <axis: int = 0> (sh, zero)
   [four] k = Constant <value: tensor = int64[1] {4}> ()
   [cat] dims = Concat <axis: int = 0> (n, k)
   [flat] f = Reshape <allowzero: int = 0> (y, dims)
   [half] r = Identity (f)
   [if] z = If (c) <then_branch = t () => (float[N,4] tz) {
      [inner] tz = Neg (x)
   }, else_branch = e () => (float[N,4] ez) {
      [inner2] ez = Abs (x)
   }>
}
"""

# (what, old text, new text, taken over)
EDITS = [
    ("a node renamed", "[relu]", "[activation]", True),
    ("a node in an If body renamed", "[inner]", "[negate]", True),
    (
        "an attribute that keeps the output",
        "Softmax <axis: int = -1>",
        "Softmax <axis: int = 0>",
        True,
    ),
    ("an attribute read with an initializer", "alpha: float = 1.0", "alpha: float = 0.5", True),
    ("an attribute that changes the output", "perm: ints = [1, 0]", "perm: ints = [0, 1]", False),
    (
        "an attribute inference refuses",
        "Softmax <axis: int = -1>",
        "Softmax <axis: int = 7>",
        False,
    ),
    ("a node reading propagated values", "allowzero: int = 0", "allowzero: int = 1", False),
    ("a node whose values propagate", "Gather <axis: int = 0>", "Gather <axis: int = -1>", False),
    ("another operator", "= Relu (s)", "= Sigmoid (s)", False),
    (
        "an attribute of the wrong type",
        "Softmax <axis: int = -1>",
        "Softmax <axis: float = 1.0>",
        False,
    ),
    ("an input moved", "Relu (s)", "Relu (x)", False),
]


def _lint(doc: Path, text: str, settings: Settings, prior: ModelState | None) -> ModelState:
    state: ModelState = lint_edit(doc, text, settings, prior)
    return state


def _table(state: ModelState) -> dict[str, Any]:
    shapes = state.analyses.get(Shapes)
    assert isinstance(shapes, Shapes)
    return dict(shapes._table)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each Shapes analysis computed (not taken over); each Dataflow walk goes into
    ``flows``."""
    calls: list[int] = []
    original = Shapes._compute

    def compute(self: Shapes, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Shapes, "_compute", compute)
    walk = Dataflow._run

    def run(self: Dataflow, ctx: Any) -> None:
        flows.append(1)
        walk(self, ctx)

    flows.clear()
    monkeypatch.setattr(Dataflow, "_run", run)
    return calls


#: the Dataflow walks of the test (``counted``)
flows: list[int] = []


@pytest.mark.parametrize(("what", "old", "new", "taken"), EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_takes_the_shapes_over_only_when_they_hold(
    tmp_path: Path, counted: list[int], what: str, old: str, new: str, taken: bool
) -> None:
    doc = tmp_path / "m.onnxtxt"
    settings = Settings()
    before = _lint(doc, TEXT, settings, None)
    assert counted == [1]
    edited = TEXT.replace(old, new, 1)
    assert edited != TEXT
    after = _lint(doc, edited, settings, before)
    assert (len(counted) == 1) is taken, what
    assert (len(flows) == 1) is taken, what  # Dataflow too, with its nodes moved
    fresh = _lint(doc, edited, settings, None)
    assert after.report.to_dict() == fresh.report.to_dict(), what
    assert _table(after) == _table(fresh), what
    assert [after.value_types[k] for k in fresh.value_types] == list(fresh.value_types.values())
    # the index, built from the previous one for an edit of the main graph, is a fresh one
    assert after.index is not None
    assert signature(after.index) == signature(ModelIndex(after.index.model)), what


def test_the_index_is_built_from_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "m.onnxtxt"
    settings = Settings(eps=("qnn",))  # with an EP too: the index does not depend on them
    before = _lint(doc, TEXT, settings, None)
    built: list[int] = []  # the models indexed afresh (the EP's level-1 graph is one too)
    init = ModelIndex.__init__

    def counting(self: ModelIndex, model: Any) -> None:
        built.append(id(model))
        init(self, model)

    monkeypatch.setattr(ModelIndex, "__init__", counting)
    after = _lint(doc, TEXT.replace("perm: ints = [1, 0]", "perm: ints = [0, 1]"), settings, before)
    assert after.index is not None and id(after.index.model) not in built
    assert signature(after.index) == signature(ModelIndex(after.index.model))
    moved = _lint(doc, TEXT.replace("Relu (s)", "Relu (x)"), settings, after)
    assert moved.index is not None and id(moved.index.model) in built  # indexed afresh


def test_the_checker_runs_again_only_for_what_it_has_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename keeps the checker's "accepted"; an attribute edit is judged by the node's
    own check; a node it refuses is judged with the whole model (the finding is a fresh
    lint's)."""
    import onnx

    runs: list[int] = []
    real = onnx.checker.check_model

    def counting(*args: Any, **kwargs: Any) -> None:
        runs.append(1)
        real(*args, **kwargs)

    monkeypatch.setattr(onnx.checker, "check_model", counting)
    doc = tmp_path / "m.onnxtxt"
    settings = Settings(eps=("qnn",))  # with an EP too: the verdict is the model's alone
    state = _lint(doc, TEXT, settings, None)
    assert len(runs) == 1
    for old, new, again in (
        ("[relu]", "[activation]", False),
        ("Softmax <axis: int = -1>", "Softmax <axis: int = 0>", False),
        ("Softmax <axis: int = 0>", "Softmax <axis: float = 1.0>", True),
    ):
        before = len(runs)
        text = state.source.text.replace(old, new, 1) if state.source else ""
        state = _lint(doc, text, settings, state)
        assert (len(runs) > before) is again, new
        fresh = _lint(doc, text, settings, None)
        assert state.report.to_dict() == fresh.report.to_dict(), new
    assert any(d.code == "OL101" for d in state.report.diagnostics)


def test_a_chain_of_edits_takes_over_from_a_taken_over_result(
    tmp_path: Path, counted: list[int]
) -> None:
    doc = tmp_path / "m.onnxtxt"
    settings = Settings()
    state = _lint(doc, TEXT, settings, None)
    text = TEXT
    for axis in (0, 1, -2, -1):
        text = text.replace(
            text[text.index("Softmax <axis") :].split(">")[0] + ">",
            f"Softmax <axis: int = {axis}>",
            1,
        )
        state = _lint(doc, text, settings, state)
        assert state.report.to_dict() == _lint(doc, text, settings, None).report.to_dict()
    assert len(counted) == len(flows) == 1 + 4  # the first lint, and the four fresh ones


def test_a_lint_with_an_ep_analyses_the_model_again(tmp_path: Path, counted: list[int]) -> None:
    """The EP assignment reads the inferred copy a taken-over result does not have."""
    doc = tmp_path / "m.onnxtxt"
    settings = Settings(eps=("qnn",))
    before = _lint(doc, TEXT, settings, None)
    after = _lint(doc, TEXT.replace("[relu]", "[activation]"), settings, before)
    assert len(counted) == len(flows) == 2
    assert not after.report.fatal


def test_a_taken_over_dataflow_names_the_new_nodes(tmp_path: Path, counted: list[int]) -> None:
    doc = tmp_path / "m.onnxtxt"
    settings = Settings()
    before = _lint(doc, TEXT, settings, None)
    after = _lint(doc, TEXT.replace("[soft]", "[renamed_soft]"), settings, before)
    assert len(flows) == 1  # taken over
    flow = after.analyses[Dataflow]
    assert after.index is not None
    origin = flow.origin("y")  # the Softmax is where x's runtime values start
    assert origin is not None and origin.name == "renamed_soft"
    assert any(ref is origin for ref in after.index.nodes)
