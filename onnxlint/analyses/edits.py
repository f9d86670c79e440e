"""What an edit of one node leaves of the previous lint's analyses.

The language server lints an edited ``.onnxtxt`` whose model differs from the previous
one in one node (``modelfile.textedit``). These functions decide, for the analyses whose
answers can be shown not to change, whether the previous answer holds for the edited
model, and return it (moved onto the new model's index where it names nodes); None
whenever that cannot be shown, and the lint computes the analysis as usual.
``tests/lsp/test_shapes_carry.py`` compares every answer with a fresh lint's.
"""

from __future__ import annotations

import onnx

from onnxlint.analyses import shapes as shapes_module
from onnxlint.analyses.checked import CheckerVerdict, node_passes
from onnxlint.analyses.dataflow import _RANDOM_OPS, Dataflow, moved_facts
from onnxlint.analyses.shapes import Shapes
from onnxlint.analyses.symbolic import passes_input_type
from onnxlint.index import (
    DEFAULT_DOMAIN,
    GraphRef,
    ModelIndex,
    norm_domain,
    resolve_schema,
    stored_graphs,
)
from onnxlint.tensors import node_has_external_data


def checker_after_node_edit(
    prior: CheckerVerdict,
    model: onnx.ModelProto,
    was: onnx.NodeProto,
    now: onnx.NodeProto,
    in_main_graph: bool,
    names_only: bool,
) -> CheckerVerdict | None:
    """The checker's verdict on ``model``, which is the model ``prior`` judged with one
    node, ``was``, replaced by ``now``, when it is provably "accepted"; None otherwise.

    Only a model the checker accepted is taken over. The checker reads no node name or
    doc string, so an edit of those (``names_only``) keeps the verdict. Otherwise the
    model's checks that read other nodes (topological order, single assignment, the
    graph's values) read the same names when the node reads and writes the same values;
    what is left is the node's own check (its schema, attributes and their types), run
    with ``onnx.checker.check_node`` for a main-graph node of a standard operator that
    holds no body. A node it refuses is judged with the whole model again, so that the
    finding is worded as the checker words it."""
    if prior.failure is not None:
        return None
    if names_only:
        return CheckerVerdict.accepted()
    if not in_main_graph or not _same_values(was, now):
        return None
    if next(stored_graphs(now.attribute), None) is not None or node_has_external_data(now):
        return None  # a body is checked with its graph; an external tensor's file is stat'ed
    domain = norm_domain(now.domain)
    opset = next((i.version for i in model.opset_import if norm_domain(i.domain) == domain), None)
    if domain not in (DEFAULT_DOMAIN, "ai.onnx.ml") or opset is None:
        return None  # another domain's node (or a function's call) is not the checker's
    if resolve_schema(now.op_type, domain, opset) is None:
        return None  # an unknown operator is set aside in the checker's copy
    return CheckerVerdict.accepted() if node_passes(now, model) else None


def shapes_after_node_edit(
    prior: Shapes,
    model: onnx.ModelProto,
    was: onnx.NodeProto,
    now: onnx.NodeProto,
    in_main_graph: bool,
    names_only: bool,
    main: GraphRef | None = None,
) -> Shapes | None:
    """The Shapes analysis of ``model``, which is the model ``prior`` analysed with one
    node, ``was``, replaced by ``now`` (``in_main_graph``: a node of the main graph;
    ``names_only``: :func:`~onnxlint.index.differs_in_names_only` of the two), when it is
    provably ``prior``'s; None otherwise. ``main``: the main graph of ``model``'s index,
    when the caller has it (its nodes' outputs are read from it, not from protobuf).

    It is shown when inference read nothing that changed: the nodes differ in their name
    or doc string only (ONNX's and ORT's inference read names for their messages only: the
    symbolic cache's key relies on that too), or, with ORT's symbolic answer not used, they
    are the same operator on the same inputs and outputs in the main graph, an operator
    whose values ONNX never propagates, none of whose inputs carries values inference could
    read but initializers (which it is given), and the old and the new node, inferred alone
    from the types the whole pass gave their inputs, give the types the whole pass gave the
    old node's outputs: everything downstream then reads what it read before. A result
    with inference errors (their messages name nodes) is never taken over. Where ORT's
    symbolic answer filled gaps, the operator must also be one whose output ORT's tool
    types as ONNX's single-node inference does and ONNX types as its first input whatever
    the attributes (``rules/ort_symbolic.json``), with that input's rank known: ORT's run
    then gives the node, old or new, its input's type, and names any dim it invents by the
    node's position. The answer hands
    no inferred copy out (``Shapes.take_inferred``): it is for a lint whose EP assignment
    does not run.
    """
    types = prior.types_read()
    if prior.errors or prior.symbolic_unavailable or types is None:
        return None
    if not names_only and (
        not in_main_graph
        or not _infers_alike(model, types, was, now, main, prior.declared_types())
        or (prior.used_symbolic and not _symbolic_infers_alike(model, types, now))
    ):
        return None
    same, sized = _size_after_edit(prior.sized, was, now)
    if not same:
        return None
    taken = Shapes.taken_over(prior, types)
    taken.sized = sized
    return taken


#: an edited model whose size, estimated from the node's bytes, lands this close to the
#: symbolic inference's limit is analysed afresh: the length prefixes of the node and of
#: the graph around it change by a few bytes each edit, which the estimate leaves out
SIZE_SLACK = 1 << 20


def _size_after_edit(
    sized: int | None, was: onnx.NodeProto, now: onnx.NodeProto
) -> tuple[bool, int | None]:
    """Whether the edited model's size decides as ``sized`` did (the model's size before
    the edit, when it decided whether ORT's symbolic inference ran; None: it was not
    asked), and that size. Not when it lands within :data:`SIZE_SLACK` of the limit or
    across it."""
    if sized is None:
        return True, None
    limit = shapes_module.SYMBOLIC_MAX_BYTES
    after = sized + now.ByteSize() - was.ByteSize()
    if abs(after - limit) <= SIZE_SLACK or (after > limit) != (sized > limit):
        return False, None
    return True, after


def dataflow_after_node_edit(
    prior: Dataflow, index: ModelIndex, shapes: Shapes, edited: int, names_only: bool
) -> Dataflow | None:
    """The Dataflow analysis of the model indexed by ``index``, which is ``prior``'s model
    with the node at ``index.nodes[edited]`` replaced, when it is provably ``prior``'s (its
    nodes moved to ``index``'s records at the same positions); None otherwise.

    ``shapes``: the edited model's Shapes analysis, which must hold the types ``prior``
    read (taken over with :func:`shapes_after_node_edit`). Shown when the nodes differ in
    their names only (``names_only``: nothing the walk reads changed), or when the new node
    is of the main graph, reads the same values, holds no body, calls no function and
    draws no random values, and its outputs' facts, computed from the facts its inputs
    had, are the ones it had before (so the walk downstream reads what it read before).
    """
    old_nodes, new_nodes = prior.index.nodes, index.nodes
    if len(old_nodes) != len(new_nodes) or not 0 <= edited < len(new_nodes):
        return None
    if any(a.op_type != b.op_type for a, b in zip(old_nodes, new_nodes, strict=True)):
        return None
    was, now = old_nodes[edited], new_nodes[edited]
    moved = {id(a): b for a, b in zip(old_nodes, new_nodes, strict=True)}
    if not names_only:
        if (
            now.graph.parent is not None
            or now.graph.is_function
            or now.subgraphs
            or was.subgraphs
            or now.input_names != was.input_names
            or now.outputs != was.outputs
            or now.op_type in _RANDOM_OPS
            or (now.node.domain, now.node.op_type) in prior.index.functions
        ):
            return None
        inputs = {name: prior.facts(name) for name in was.input_names if name}
        got = prior.node_facts(now, inputs)
        for name in was.outputs:
            if not name:
                continue
            if name not in got or moved_facts(prior.facts(name), moved) != moved_facts(
                got[name], moved
            ):
                return None
    return Dataflow.taken_over(prior, index, shapes, moved)


def _same_values(was: onnx.NodeProto, now: onnx.NodeProto) -> bool:
    """Whether the two nodes are the same operator reading and writing the same values."""
    return (now.op_type, now.domain, list(now.input), list(now.output)) == (
        was.op_type,
        was.domain,
        list(was.input),
        list(was.output),
    )


def _infers_alike(
    model: onnx.ModelProto,
    inferred: onnx.ModelProto,
    was: onnx.NodeProto,
    now: onnx.NodeProto,
    main: GraphRef | None = None,
    declared: dict[str, onnx.TypeProto] | None = None,
) -> bool:
    """Whether ``now`` in place of ``was`` leaves every type of ``inferred`` (the whole
    inference of the model with ``was``) as it is (:func:`shapes_after_node_edit`);
    ``main``: the main graph of ``model``'s index, if known; ``declared``: each value's
    type in ``inferred`` (``Shapes.declared_types``), if known."""
    if not _same_values(was, now) or now.domain not in ("", "ai.onnx"):
        return False
    opset = next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)
    try:
        schema = onnx.defs.get_schema(now.op_type, opset or 1, "")
    except Exception:
        return False
    if schema.has_data_propagation_function or not schema.has_type_and_shape_inference_function:
        return False
    if declared is None:
        graph = inferred.graph
        declared = {v.name: v.type for v in (*graph.input, *graph.value_info, *graph.output)}
    weights = {t.name: t for t in model.graph.initializer}
    sparse = {t.values.name for t in model.graph.sparse_initializer}
    inputs = {name for name in now.input if name}
    # each input's producer in the main graph, the last of several as protobuf lists them
    if main is not None and main.proto is model.graph:
        producers = {o: ref.node for ref in main.nodes for o in ref.output_names if o in inputs}
    else:
        producers = {o: n for n in model.graph.node for o in n.output if o in inputs}
    data: dict[str, onnx.TensorProto] = {}
    types: dict[str, onnx.TypeProto] = {}
    for name in inputs:
        if name in sparse:
            return False
        if name in weights:
            data[name] = weights[name]
            types[name] = onnx.helper.make_tensor_type_proto(
                weights[name].data_type, list(weights[name].dims)
            )
            continue
        producer = producers.get(name)
        if producer is not None and not _carries_no_values(producer, opset):
            return False
        if name not in declared:
            return False
        types[name] = declared[name]
    if any(o and o not in declared for o in was.output):
        return False
    want = {o: declared[o].SerializeToString(deterministic=True) for o in was.output if o}
    for node in (was, now):
        try:
            got = onnx.shape_inference.infer_node_outputs(
                schema,
                node,
                types,
                input_data=data,
                opset_imports=list(model.opset_import),
                ir_version=model.ir_version,
            )
        except Exception:  # the whole pass would record an error (or differ): infer it
            return False
        if {o: t.SerializeToString(deterministic=True) for o, t in got.items() if o} != want:
            return False
    return True


def _symbolic_infers_alike(
    model: onnx.ModelProto, inferred: onnx.ModelProto, now: onnx.NodeProto
) -> bool:
    """Whether ORT's symbolic inference types ``now`` as it typed the node it replaces,
    which :func:`_infers_alike` showed is the same operator on the same values, alike to
    ONNX (:func:`shapes_after_node_edit`)."""
    if now.domain not in ("", "ai.onnx") or not now.input or not now.input[0]:
        return False
    opset = next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)
    try:
        since = onnx.defs.get_schema(now.op_type, opset or 1, "").since_version
    except Exception:
        return False
    if not passes_input_type(now.op_type, since):
        return False
    graph = inferred.graph
    first = now.input[0]
    # the rank must be known: an attribute checked against it (an axis) is then checked
    # alike in both runs, since ORT's types only name dims ONNX left unknown
    for vi in (*graph.input, *graph.value_info, *graph.output):
        if vi.name == first:
            return vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")
    return any(t.name == first for t in model.graph.initializer)


def _carries_no_values(node: onnx.NodeProto, opset: int | None) -> bool:
    """Whether ONNX's inference attaches no values to this node's outputs (a standard
    operator that is not a constant and has no data propagation)."""
    if node.domain not in ("", "ai.onnx") or node.op_type in ("Constant", "ConstantOfShape"):
        return False
    try:
        return not onnx.defs.get_schema(node.op_type, opset or 1, "").has_data_propagation_function
    except Exception:
        return False
