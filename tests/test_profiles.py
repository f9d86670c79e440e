"""EP profiles: every shipped profile validates, names resolve, broken profiles name the JSON path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from onnxlint import profiles
from onnxlint.data import data_dir
from tests.conftest import user_profile

EPS_DIR = data_dir() / "eps"
SHIPPED = sorted(p.stem for p in EPS_DIR.glob("*.json") if p.name != "index.json")


def _schema() -> dict[str, Any]:
    return json.loads((data_dir() / "schema" / "ep-profile.schema.json").read_text())


def test_schema_is_valid_draft_2020_12() -> None:
    schema = _schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("profile_id", SHIPPED)
def test_shipped_profile_validates(profile_id: str) -> None:
    data = json.loads((EPS_DIR / f"{profile_id}.json").read_text())
    profiles.validate_profile_data(data, profile_id)  # raises ProfileError
    p = profiles.load_profile(profile_id)
    assert p.id == profile_id
    assert p.ops, "a profile must list the ops it claims"
    assert p.provenance
    for op in p.ops.values():
        assert op.provenance in p.provenance


def test_index_matches_the_profile_files() -> None:
    rows = {i.id: i for i in profiles.list_profiles()}
    assert sorted(rows) == SHIPPED, "run: python tools/gen_profiles.py index"
    for pid, info in rows.items():
        data = json.loads((EPS_DIR / info.file).read_text())
        assert data["id"] == pid
        assert data["ep"] == info.ep
        assert tuple(data.get("aliases", [])) == info.aliases
        assert bool(data.get("default_for_ep", False)) == info.default_for_ep


def test_every_ep_in_scope_ships_a_profile() -> None:
    eps = {i.ep for i in profiles.list_profiles()}
    assert eps >= {
        "CPUExecutionProvider",
        "CUDAExecutionProvider",
        "TensorrtExecutionProvider",
        "DmlExecutionProvider",
        "CoreMLExecutionProvider",
        "NnapiExecutionProvider",
        "QNNExecutionProvider",
        "OpenVINOExecutionProvider",
        "ROCMExecutionProvider",
        "MIGraphXExecutionProvider",
        "VitisAIExecutionProvider",
        "NvTensorRTRTXExecutionProvider",
        "XnnpackExecutionProvider",
        "WebGpuExecutionProvider",
        "CANNExecutionProvider",
    }


def test_each_ep_has_exactly_one_default_variant() -> None:
    by_ep: dict[str, list[str]] = {}
    for i in profiles.list_profiles():
        if i.default_for_ep:
            by_ep.setdefault(i.ep, []).append(i.id)
    eps = {i.ep for i in profiles.list_profiles()}
    assert set(by_ep) == eps
    assert all(len(v) == 1 for v in by_ep.values()), by_ep


ALIASES = [
    ("cpu", "cpu"),
    ("CPUExecutionProvider", "cpu"),
    ("cuda", "cuda"),
    ("tensorrt", "tensorrt"),
    ("trt", "tensorrt"),
    ("TensorrtExecutionProvider", "tensorrt"),
    ("dml", "dml"),
    ("DirectML", "dml"),
    ("DmlExecutionProvider", "dml"),
    ("coreml", "coreml-neuralnetwork"),
    ("coreml-mlprogram", "coreml-mlprogram"),
    ("nnapi", "nnapi"),
    ("qnn", "qnn-htp"),
    ("QNN", "qnn-htp"),
    ("QNNExecutionProvider", "qnn-htp"),
    ("qnnexecutionprovider", "qnn-htp"),
    ("qnn-cpu", "qnn-cpu"),
    ("openvino", "openvino-cpu"),
    ("ov", "openvino-cpu"),
    ("OpenVINOExecutionProvider", "openvino-cpu"),
    ("openvino-npu", "openvino-npu"),
    ("rocm", "rocm"),
    ("migraphx", "migraphx"),
    ("vitisai", "vitisai"),
    ("nvtensorrtrtx", "nvtensorrtrtx"),
    ("NvTensorRTRTXExecutionProvider", "nvtensorrtrtx"),
    ("xnnpack", "xnnpack"),
    ("webgpu", "webgpu"),
    ("cann", "cann"),
    ("  Qnn  ", "qnn-htp"),
]


@pytest.mark.parametrize(("name", "expected"), ALIASES)
def test_alias_resolution(name: str, expected: str) -> None:
    assert profiles.resolve(name) == expected


def test_unknown_ep_names_the_known_ones() -> None:
    with pytest.raises(profiles.UnknownProfileError) as exc:
        profiles.resolve("tpu")
    assert "unknown execution provider 'tpu'" in str(exc.value)
    assert "qnn-htp" in str(exc.value)


def test_profiles_are_cached_per_process() -> None:
    a = profiles.load_profile("qnn")
    b = profiles.load_profile("QNNExecutionProvider")
    assert a is b


def test_resolving_a_name_loads_no_profile_and_no_jsonschema() -> None:
    code = (
        "import sys; from onnxlint import profiles; profiles.resolve('qnn'); "
        "assert 'jsonschema' not in sys.modules; assert not profiles._cache; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


# -- user profiles ------------------------------------------------------------------


def _write(tmp_path: Path, data: Any, name: str = "my_npu.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_user_profile_loads(tmp_path: Path) -> None:
    p = profiles.get_profile(_write(tmp_path, user_profile()))
    assert p.id == "my-npu"
    assert p.lookup("", "Conv") is not None
    assert p.claims_domain("ai.onnx")
    assert profiles.load_profile_file(tmp_path / "my_npu.json") is p  # cached


def _break(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = user_profile()
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


BROKEN = [
    (
        ("ops", 0, "versions", 0, "from"),
        "x",
        "ops[0].versions[0].from: 'x' is not of type 'integer'",
    ),
    (("kind",), "fused", "kind: 'fused' is not one of ['compiling', 'kernel']"),
    (("ep",), KeyError, "(root): 'ep' is a required property"),
    (
        ("ops", 0, "types", "T"),
        ["fp16"],
        "ops[0].types.T[0]: 'fp16' does not match",
    ),
    (
        ("ops", 0, "provenance"),
        "nowhere",
        "ops[0].provenance: unknown provenance id 'nowhere'",
    ),
    (
        ("ops", 0, "versions", 0, "to"),
        3,
        "ops[0].versions[0].to: range ends (3) before it starts (11)",
    ),
    (
        ("ops", 0, "constraints"),
        [{"kind": "max_rank", "reason": "too big"}],
        "ops[0].constraints[0]: 'value' is a required property",
    ),
    (
        ("ops", 0, "constraints"),
        [{"kind": "attribute", "name": "group", "reason": "no groups"}],
        "ops[0].constraints[0]: an attribute constraint needs 'allowed', 'forbidden' or 'absent'",
    ),
    (
        ("ops", 0, "constraints"),
        [{"kind": "static_shape", "reason": "r", "value": 3}],
        "ops[0].constraints[0]: Unevaluated properties are not allowed ('value' was unexpected)",
    ),
    (
        ("colour",),
        "blue",
        "(root): Additional properties are not allowed ('colour' was unexpected)",
    ),
    (
        ("cpu_preferred_shape_nodes",),
        True,
        "cpu_preferred_shape_nodes: ORT's CPU preference starts from the outputs",
    ),
    (
        ("partitioning",),
        {"cluster_breakers": ["TopK"]},
        "partitioning.cluster_breakers: cluster_breakers apply only with",
    ),
]


@pytest.mark.parametrize(("path", "value", "message"), BROKEN, ids=[b[2][:40] for b in BROKEN])
def test_broken_user_profile_names_the_json_path(
    tmp_path: Path, path: tuple[Any, ...], value: Any, message: str
) -> None:
    f = _write(tmp_path, _break(path, value))
    with pytest.raises(profiles.ProfileError) as exc:
        profiles.load_profile_file(f)
    assert any(e.startswith(message) for e in exc.value.errors), exc.value.errors
    assert str(f) in str(exc.value)


def test_duplicate_ops_are_reported(tmp_path: Path) -> None:
    data = user_profile()
    data["ops"].append(dict(data["ops"][0]))
    with pytest.raises(profiles.ProfileError) as exc:
        profiles.load_profile_file(_write(tmp_path, data))
    assert exc.value.errors == ("ops[1]: duplicate entry for ai.onnx.Conv (ops[0])",)


def test_user_profile_that_is_not_json(tmp_path: Path) -> None:
    with pytest.raises(profiles.ProfileError) as exc:
        profiles.load_profile_file(_write(tmp_path, '{"id": "x",\n  oops}'))
    assert exc.value.errors[0].startswith("(root): not valid JSON (line 2, column 3)")


def test_missing_user_profile(tmp_path: Path) -> None:
    with pytest.raises(profiles.ProfileError) as exc:
        profiles.load_profile_file(tmp_path / "absent.json")
    assert exc.value.errors[0].startswith("(root): cannot read file")


def test_json_path_formatting() -> None:
    assert profiles.json_path(["ops", 12, "versions", 0, "from"]) == "ops[12].versions[0].from"
    assert profiles.json_path([]) == "(root)"
