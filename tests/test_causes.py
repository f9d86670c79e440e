"""Root causes and what-if predictions: findings sharing a cause are reported once, at the
cause, with the nodes they cost and the predicted outcome of the remedy."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import onnx
import pytest

from onnxlint import cli
from onnxlint.causes import group
from onnxlint.config import Config
from onnxlint.engine import lint

from .bert_like import bert_like
from .conftest import light_models


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bert") / "bert.onnx"
    onnx.save(bert_like(2), str(path))
    return path


def test_bert_for_qnn_shows_few_findings_led_by_the_dims(
    bert: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bert.parent)
    code = cli.main(["bert.onnx", "--ep", "qnn", "--isolated"])
    out = capsys.readouterr().out
    # the session loads (QNN runs the refused nodes on CPU): warnings, no error
    assert code == cli.EXIT_OK
    rows = [line for line in out.splitlines() if re.match(r"^OL\d{3}\s+(error|warning)", line)]
    assert 1 <= len(rows) <= 10, out
    top = out[out.index(rows[0]) : out.index(rows[1]) if len(rows) > 1 else None]
    top = " ".join(top.split())  # the message column wraps
    assert "dynamic dims batch, sequence" in top
    assert re.search(r"refuses (\d+) nodes", top)
    assert "what if: pinning batch=1, sequence=128" in top and "--ep qnn-htp" in top
    assert re.search(r"-> qnn-htp \d+/\d+ nodes in \d+ partition", top)
    assert "/bert/encoder/layer.0/" in out  # real names, not positional labels
    assert not re.search(r"main/[A-Za-z]+_\d+\b", out)
    assert "unk__" not in out
    assert out.splitlines()[1].lstrip().startswith("[exported] QNN:")  # the verdict leads
    # --show-nodes: every finding, one row each
    cli.main(["bert.onnx", "--ep", "qnn", "--isolated", "--show-nodes"])
    every = capsys.readouterr().out
    assert len([ln for ln in every.splitlines() if re.match(r"^OL\d{3}\s", ln)]) > 50


def test_the_causes_are_data(bert: Path) -> None:
    report = lint(bert, eps=["qnn"], config=Config())
    groups = group(report)
    top = groups[0]
    assert top.cause.kind == "dynamic-dims" and top.cause.subject == ("batch", "sequence")
    assert {w.tensor for w in top.cause.where} == {"input_ids", "attention_mask"}
    assert top.severity.label == "warning" and len(top.nodes) > 50  # a CPU fallback
    assert all(loc.node_name and loc.node_name.startswith("/") for loc in top.nodes)
    assert [len(g.nodes) for g in groups] == sorted((len(g.nodes) for g in groups), reverse=True)
    w = top.what_if
    assert w is not None and w.dims == {"batch": 1, "sequence": 128}
    assert w.after[0] > w.before[0]  # pinning the dims moves nodes onto QNN
    doc = json.loads(report.to_json())["files"][0]  # the CLI's JSON document, one file
    assert doc["causes"][0]["cause"]["subject"] == ["batch", "sequence"]
    assert doc["causes"][0]["what_if"]["after"]["nodes_on_ep"] == w.after[0]
    grouped = [d for d in doc["diagnostics"] if d["cause"]]
    assert grouped and len(doc["diagnostics"]) > len(doc["causes"])  # detail kept


def test_the_what_if_command_keeps_its_promise(bert: Path, tmp_path: Path) -> None:
    """Running the suggested fix-shapes command leaves none of the dims' errors."""
    report = lint(bert, eps=["qnn"], config=Config())
    w = group(report)[0].what_if
    assert w is not None
    fixed = tmp_path / "bert.static.onnx"
    argv = ["fix-shapes", str(bert), "-o", str(fixed)]
    argv += [a for k, v in w.dims.items() for a in ("--dim", f"{k}={v}")] + ["--ep", w.ep]
    assert cli.main(argv) in (0, 1)
    after = lint(fixed, eps=["qnn"], config=Config())
    assert not [d for d in after.errors if d.cause is not None]
    assert not [d for d in after.diagnostics if d.cause and d.cause.kind == "dynamic-dims"]


def test_what_if_can_be_turned_off(bert: Path) -> None:
    assert lint(bert, eps=["qnn"], config=Config(), what_if=False).what_ifs == []


def test_light_resnet50_fits_in_40_lines(capsys: pytest.CaptureFixture[str]) -> None:
    (resnet,) = [p for p in light_models() if p.stem == "light_resnet50"]
    for extra in ([], ["--ep", "qnn"]):
        cli.main([str(resnet), "--isolated", *extra])
        out = capsys.readouterr().out
        assert len(out.splitlines()) <= 40, out


def test_sarif_and_github_report_each_cause_once(bert: Path) -> None:
    import jsonschema

    from onnxlint.diagnostics import Severity
    from onnxlint.render import render

    report = lint(bert, eps=["qnn"], config=Config())
    doc = json.loads(
        render([report], "sarif", min_severity=Severity.INFO, sarif_root=str(bert.parent))
    )
    results = doc["runs"][0]["results"]
    assert len(results) <= 10
    top = results[0]
    assert (
        top["ruleId"] == "OL301" and top["properties"]["cause"]["cause"]["kind"] == "dynamic-dims"
    )
    assert len(top["relatedLocations"]) > 50
    assert top["relatedLocations"][0]["logicalLocations"][0]["name"].startswith("/bert/")
    schema = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.schema.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    assert [
        e.message for e in cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(doc)
    ] == []
    every = json.loads(render([report], "sarif", min_severity=Severity.INFO, show_nodes=True))
    assert len(every["runs"][0]["results"]) == len(report.at_or_above(Severity.INFO))
    annotations = render([report], "github", min_severity=Severity.INFO).splitlines()
    assert (
        # a warning: QNN runs the refused nodes on CPU (its profile's refusal_consequence)
        annotations[0].startswith("::warning ") and "dynamic dims batch, sequence" in annotations[0]
    )
    assert len(annotations) <= 10


def test_a_large_model_gets_no_what_if_run(bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxlint import what_if

    monkeypatch.setattr(what_if, "MAX_NODES", 10)
    (w,) = lint(bert, eps=["qnn"], config=Config()).what_ifs
    assert w.error and "more than 10 nodes" in w.error and w.after == w.before
    assert "not predicted (the model has more than 10 nodes" in w.describe()


def test_a_what_if_pins_only_graph_input_dims() -> None:
    """The demo's dynamic-dims cause also names a NonZero count ('nnz'): only 'batch',
    a graph input's dim, can be pinned, so the suggested command pins that alone."""
    demo = Path(__file__).resolve().parent.parent / "examples" / "demo.onnx"
    report = lint(demo, eps=["qnn"], config=Config())
    (w,) = [g.what_if for g in group(report) if g.what_if is not None]
    assert w.dims == {"batch": 1}
    assert "--dim batch=1" in w.command and "nnz" not in w.command


def _chain_after(op: str, opsets: str, length: int = 10) -> onnx.ModelProto:
    lines = [
        f"<ir_version: 8, opset_import: [{opsets}]>",
        "g (float[1,4] x) => (float[1,4] y) {",
        f"    [origin] t0 = {op}(x)",
    ]
    lines += [f"    [r{i}] t{i + 1} = Relu(t{i})" for i in range(length)]
    lines += [f"    [out] y = Identity(t{length})", "}"]
    return onnx.parser.parse_model("\n".join(lines) + "\n")


def test_an_unknown_operator_is_one_error_and_the_cause_of_what_follows() -> None:
    """One unknown operator used to give OL101, OL204, OL303 and OL508 (plus one OL504 per
    downstream node): now OL204 alone says what is wrong, and the downstream refusals
    name it as their root cause."""
    report = lint(_chain_after("FooBar", '"" : 17'), eps=["qnn"], config=Config())
    codes = [d.code for d in report.diagnostics]
    assert codes.count("OL204") == 1
    assert not {"OL101", "OL303", "OL508"} & set(codes), codes
    refusals = [d for d in report.diagnostics if d.code == "OL504"]
    assert len(refusals) == 11
    assert {d.cause.kind for d in refusals if d.cause} == {"unknown-shape"}
    (cause,) = group(report)
    assert cause.where.node_name == "origin" and len(cause.nodes) == 11
    assert "origin" in cause.message() and cause.fix() is not None


def test_the_checker_still_reports_what_else_is_wrong_beside_an_unknown_operator() -> None:
    model = _chain_after("FooBar", '"" : 17', length=1)
    model.graph.node[1].attribute.append(onnx.helper.make_attribute("alpha", 0.5))
    codes = [d.code for d in lint(model, config=Config()).diagnostics]
    assert "OL204" in codes and "OL101" in codes


def test_a_custom_operator_is_the_cause_where_shapes_are_lost() -> None:
    report = lint(
        _chain_after("custom.Mystery", '"" : 17, "custom" : 1'), eps=["qnn"], config=Config()
    )
    (origin,) = [d for d in report.diagnostics if d.code == "OL303"]
    assert origin.location.node_name == "origin"
    causes = [g for g in group(report) if g.cause.kind == "unknown-shape"]
    assert len(causes) == 1 and causes[0].cause.subject == ("origin",)


def test_a_known_shape_gives_no_unknown_shape_cause() -> None:
    report = lint(_chain_after("Sigmoid", '"" : 17'), eps=["qnn"], config=Config())
    assert not [d for d in report.diagnostics if d.cause and d.cause.kind == "unknown-shape"]


def test_dims_named_inside_the_graph_give_way_to_the_input_dims_they_trace_to() -> None:
    """ORT's symbolic inference names the dims it computes (``Addoutput_dim_0``, or an
    expression of others); a refusal for them names the graph input dims they trace to."""
    from onnxlint.analyses.capability import NodeFacts, Verdict
    from onnxlint.rules.refusal_causes import _cause

    facts = NodeFacts(
        "MatMul", input_shapes=(("Addoutput_dim_0", 4), (4, 4)), output_shapes=(("floor(a/4)", 4),)
    )
    v = Verdict("QNNExecutionProvider", "qnn-htp", False, "constraint", "dynamic shape")
    v = replace(v, constraint="static_shape")
    declared = {"batch"}
    traced = _cause(facts, v, lambda: {"batch", "Addoutput_dim_0"}, None, lambda: declared)
    assert traced.kind == "dynamic-dims" and traced.subject == ("batch",)
    # nothing traces to an input: the dims stay as named (the title counts them)
    alone = _cause(facts, v, lambda: {"floor(a/4)"}, None, lambda: declared)
    assert alone.subject == ("Addoutput_dim_0", "floor(a/4)")
    # no input declares a named dim: as before
    plain = _cause(facts, v, lambda: set(), None, lambda: set())
    assert plain.subject == ("Addoutput_dim_0", "floor(a/4)")


def test_a_dynamic_dims_title_names_the_input_dims_and_counts_the_others() -> None:
    from onnxlint.causes import CauseGroup
    from onnxlint.diagnostics import Category, Cause, Diagnostic, Location, Severity

    inside = ("floor(P_1_o0__d1/4)", "P_1_o0__d0", "Addoutput_dim_0", "floor(P_1_o0__d2/4)")
    cause = Cause("dynamic-dims", ("batch", *inside), (Location(tensor="pixel_values"),))
    member = Diagnostic(
        "OL301", "x", Category.SHAPES, Severity.WARNING, "m", Location(tensor="pixel_values")
    )
    many = CauseGroup("qnn-htp", cause, [member], declared=frozenset({"batch"}))
    assert many.title().startswith(
        "dynamic dims batch and 4 dims named inside the graph (inputs pixel_values)"
    )
    few = CauseGroup(
        "qnn-htp", replace(cause, subject=("batch", *inside[:2])), [member], frozenset({"batch"})
    )
    assert few.title().startswith(f"dynamic dims batch, {inside[0]}, {inside[1]} (inputs")
    unknown = CauseGroup("qnn-htp", replace(cause, subject=inside), [member])
    assert unknown.title().startswith(
        f"dynamic dims {', '.join(inside[:3])} and 1 dim named inside the graph"
    )


def _constraint_kinds() -> set[str]:
    """The constraint kinds the shipped profiles use."""
    from onnxlint import profiles

    kinds: set[str] = set()
    for prof in profiles.all_profiles():
        kinds |= {c.kind for c in prof.global_constraints}
        for op in prof.ops.values():
            kinds |= {c.kind for c in op.constraints}
            for r in op.ranges or ():
                kinds |= {c.kind for c in r.constraints}
    return kinds


def test_every_constraint_kind_a_profile_uses_is_said_in_words() -> None:
    from onnxlint.causes import CONSTRAINT_WORDS

    kinds = _constraint_kinds()
    assert "constant_input" in kinds and "max_rank" in kinds
    assert kinds <= set(CONSTRAINT_WORDS)


def test_a_constraint_cause_is_titled_in_words_and_a_what_if_counts_each_cause_once() -> None:
    """A Pad whose pads are computed: QNN HTP needs them constant. Its cause's title says
    so in words (the JSON keeps the constraint's kind); a what-if listing it does not repeat
    the count the title already gives."""
    from onnxlint.causes import WhatIf

    model = onnx.parser.parse_model("""\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x, int64[8] p) => (float[1,4] y) {
    a = Pad(x, p)
    b = Pad(a, p)
    y = Relu(b)
}
""")
    report = lint(model, eps=["qnn"])
    groups = [g for g in group(report, min_members=1) if g.cause.kind == "constraint"]
    assert [g.cause.subject for g in groups] == [("Pad", "constant_input")]
    title = groups[0].title()
    assert title == "qnn-htp refuses 2 nodes (Pad): an input it needs constant is computed"
    w = WhatIf("qnn-htp", {"N": 1}, "cmd", (0, 3, 0), (1, 3, 1), [(title, 2)])
    assert w.describe().endswith(f"; still off qnn-htp: {title}")


def test_a_one_node_cause_is_titled_in_the_singular() -> None:
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])
    graph = onnx.helper.make_graph(
        [
            onnx.helper.make_node("Relu", ["x"], ["r"], name="relu"),
            onnx.helper.make_node("Dropout", ["r"], ["y"], name="drop"),
        ],
        "g",
        [x],
        [y],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    model.ir_version = 8
    report = lint(model, eps=["qnn"], config=Config())
    titles = [g.title() for g in group(report, min_members=1)]
    assert any(t.endswith("Dropout: 1 node falls back") for t in titles), titles
    assert not any("1 node fall back" in t for t in titles), titles
