"""What the language server's re-lints share and what they drop (issue 19): the text
order of the nodes is computed once per lint for both levels of the model, and the
verdict memos of a user profile are dropped when that profile is loaded again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnxlint import engine, profiles
from onnxlint.analyses import assignment, level_graph
from onnxlint.config import Config
from onnxlint.index import ModelIndex
from onnxlint.limits import Limits
from onnxlint.loader import load_text
from tests.conftest import user_profile
from tests.lsp.models import NESTED, OPSET

# QNN refuses every node (a dynamic batch); ORT's level-1 optimizers remove the Identity,
# so the optimized level is a graph of its own
CHAIN = f"""{OPSET}
chain (float[N,4] t0) => (float[N,4] y) {{
   [r0] t1 = Relu (t0)
   [r1] t2 = Sigmoid (t1)
   [last] y = Identity (t2)
}}
"""


def test_text_ranks_are_computed_once_per_lint(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = level_graph._text_ranks

    def counted(index: ModelIndex) -> dict[str, int]:
        calls.append(1)
        return original(index)

    monkeypatch.setattr(level_graph, "_text_ranks", counted)
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    report = engine.lint(CHAIN.encode(), eps=["qnn"], what_if=False)
    assert [p.level for p in report.partitions] == ["exported", "optimized"]
    assert len(calls) == 1


def test_text_ranks_follow_an_index_that_grew() -> None:
    loaded = load_text(NESTED.encode(), Limits())
    assert loaded.model is not None
    index = ModelIndex(loaded.model)
    first = level_graph.text_ranks(index)
    assert level_graph.text_ranks(index) is first  # memoised
    assert list(first) == [n.path for n in sorted(index.nodes, key=lambda n: first[n.path])]
    assert first == level_graph._text_ranks(index)
    index.nodes.append(index.nodes[0])  # an index that grew is walked again
    assert level_graph.text_ranks(index) is not first


# -- verdicts of a reloaded user profile ----------------------------------------------------

RELUS = f"""{OPSET}
relus (float[2,4] x) => (float[2,4] y) {{
   [r0] a = Relu (x)
   [r1] y = Relu (a)
}}
"""


@pytest.fixture
def kept_verdicts() -> Iterator[None]:
    assignment.keep_verdicts(True)
    yield
    assignment.keep_verdicts(False)
    profiles.clear_cache()


def _claims(report: Any) -> dict[str, str]:
    return dict(report.assignment)


def test_a_reloaded_user_profile_drops_the_old_profiles_verdicts(
    tmp_path: Path, kept_verdicts: None
) -> None:
    path = tmp_path / "my_npu.json"
    config = Config(ep_profiles=(str(path),))
    path.write_text(json.dumps(user_profile("Relu", 1, ["float"])))
    first = engine.lint(RELUS.encode(), eps=[], config=config, what_if=False)
    old = profiles.load_profile_file(path)
    (kept,) = _KEPT_profiles()  # one EP list: the user's profile (and the CPU fallback)
    assert any(p is old for p in kept)
    # the file changes and the profile is loaded again (a new object of the same id)
    path.write_text(json.dumps(user_profile("Relu", 1, ["float16"])))
    profiles.clear_cache()
    second = engine.lint(RELUS.encode(), eps=[], config=config, what_if=False)
    new = profiles.load_profile_file(path)
    assert new is not old
    (kept,) = _KEPT_profiles()  # the old profile's memos are gone
    assert any(p is new for p in kept) and not any(p is old for p in kept)
    # and the verdicts are the new file's: as a lint without kept memos says
    assignment.keep_verdicts(False)
    fresh = engine.lint(RELUS.encode(), eps=[], config=config, what_if=False)
    assert _claims(second) == _claims(fresh)
    assert _claims(first) != _claims(second)  # the edit changed what the EP claims


def test_at_most_kept_lists_of_memos_are_kept(kept_verdicts: None) -> None:
    ids = ["qnn", "openvino", "cuda", "tensorrt", "coreml", "nnapi", "xnnpack", "dml", "webgpu"]
    known = {i.id for i in profiles.list_profiles()}
    names = [n for n in ids if n in known] or sorted(known)
    for name in names:
        engine.lint(RELUS.encode(), eps=[name], what_if=False)
    assert assignment._KEPT is not None
    assert len(assignment._KEPT) <= assignment.KEPT_LISTS


def _KEPT_profiles() -> list[tuple[Any, ...]]:
    assert assignment._KEPT is not None
    return [entry[0] for entry in assignment._KEPT.values()]
