"""Which models get a level-1 graph, and the copy of the model ORT is given.

A model past the node limit, one ORT would refuse or that could make it read files
onnxlint refused gets none (:func:`skip_reason`); one that level 1 cannot change is
not sent to ORT at all (:func:`inert_reason`); the copy ORT optimizes has every
attribute's default written out.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import onnx

from onnxlint.runtime.identity import ort_identity

#: past this many nodes (bodies included) the level-1 graph is not built during a static
#: lint: ORT's session creation grows faster than the lint itself (onnxruntime 1.32.0, a
#: basic-level session writing its graph: 0.7 s for a 96-layer BERT export of 10,393
#: nodes, 6.5 s for 30,937 nodes, 20 s for the 100k-node synthetic graph)
OPTIMIZED_MAX_NODES = 20_000


def count_nodes(g: onnx.GraphProto) -> int:
    """Nodes of ``g`` and of every body inside it."""
    from onnxlint.index import iter_graphs

    return sum(len(body.node) for body in iter_graphs(g))


def skip_reason(model: onnx.ModelProto, external_ok: bool = False) -> str | None:
    """Why the level-1 graph is not built for ``model`` during a static lint (None: it is).

    ``external_ok``: the model's external data may be read by ORT (every location checked
    to be a regular file inside the model's own folder: :func:`external_data_folder`)."""
    from onnxlint.tensors import data_mismatch, first_data_mismatch, is_external, iter_tensors

    # every tensor, not just initializers: ORT would read a Constant's, a function
    # body's or a training graph's external data as well; one walk for both questions
    # (without the graph paths: only a mismatch's is read, from a second walk)
    mismatch = False
    for tensor, _ in iter_tensors(model, paths=False):
        if is_external(tensor) and not external_ok:
            return (
                "the model keeps tensors in external data that ORT's level-1 worker is not "
                "given (no model folder, a location refused as OL010-OL012 say, or more "
                f"than {EXTERNAL_DATA_MAX_BYTES >> 20} MiB of it)"
            )
        mismatch = mismatch or data_mismatch(tensor) is not None
    first = first_data_mismatch(model) if mismatch else None
    if first is not None:
        # ORT refuses it, and older versions first allocate the declared size (OL109)
        _, where, declared, stored = first
        return f"a tensor in {where} declares {declared} elements but holds {stored} (OL109)"
    nodes = count_nodes(model.graph)
    if nodes > OPTIMIZED_MAX_NODES:
        # ORT's session creation grows faster than the lint itself (see the limit's
        # figures): past the limit it would dominate
        return (
            f"{nodes} nodes (limit {OPTIMIZED_MAX_NODES} for running ORT's level-1 "
            "optimizations during a static lint)"
        )
    return None


@functools.cache
def _level1_table() -> dict[str, Any]:
    """ORT's level-1 transformers and the ops none of them touches (``rules/ort_level1.json``)."""
    from onnxlint.data import load_json

    data: dict[str, Any] = load_json("ort_level1.json")
    return data


def _ort_limits() -> tuple[int, int] | None:
    """(highest ai.onnx opset, highest IR version) of the ORT the worker would run."""
    from onnxlint.ort_versions import table_release

    ort = ort_identity()
    if ort is None or not ort.get("version"):
        return None
    row = table_release(str(ort["version"]))
    if not row.exact:
        return None  # a release the table does not know: ask ORT itself
    return row.max_opset, row.max_ir


def inert_reason(model: onnx.ModelProto) -> str | None:
    """Why ORT's level-1 graph of ``model`` might differ from the model (None: it cannot).

    When nothing can differ, ORT's level-1 graph is the model itself and no worker is
    needed. Every test errs towards "might": only float32 tensors, only ops on the
    table's list (none of ORT's level-1 transformers names them, ONNX defines none by a
    function, ORT's CPU EP runs them in float32: the list is checked against the real
    worker op by op), no node whose inputs are all constant (constant folding), no two
    equal nodes (common-subexpression elimination) or initializers (constant sharing),
    no node nothing reads, no function (nor, by the list, a subgraph), an opset and IR version the
    installed ORT loads, and a model ``onnx.checker`` passes (else ORT may refuse it).
    """
    import onnx

    if model.functions:
        return "model-local functions"
    limits = _ort_limits()
    if limits is None:
        return "the installed ORT's limits are not known"
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    if set(opsets) != {"ai.onnx"} or opsets["ai.onnx"] > limits[0] or model.ir_version > limits[1]:
        return "opsets or IR version beyond the plain ONNX domain the installed ORT loads"
    graph = model.graph
    float32 = onnx.TensorProto.FLOAT
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.type.WhichOneof("value") != "tensor_type" or vi.type.tensor_type.elem_type != float32:
            return f"{vi.name!r} is not a float32 tensor"
    constant = {t.name for t in graph.initializer}
    if any(t.data_type != float32 for t in graph.initializer):
        return "an initializer is not float32"
    used = {o.name for o in graph.output}
    for node in graph.node:
        used.update(node.input)
    ops = frozenset(_level1_table()["inert_ops"])
    seen_nodes: set[bytes] = set()
    for node in graph.node:
        op = node.op_type
        if node.domain not in ("", "ai.onnx") or op not in ops:
            return f"{op} is not on the list of ops ORT's level-1 optimizations leave alone"
        inputs = [i for i in node.input if i]
        if all(i in constant for i in inputs):
            return f"{op} reads only constants (constant folding)"
        if not any(o in used for o in node.output if o):
            return f"{op} has no consumer"
        key = onnx.NodeProto(
            op_type=op, domain=node.domain, input=node.input, attribute=node.attribute
        ).SerializeToString(deterministic=True)
        if key in seen_nodes:
            return f"two equal {op} nodes (common-subexpression elimination)"
        seen_nodes.add(key)
    for prev, node in zip(graph.node, graph.node[1:], strict=False):
        if not set(prev.output) & set(node.input):
            # ORT writes its graph in its own topological order; only a chain has one order
            return f"{node.op_type} does not read the node before it (the order is not unique)"
    seen_tensors: set[bytes] = set()
    for t in graph.initializer:
        copy = onnx.TensorProto()
        copy.CopyFrom(t)
        copy.ClearField("name")
        key = copy.SerializeToString(deterministic=True)
        if key in seen_tensors:
            return "two equal initializers (constant sharing)"
        seen_tensors.add(key)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # ORT may refuse what the checker refuses
        return f"onnx.checker refuses it: {str(exc).splitlines()[0][:200] if str(exc) else exc}"
    return None


def with_default_attributes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` with every attribute a node leaves out written with its schema's
    default, as ORT writes the graphs it has loaded."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    for node in out.graph.node:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        present = {a.name for a in node.attribute}
        for name, attr in sorted(schema.attributes.items()):
            default = attr.default_value
            if name in present or default.type == onnx.AttributeProto.UNDEFINED:
                continue
            added = node.attribute.add()
            added.CopyFrom(default)
            added.name = name
    return out


#: the most external data ORT's level-1 worker is given during a static lint (its files'
#: sizes together): the worker holds what it reads, and a model of several GB would make a
#: lint as large (the level-1 graph of such a model is not built; the exported one is used)
EXTERNAL_DATA_MAX_BYTES = 256 << 20


def external_data_folder(model: onnx.ModelProto, base_dir: Path | None) -> Path | None:
    """The folder ORT may read ``model``'s external data from: the model's own folder, when
    the model has external data, every location is a regular file inside it, long enough
    for its tensor (:func:`~onnxlint.modelfile.external.check_external_data` finds
    nothing), and the files hold at most ``EXTERNAL_DATA_MAX_BYTES`` together; None
    otherwise. Nothing is opened here, a stat at most; onnxlint itself never reads the
    data, ORT's worker does."""
    from onnxlint.modelfile.external import check_external_data, external_locations
    from onnxlint.tensors import has_external_data

    if base_dir is None or not has_external_data(model):
        return None
    if next(iter(check_external_data(model, base_dir)), None) is not None:
        return None
    total = 0
    for location in external_locations(model):
        try:
            total += (base_dir / location).stat().st_size
        except OSError:
            return None
    return base_dir if total <= EXTERNAL_DATA_MAX_BYTES else None
