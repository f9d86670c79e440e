"""QNN lowers Einsum only for a few equation structures (``einsum_op_builder.cc``:
MatMul-shaped, with the second operand transposed, a rank-3 second operand broadcast and
transposed, everything transposed around a rank-4 MatMul, or a broadcast product summed
over the last axis); any other equation stays on CPU ("Einsum unsupported equation").
XLNet's and Funnel's relative attention (``ibnd,jbnd->bnij``, ``bind,bjnd->bnij``, ...)
runs on CPU while CvT's ``bhlk,bhtk->bhlt`` runs on HTP. The profile says so with the
``einsum_equation`` constraint, which matches structure, not letters.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys
from dataclasses import replace

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint import profiles
from onnxlint.analyses.capability import NodeFacts, evaluate
from onnxlint.analyses.einsum_forms import forms_of, parse

from .conftest import check_real, qnn_cpu_nodes

#: equations of the real-world corpus and the forms they have (none: QNN refused it)
CORPUS = {
    "bind,bjnd->bnij": [],
    "binh,tnh->bnit": [],
    "bind,snd->bnis": [],
    "bnij,bjnd->bind": [],
    "ibh,hnd->ibnd": [],
    "ibnd,jbnd->bnij": [],
    "bnij,jbnd->ibnd": [],
    "ibnd,hnd->ibh": [],
    "bhlk,bhtk->bhlt": ["matmul_transpose_y"],
    "bhlt,bhtv->bhlv": ["matmul"],
}

#: one example per form, from the builder's own comments
EXAMPLES = {
    "ij,jk->ik": "matmul",
    "id,jd->ij": "matmul_transpose_y",
    "bchq,bkhc->bkhq": "matmul_transpose_all",
    "bhwc,hkc->bhwk": "matmul_broadcast_transpose_y",
    "bhwc,wkc->bhwk": "reduce_sum_mul_broadcast_x",
}


@pytest.mark.parametrize("equation", sorted(CORPUS))
def test_corpus_equations(equation: str) -> None:
    assert forms_of(equation) == CORPUS[equation]


@pytest.mark.parametrize("equation", sorted(EXAMPLES))
def test_each_form(equation: str) -> None:
    assert forms_of(equation) == [EXAMPLES[equation]]


def test_letters_do_not_matter_only_positions() -> None:
    assert forms_of("zyxw,zyvw->zyxv") == ["matmul_transpose_y"]  # bhlk,bhtk->bhlt
    assert forms_of("abcd,abde->abce") == ["matmul"]
    assert forms_of(" b h l k , b h t k -> b h l t ") == ["matmul_transpose_y"]
    assert forms_of("AQ,QB->AB") == ["matmul"]


@pytest.mark.parametrize(
    "equation",
    ["ij,jk", "i,ij->j", "ij,jk,kl->il", "...ij,...jk->...ik", "ij,jk->i", "ij,->ij", "é,ij->ij"],
)
def test_shapes_the_builder_does_not_parse(equation: str) -> None:
    assert parse(equation) is None or forms_of(equation) == []


def einsum_facts(equation: str) -> NodeFacts:
    return NodeFacts(
        op_type="Einsum",
        opset=17,
        input_dtypes=("float", "float"),
        output_dtypes=("float",),
        input_shapes=((1, 2, 4, 8), (1, 2, 8, 4)),
        output_shapes=((1, 2, 4, 4),),
        attributes={"equation": equation},
    )


@pytest.mark.parametrize(("profile", "equation", "claimed"), [
    ("qnn", "bhlk,bhtk->bhlt", True),
    ("qnn", "bind,bjnd->bnij", False),
    ("qnn", "bhwc,wkc->bhwk", True),
    ("qnn-cpu", "bind,bjnd->bnij", False),
    ("qnn-gpu", "bhlk,bhtk->bhlt", True),
    # the GPU backend refuses the broadcast-product-then-sum form
    ("qnn-gpu", "bhwc,wkc->bhwk", False),
])  # fmt: skip
def test_qnn_profiles_check_the_equation(profile: str, equation: str, claimed: bool) -> None:
    v = evaluate(profiles.load_profile(profile), einsum_facts(equation))
    assert v.claimed is claimed, v.reason
    if not claimed:
        assert v.kind == "constraint"
        assert f"equation={equation!r}" in v.reason
        assert v.provenance == "qnn-builder-checks"


def test_an_absent_equation_does_not_refuse_on_its_own() -> None:
    facts = replace(einsum_facts(""), attributes={})
    assert evaluate(profiles.load_profile("qnn"), facts).claimed


def einsum_model(equation: str, a: list[int], b: list[int], y: list[int]) -> onnx.ModelProto:
    """x1, x2 -> Einsum(``equation``) -> Relu -> y."""
    graph = helper.make_graph(
        [
            helper.make_node("Einsum", ["x1", "x2"], ["e"], "einsum", equation=equation),
            helper.make_node("Relu", ["e"], ["y"], "relu"),
        ],
        "einsum",
        [
            helper.make_tensor_value_info("x1", TensorProto.FLOAT, a),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, b),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: (equation, shapes) -> nodes QNN leaves to CPU
MODELS = {
    # XLNet: i=4 b=1 n=2 d=8, j=4
    "xlnet": (einsum_model("ibnd,jbnd->bnij", [4, 1, 2, 8], [4, 1, 2, 8], [1, 2, 4, 4]), {
        "main/einsum"
    }),
    # Funnel: b=1 i=4 n=2 d=8, j=4
    "funnel": (einsum_model("bind,bjnd->bnij", [1, 4, 2, 8], [1, 4, 2, 8], [1, 2, 4, 4]), {
        "main/einsum"
    }),
    # CvT's attention scores
    "cvt": (einsum_model("bhlk,bhtk->bhlt", [1, 2, 4, 8], [1, 2, 6, 8], [1, 2, 4, 6]), set()),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODELS))
def test_refused_equations_stay_on_cpu(name: str) -> None:
    model, cpu = MODELS[name]
    assert qnn_cpu_nodes(model) == cpu


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_einsum_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {name: m for name, (m, _) in MODELS.items()})
