"""onnxlint.torch.check_export without torch: opset search, scoring, failures.

The exporter is replaced by a fake that builds an ONNX model per opset, so the
recommendation logic is tested fast and everywhere; the real exporters are
tested in ``test_torch_export.py`` (marked ``torch``).
"""

from __future__ import annotations

import sys
from typing import Any

import onnx
import pytest

import onnxlint.torch as olt
from onnxlint import torch_export

from .conftest import parse

#: HannWindow exists from opset 17 (ORT has no older one of its own): earlier opsets give
#: OL204 errors
WINDOW = """\
<ir_version: 8, opset_import: ["" : {opset}]>
g (float[1,4] x) => (float[1,4] y)
    <int64 n = {{4}}> {{
    [win] w = HannWindow(n)
    [act] y = Mul(x, w)
}}
"""


class FakeModule:
    def forward(self, x: Any) -> Any:
        return x


@pytest.fixture
def fake_exporter(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Export = parse WINDOW at the opset; opset 12 raises like an exporter would."""
    calls: list[int] = []

    def export(module: Any, args: Any, *, opset: int, exporter: str, **kw: Any) -> onnx.ModelProto:
        calls.append(opset)
        if opset == 12:
            raise RuntimeError(
                "Exporting the operator 'aten::foo' to ONNX opset version 12 is not supported"
            )
        return parse(WINDOW.format(opset=opset))

    monkeypatch.setattr(torch_export, "_torch", lambda: object())
    monkeypatch.setattr(torch_export, "export_to_proto", export)
    monkeypatch.setattr(torch_export, "default_opset", lambda exporter: 18)
    return calls


@pytest.mark.parametrize(
    ("candidates", "config", "chosen", "why"),
    [
        # 17 and 18 are clean: the exporter default wins the tie
        ([13, 15, 17, 18], None, 18, "default on a tie"),
        # ORT 1.12 loads up to opset 17: the default 18 gets OL201, 17 is recommended
        ([13, 15, 17, 18], {"target-ort": "1.12"}, 17, "fewest errors"),
        # all candidates have the error: fewest errors tie, then the default
        ([13, 14, 18], {"target-ort": "1.10"}, 18, "all equal"),
        # without the default among the candidates, the newest clean opset
        ([13, 17, 19], None, 19, "newest on a tie"),
        # an opset that fails to export is skipped, not recommended
        ([12, 17], None, 17, "failure skipped"),
    ],
)
def test_recommends_the_opset_with_fewest_problems(
    fake_exporter: list[int], candidates: list[int], config: Any, chosen: int, why: str
) -> None:
    report = olt.check_export(
        FakeModule(), (None,), ep="cpu", candidate_opsets=candidates, dynamo=False, config=config
    )
    assert report.opset == chosen, why
    assert [t.opset for t in report.trials] == candidates
    assert fake_exporter == candidates  # one export per candidate; the best model is kept
    best = next(t for t in report.trials if t.opset == chosen)
    assert len(report.errors) == best.errors
    assert report.model is not None
    assert report.model.opset_import[0].version == chosen
    assert report.path == f"<torch FakeModule opset {chosen}>"
    assert f"opset_version={chosen}" in report.recommendation()


def test_recommendation_compares_with_the_default(fake_exporter: list[int]) -> None:
    report = olt.check_export(
        FakeModule(),
        (None,),
        ep="cpu",
        candidate_opsets=[17, 18],
        dynamo=False,
        config={"target-ort": "1.12"},
    )
    assert report.recommendation() == (
        "export with opset_version=17 (torchscript exporter): 0 errors, 0 warnings for cpu; "
        "the exporter default opset 18 leaves 1 error, 0 warnings"
    )
    export = report.to_dict()["export"]
    assert export["recommended_opset"] == 17
    assert [t["errors"] for t in export["trials"]] == [0, 1]


def test_explicit_opset_exports_once(fake_exporter: list[int]) -> None:
    report = olt.check_export(FakeModule(), (None,), ep="cpu", opset=13, dynamo=False)
    assert fake_exporter == [13]
    assert report.opset == 13
    assert report.recommended_opset is None
    assert [d.code for d in report.errors if d.code == "OL204"] == ["OL204"]


def test_every_opset_failing_raises_with_reasons(fake_exporter: list[int]) -> None:
    with pytest.raises(olt.ExportFailed, match=r"torchscript opset 12: RuntimeError: Exporting"):
        olt.check_export(FakeModule(), (None,), ep="cpu", candidate_opsets=[12], dynamo=False)


def test_without_torch_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes "import torch" fail
    with pytest.raises(olt.TorchNotAvailable, match=r"pip install 'onnxlint\[torch\]'"):
        olt.check_export(FakeModule(), (None,))


def test_importing_onnxlint_torch_does_not_import_torch() -> None:
    assert olt.check_export is torch_export.check_export
    assert "torch" not in vars(torch_export)  # torch is imported lazily, inside functions


@pytest.mark.parametrize(
    ("shapes", "names", "axes"),
    [
        (None, ["x"], {}),
        ({"x": {0: "batch"}}, ["x"], {"x": {0: "batch"}}),
        (({0: "batch", 2: "seq"},), ["x"], {"x": {0: "batch", 2: "seq"}}),
        (({0: "batch"}, None), ["x", "mask"], {"x": {0: "batch"}}),
        ({"x": [None, "len"]}, ["x"], {"x": {1: "len"}}),
        # markers without a usable name (e.g. Dim.AUTO) get a generated one
        ({"x": {0: object()}}, ["x"], {"x": {0: "x_dim0"}}),
        # more specs than parameters: positional names
        (({0: "a"}, {0: "b"}), ["x"], {"x": {0: "a"}, "input_1": {0: "b"}}),
    ],
)
def test_dynamic_shapes_to_dynamic_axes(shapes: Any, names: list[str], axes: Any) -> None:
    assert olt.dynamic_axes_from_shapes(shapes, names) == axes
