"""docs/performance.md shows the budget of the committed results, and the speed suite's
arithmetic (medians, ratios, targets) is what it reports. No timing is asserted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks import budget, speed
from benchmarks.__main__ import RESULTS


def test_the_documents_budget_table_is_the_committed_results() -> None:
    data = json.loads((RESULTS / "results.json").read_text(encoding="utf-8"))
    doc = budget.DOC.read_text(encoding="utf-8")
    assert budget.render(doc, data) == doc, "run: python -m benchmarks table"


def test_the_committed_results_record_versions_and_the_machine() -> None:
    data = json.loads((RESULTS / "results.json").read_text(encoding="utf-8"))
    assert data["versions"]["onnxruntime"] and data["versions"]["onnx"]
    assert data["machine"]["python"] and data["machine"]["cores"]
    assert data["targets"], "the run judged no target"


def test_render_replaces_only_the_block() -> None:
    doc = f"intro\n{budget.START}\nold\n{budget.END}\noutro\n"
    out = budget.render(doc, _data())
    assert out.startswith(f"intro\n{budget.START}\nRun `speed` of s UTC: onnxruntime 9.9")
    assert out.endswith(f"{budget.END}\noutro\n")
    assert "| one EP, warm: time vs floor, every model |" in out
    with pytest.raises(ValueError):
        budget.render("no markers", _data())


def _m(scenario: str, model: str, tool: str, runs: list[float]) -> dict[str, Any]:
    med = sorted(runs)[len(runs) // 2]
    return {
        "scenario": scenario,
        "model": model,
        "tool": tool,
        "runs": runs,
        "median_s": med,
        "min_s": min(runs),
        "max_s": max(runs),
        "peak_rss_mb": 1.0,
        "extra": {},
        "error": None,
    }


def _data() -> dict[str, Any]:
    ms = [
        _m("lint-1ep", "a", "floor", [0.2, 0.2, 0.3]),
        _m("lint-1ep", "a", "ort-mobile", [2.0, 2.0, 9.0]),
        _m("lint-1ep", "a", "onnxlint", [0.5, 0.4, 0.6]),  # median 0.5: 2.5x floor, 4x faster
        _m("lint-1ep", "a", "onnxlint-warm", [0.25, 0.26, 0.24]),  # 1.25x floor, 8x faster
        _m("lint-1ep", "a", "onnxlint-base", [1.0, 1.0, 1.0]),
        _m("lint-1ep", "b", "floor", [1.0]),
        _m("lint-1ep", "b", "ort-mobile", [1.5]),
        _m("lint-1ep", "b", "onnxlint", [1.5]),
        _m("lint-1ep", "b", "onnxlint-warm", [1.5]),
        _m("folder", "folder_3", "onnxlint-j1", [10.0, 11.0, 12.0]),
        _m("folder", "folder_3", "onnxlint-j2", [5.0, 6.0, 7.0]),
        _m("folder", "folder_3", "onnxlint-base-j1", [20.0]),
        _m("folder", "folder_3", "onnxlint-base-j2", [20.0]),
    ]
    data: dict[str, Any] = {
        "mode": "speed",
        "started": "s",
        "finished": "f",
        "duration_s": 1.0,
        "repeat": 3,
        "machine": {
            "cpu": "c",
            "cores": 2,
            "memory_gib": 1,
            "os": "o",
            "python": "3",
            "load_average": [1.0, 1.0, 1.0],
        },
        "load_average_end": [2.0, 2.0, 2.0],
        "versions": {"onnxruntime": "9.9", "onnx": "1.0"},
        "baseline": {"ref": "main", "commit": "abc"},
        "measurements": ms,
    }
    data["targets"] = speed.targets(data)
    return data


def test_ratios_and_targets_from_medians() -> None:
    data = _data()
    rows = {(r["model"], r["tool"]): r for r in speed.ratios(data)}
    a = rows[("a", "onnxlint")]
    assert a["vs_floor"] == 2.5 and a["ort_checker_over_this"] == 4.0
    assert a["before_over_after"] == 2.0
    assert rows[("a", "onnxlint-warm")]["vs_floor"] == 1.25
    assert "before_over_after" not in rows[("a", "onnxlint-base")]
    got = {t["target"]: t for t in data["targets"]}
    warm = got["one EP, warm: time vs floor, every model"]
    assert warm["met"] is False and "(b)" in warm["measured"] and "1/2 within" in warm["measured"]
    cold_ort = got["one EP, cold: faster than ORT's checker, every model"]
    assert cold_ort["met"] is False and "worst 1.00x (b)" in cold_ort["measured"]
    folder = got["folder_3: -j 2 vs serial (cold, light and one-node models)"]
    assert folder["met"] is True and folder["measured"].startswith("1.83x")
    assert not any("base" in t for t in got)  # the baseline is reported, not judged


def test_markdown_has_every_section_and_says_the_machine_was_loaded() -> None:
    md = speed.markdown(_data())
    for heading in ("## Budget", "## One EP", "## Folder", "## Every command"):
        assert heading in md
    assert "loaded by other engineers" in md
    assert "Baseline (`onnxlint-base`): git main (abc)" in md


@pytest.mark.parametrize("base_relint", [True, False], ids=["base-relint", "base-without-reports"])
def test_a_relint_is_compared_with_the_baseline_s_relint_when_it_has_one(base_relint: bool) -> None:
    ms = [
        _m("lint-1ep", "a", "floor", [0.2]),
        _m("lint-1ep", "a", "onnxlint-relint", [0.5]),
        _m("lint-1ep", "a", "onnxlint-warm", [0.1]),
        _m("lint-1ep", "a", "onnxlint-base-warm", [0.1]),  # a report read back, or a relint
    ]
    if base_relint:
        ms.append(_m("lint-1ep", "a", "onnxlint-base-relint", [1.0]))
    rows = {r["tool"]: r for r in speed.ratios({"measurements": ms})}
    # with a report cache, the baseline's warm row is a read-back, not a before for a relint
    assert rows["onnxlint-relint"]["before_over_after"] == (2.0 if base_relint else 0.2)
    assert rows["onnxlint-warm"]["before_over_after"] == 1.0
    assert "before_over_after" not in rows["onnxlint-base-warm"]
    if base_relint:  # the baseline's own rows have no before
        assert "before_over_after" not in rows["onnxlint-base-relint"]


def test_only_a_checkout_with_a_report_cache_gets_relint_rows(tmp_path: Any) -> None:
    assert not speed.has_report_cache(tmp_path)
    (tmp_path / "onnxlint").mkdir()
    (tmp_path / "onnxlint" / "report_cache.py").write_text("")
    assert speed.has_report_cache(tmp_path) and speed.has_report_cache(speed.REPO)


def test_every_folder_is_judged_on_its_own() -> None:
    data = _data()
    data["measurements"] += [
        _m("folder", "realworld_100", "onnxlint-j1", [20.0]),
        _m("folder", "realworld_100", "onnxlint-j2", [14.0]),
    ]
    got = {t["target"]: t for t in speed.targets(data)}
    assert got["folder_3: -j 2 vs serial (cold, light and one-node models)"]["met"] is True
    real = got["realworld_100: -j 2 vs serial (cold)"]
    assert real["met"] is False and real["measured"].startswith("1.43x")


def test_a_real_folder_is_an_even_spread_of_the_corpus(tmp_path: Any) -> None:
    source = tmp_path / "corpus"
    source.mkdir()
    for family in ("albert", "bert", "vit", "yolos"):
        for i in range(5):
            (source / f"{family}-{i}.onnx").write_bytes(f"{family}{i}".encode())
    (source / "notes.txt").write_text("not a model")
    out = speed.spread(source, 8, tmp_path / "picked")
    picked = sorted(p.name for p in out.iterdir())
    assert len(picked) == 8
    # two of each family, taken every other file of the sorted names
    assert {name.split("-")[0] for name in picked} == {"albert", "bert", "vit", "yolos"}
    assert (out / "albert-0.onnx").read_bytes() == b"albert0"
    assert len(list(speed.spread(source, 100, tmp_path / "all").iterdir())) == 20
    with pytest.raises(SystemExit):
        speed.spread(tmp_path / "picked" / "missing", 3, tmp_path / "none")
