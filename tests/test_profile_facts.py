"""The shipped profiles are what the committed facts make.

``rules/eps/*.json`` are generated (``tools/gen_profiles.py``) from the facts in
``rules/facts/``: what the extraction commands read upstream (``sources/``) and the curated
headers, overlays and fitted measurements. Building them again needs no upstream clone,
so a hand edit of a profile that is not also a fact (or a fact edited without rebuilding)
fails here, naming the file and the field that drifted.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
EPS = TOOLS.parent / "rules" / "eps"


def _tool(name: str) -> ModuleType:
    if not (TOOLS / f"{name}.py").exists():
        pytest.skip("tools/ is not part of this installation")
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _profiles() -> list[str]:
    return sorted(p.stem for p in EPS.glob("*.json") if p.name != "index.json")


def test_every_profile_has_facts() -> None:
    facts = _tool("ep_facts")
    assert facts.profile_ids() == _profiles()
    for pid in _profiles():
        assert facts.source_path(pid).exists(), f"no rules/facts/sources/{pid}.json"


@pytest.mark.parametrize("profile_id", _profiles())
def test_building_from_the_facts_changes_nothing(profile_id: str) -> None:
    gen = _tool("gen_profiles")
    drift = gen.check([profile_id])
    assert drift == [], (
        "the committed profile is not what rules/facts/ makes; edit the fact in "
        "rules/facts/ and run `python tools/gen_profiles.py build`:\n" + "\n".join(drift)
    )


def test_a_drifted_header_field_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _tool("gen_profiles")
    facts = _tool("ep_facts")
    real = facts.header

    def header(pid: str) -> dict[str, Any]:
        h = real(pid)
        if pid == "qnn-htp":
            h["partitioning"]["notes"] = [*h["partitioning"]["notes"], "an extra note"]
            h["display_name"] = "QNN (edited)"
        return h

    monkeypatch.setattr(facts, "header", header)
    drift = gen.check(["qnn-htp"])
    committed = json.loads((EPS / "qnn-htp.json").read_text(encoding="utf-8"))
    assert drift == [
        f"qnn-htp.json.display_name: {committed['display_name']!r} != 'QNN (edited)' (made)",
        "qnn-htp.json.partitioning.notes["
        f"{len(committed['partitioning']['notes'])}]: missing from the committed file: "
        "'an extra note'",
    ]


def test_a_drifted_op_constraint_is_named_by_op_and_index() -> None:
    gen = _tool("gen_profiles")
    committed = json.loads((EPS / "openvino-cpu.json").read_text(encoding="utf-8"))
    made = copy.deepcopy(committed)
    entry = next(o for o in made["ops"] if o.get("constraints"))
    entry["constraints"][0]["reason"] = "reworded"
    made["ops"] = [o for o in made["ops"] if o["op"] != "Abs"]
    assert gen.drift(made, committed) == [
        f".ops.{entry['domain']}::{entry['op']}.constraints[0].reason: "
        f"{committed_reason(committed, entry)!r} != 'reworded' (made)",
        ".ops.ai.onnx::Abs: in the committed file only",
    ]


def committed_reason(doc: dict[str, Any], entry: dict[str, Any]) -> str:
    for o in doc["ops"]:
        if (o["domain"], o["op"]) == (entry["domain"], entry["op"]):
            return str(o["constraints"][0]["reason"])
    raise AssertionError("op not found")


def test_adopt_takes_a_hand_edit_over_into_the_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen = _tool("gen_profiles")
    facts = _tool("ep_facts")
    shutil.copytree(facts.FACTS, tmp_path / "facts")
    shutil.copytree(EPS, tmp_path / "eps")
    monkeypatch.setattr(facts, "FACTS", tmp_path / "facts")
    monkeypatch.setattr(gen, "EPS", tmp_path / "eps")
    path = tmp_path / "eps" / "openvino-cpu.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["partitioning"]["min_partition_nodes"] = 3
    entry = next(o for o in doc["ops"] if o.get("constraints"))
    entry["constraints"][0]["reason"] = "reworded"
    doc["ops"] = [o for o in doc["ops"] if o["op"] != "Abs"]
    doc["ops"].append({"domain": "my.ops", "op": "Custom", "provenance": "ov-measured"})
    path.write_text(gen.render(doc), encoding="utf-8")

    adopted = gen.adopt("openvino-cpu")

    assert "openvino-cpu.json.partitioning.min_partition_nodes: 3 != 2 (made)" in adopted
    assert gen.check(["openvino-cpu"]) == []
    header = json.loads((tmp_path / "facts" / "profiles" / "openvino-cpu.json").read_text())
    assert header["header"]["partitioning"]["min_partition_nodes"] == 3
    assert header["overlays"][-1] == "adopted-openvino-cpu"
    part = json.loads((tmp_path / "facts" / "overlays" / "adopted-openvino-cpu.json").read_text())
    assert {(r["op"], next(k for k in r if k not in ("domain", "op"))) for r in part["ops"]} == {
        (entry["op"], "replace"),
        ("Custom", "replace"),
        ("Abs", "remove"),
    }
    # a shared field edited in one variant becomes that variant's own field
    gpu = tmp_path / "eps" / "openvino-gpu.json"
    doc = json.loads(gpu.read_text(encoding="utf-8"))
    doc["notes"] = [*doc["notes"], "GPU only"]
    gpu.write_text(gen.render(doc), encoding="utf-8")
    gen.adopt("openvino-gpu")
    assert gen.check(["openvino-gpu", "openvino-npu"]) == []
    own = json.loads((tmp_path / "facts" / "profiles" / "openvino-gpu.json").read_text())
    assert own["base"] == "openvino" and own["header"]["notes"][-1] == "GPU only"
    assert "GPU only" not in facts.base_header("openvino")["notes"]

    monkeypatch.undo()  # the repository's facts are untouched
    assert gen.check(["openvino-cpu"]) == []
    assert not (facts.FACTS / "overlays" / "adopted-openvino-cpu.json").exists()


def _overlay_validator() -> Any:
    import jsonschema
    from referencing import Registry, Resource

    profile_schema = json.loads(
        (EPS.parent / "schema" / "ep-profile.schema.json").read_text(encoding="utf-8")
    )
    schema = json.loads((EPS.parent / "facts" / "overlay.schema.json").read_text(encoding="utf-8"))
    registry = Registry().with_resource(
        profile_schema["$id"], Resource.from_contents(profile_schema)
    )
    return jsonschema.Draft202012Validator(schema, registry=registry)


@pytest.mark.parametrize(
    "part", sorted(p.stem for p in (EPS.parent / "facts" / "overlays").glob("*.json"))
)
def test_every_overlay_part_is_well_formed_and_used(part: str) -> None:
    facts = _tool("ep_facts")
    doc = json.loads((facts.FACTS / "overlays" / f"{part}.json").read_text(encoding="utf-8"))
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _overlay_validator().iter_errors(doc)
    ]
    assert errors == []
    assert any(part in facts.overlay_parts(pid) for pid in facts.profile_ids())


def test_a_misspelt_overlay_key_is_refused() -> None:
    row = {"domain": "ai.onnx", "op": "Conv", "constraint": [{"kind": "always", "reason": "x"}]}
    errors = list(_overlay_validator().iter_errors({"about": "a", "ops": [row]}))
    assert any("'constraint' was unexpected" in e.message for e in errors)


def test_every_overlay_part_a_profile_names_exists() -> None:
    facts = _tool("ep_facts")
    for pid in facts.profile_ids():
        for part in facts.overlay_parts(pid):
            assert (facts.FACTS / "overlays" / f"{part}.json").exists(), (pid, part)


def test_every_profile_facts_file_holds_only_known_keys() -> None:
    facts = _tool("ep_facts")
    for pid in facts.profile_ids():
        doc = json.loads((facts.FACTS / "profiles" / f"{pid}.json").read_text(encoding="utf-8"))
        assert set(doc) <= {"base", "header", "overlays"} and "header" in doc, pid
        assert not {"$schema", "schema_version", "id", "ops"} & set(facts.header(pid)), pid
