"""Structure rules (OL1xx): is the graph well-formed before anything runs it?

OL101, the checker's verdict, is :mod:`onnxlint.rules.checker`.
"""

from __future__ import annotations

from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Location, Severity
from onnxlint.index import GraphRef, NodeRef
from onnxlint.rule import Rule, register
from onnxlint.tensors import data_mismatch

#: a model every structure rule accepts (their ``example_good``)
VALID_MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""


@register
class DuplicateNodeName(Rule):
    """Two or more nodes in one graph share a name.

    What it does:
        Reports each node whose non-empty name is used by an earlier node of the same graph.

    Why it matters:
        ORT reports node placement, profiling and errors by node name; duplicates make
        those reports ambiguous, and some tools (and EP context caches) key on node names.

    Fix:
        Give every node a unique name, e.g. with ``onnx.compose`` prefixes or by
        re-exporting; onnxlint identifies unnamed nodes by graph path meanwhile.

    Execution providers:
        All.
    """

    code = "OL102"
    name = "duplicate-node-name"
    category = Category.STRUCTURE
    severity = Severity.WARNING
    messages = {"default": "node name '{name}' is also used by {first}"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] z) {
    y = Relu(x)
    z = Relu(y)
}
""".replace("y = Relu(x)", "[act] y = Relu(x)").replace("z = Relu(y)", "[act] z = Relu(y)")
    example_good = VALID_MODEL

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            if all(count == 1 for count in g.name_counts.values()):
                continue  # the index counted every name: none repeats here
            first: dict[str, NodeRef] = {}
            for n in g.nodes:
                if not n.name:
                    continue
                if n.name in first:
                    ctx.emit(
                        self.make(
                            n.location(),
                            name=n.name,
                            first=first[n.name].path,
                            related=(first[n.name].location(),),
                        )
                    )
                else:
                    first[n.name] = n


@register
class UnnamedNodes(Rule):
    """Nodes without names (reported once per graph).

    What it does:
        Counts the nodes of each graph that have an empty name and reports the first.

    Why it matters:
        ORT's placement log and assignment info show unnamed nodes as ``""``, so a fallback
        cannot be traced back to the model. onnxlint falls back to ``OpType_index`` paths.

    Fix:
        Name nodes at export (PyTorch's exporter does), or run a naming pass
        (``for i, n in enumerate(graph.node): n.name = n.name or f"{n.op_type}_{i}"``).

    Execution providers:
        All.
    """

    code = "OL103"
    name = "unnamed-nodes"
    category = Category.STRUCTURE
    severity = Severity.INFO
    messages = {
        "default": "{count} of {total} nodes in graph '{graph}' have no name (first: {first})"
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    [relu0] y = Relu(x)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            if g.name_counts.total() == len(g.nodes):
                continue  # the index counted a name for every node
            unnamed = [n for n in g.nodes if not n.name]
            if unnamed:
                ctx.emit(
                    self.make(
                        unnamed[0].location(),
                        count=len(unnamed),
                        total=len(g.nodes),
                        graph=g.path,
                        first=unnamed[0].path,
                    )
                )


@register
class UndefinedValue(Rule):
    """A node consumes a value that nothing produces.

    What it does:
        Reports node inputs (and graph outputs) that are neither produced by a node,
        nor a graph input, nor an initializer, in the graph or an enclosing scope.

    Why it matters:
        ORT refuses to load the model ("input ... of node ... is not a graph input,
        initializer, or output of a previous node").

    Fix:
        Restore the missing producer or initializer, or rename the input to the value
        that was meant; this often follows a bad manual graph edit.

    Execution providers:
        All.
    """

    code = "OL104"
    node_local = True  # its inputs, and which names its graphs define
    name = "undefined-value"
    category = Category.STRUCTURE
    severity = Severity.ERROR
    messages = {
        "input": "input {slot} '{value}' of this node is never produced",
        "output": "graph output '{value}' is never produced",
    }
    visits = ("*",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Add(x, bias)
}
"""
    example_good = VALID_MODEL

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        producers = node.graph.producers
        for i, name in enumerate(node.input_names):
            if name and name not in producers and not node.graph.resolves(name):
                ctx.emit(
                    self.make(
                        node.location(tensor=name, slot=f"input {i}"), "input", slot=i, value=name
                    )
                )

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            for out in g.outputs:
                if out and not g.resolves(out):
                    ctx.emit(self.make(Location(graph=g.path, tensor=out), "output", value=out))


@register
class UnusedInitializer(Rule):
    """An initializer that no node reads and that is not a graph output.

    What it does:
        Reports initializers of each graph that are never consumed, including by
        subgraphs that capture outer values.

    Why it matters:
        Dead weights inflate the file and the memory ORT allocates for the session.

    Fix:
        Remove them, e.g. with ``onnx.utils.Extractor`` or onnxscript's optimizer
        (``onnxscript.optimizer.remove_unused_nodes``).

    Execution providers:
        All.
    """

    code = "OL105"
    name = "unused-initializer"
    category = Category.STRUCTURE
    severity = Severity.WARNING
    messages = {"default": "initializer '{value}' is never used ({size} elements)"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[4] unused = {1.0, 2.0, 3.0, 4.0}> {
    y = Relu(x)
}
"""
    example_good = VALID_MODEL

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            for name, tensor in g.initializers.items():
                if name not in g.consumers and name not in g.output_set:
                    size = 1
                    for d in tensor.dims:
                        size *= d
                    ctx.emit(self.make(Location(graph=g.path, tensor=name), value=name, size=size))


@register
class InitializerAsInput(Rule):
    """An initializer is also listed as a graph input.

    What it does:
        Reports initializers whose name also appears in ``graph.input`` (allowed since IR 4).

    Why it matters:
        Such an initializer is only a default: callers may override it, so ORT will not
        constant-fold through it, and EPs that need constant weights (QNN, NNAPI, CoreML)
        may refuse the nodes that read it.

    Fix:
        Remove the name from ``graph.input`` (export with ``keep_initializers_as_inputs=False``).

    Execution providers:
        QNN, NNAPI, CoreML and other EPs needing constant weights; all for constant folding.
    """

    code = "OL106"
    name = "initializer-as-input"
    category = Category.STRUCTURE
    severity = Severity.WARNING
    messages = {
        "default": "initializer '{value}' is also a graph input, so it is not treated as a constant",
        "many": "{count} initializers are also graph inputs, so none of them is treated as a constant "
        "(first: {names})",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x, float[4] w) => (float[1,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    y = Mul(x, w)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    y = Mul(x, w)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        g = ctx.index.main
        names = [name for name in g.inputs if name in g.initializers]
        fix = Fix(
            title="remove the initializers from the graph inputs",
            command="re-export with keep_initializers_as_inputs=False",
        )
        if len(names) > 3:
            where = Location(graph=g.path, tensor=names[0])
            ctx.emit(
                self.make(where, "many", count=len(names), names=", ".join(names[:3]), fix=fix)
            )
            return
        for name in names:
            ctx.emit(self.make(Location(graph=g.path, tensor=name), value=name, fix=fix))


@register
class DeadNode(Rule):
    """A node whose outputs never reach a graph output.

    What it does:
        Walks back from each graph's outputs (and the values subgraphs capture) and reports
        nodes that contribute to none of them.

    Why it matters:
        Dead nodes cost load and optimization time, and an EP may still refuse them,
        adding a needless fallback or partition.

    Fix:
        Remove them (onnxscript's ``remove_unused_nodes``, or ``onnx.utils.extract_model``).

    Execution providers:
        All.
    """

    code = "OL107"
    model_reads = ()  # which node reads which value: the index's structure alone
    name = "dead-node"
    category = Category.STRUCTURE
    severity = Severity.WARNING
    messages = {"default": "output of this node never reaches a graph output"}
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
    unused = Sigmoid(x)
}
"""
    example_good = VALID_MODEL

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            for node in _dead_nodes(g):
                ctx.emit(self.make(node.location()))


def _dead_nodes(g: GraphRef) -> list[NodeRef]:
    """The nodes of ``g`` from which no graph output can be reached.

    A node needs its inputs and what its bodies read from outside them: the index's
    ``captured`` (those names, nested bodies included), not a walk of every body again
    for each graph above it."""
    producers = g.producers
    live: set[NodeRef] = set()  # records hash by identity
    stack = [n for out in g.outputs if (n := producers.get(out)) is not None]
    while stack:
        n = stack.pop()
        if n in live:
            continue
        live.add(n)
        for name in n.input_names:
            if name and (p := producers.get(name)) is not None and p not in live:
                stack.append(p)
        for sub in n.subgraphs.values():
            for name in sub.captured:
                if (p := producers.get(name)) is not None and p not in live:
                    stack.append(p)
    if len(live) == len(g.nodes):
        return []
    return [n for n in g.nodes if n not in live]


@register
class GraphCycle(Rule):
    """The graph has a cycle, or nodes are not in topological order.

    What it does:
        Runs Kahn's algorithm over each graph; reports a cycle (error) or, when the graph is
        acyclic but listed out of order, the first node that reads a value produced later
        (a warning: ONNX Runtime sorts the nodes itself and loads the model).

    Why it matters:
        ONNX requires acyclic graphs in topological order; ORT refuses cycles, and
        tools that stream nodes in file order (onnx's checker, other runtimes, converters)
        misread or reject out-of-order graphs. float16 conversions that keep float inputs
        write their input Casts at the end of the node list.

    Fix:
        A cycle is a corrupt or mis-edited model: re-export. For ordering alone, sort the
        nodes topologically (onnxscript's optimizer does).

    Execution providers:
        All.
    """

    code = "OL108"
    model_reads = ()  # which node reads which value: the index's structure alone
    name = "graph-cycle"
    category = Category.STRUCTURE
    severity = Severity.ERROR
    messages = {
        "cycle": "the graph has a cycle through {count} nodes, including this one",
        "order": "this node reads '{value}', which is produced later (nodes not topologically "
        "sorted; ONNX Runtime sorts them and loads the model, onnx's checker and other tools "
        "do not)",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] z) {
    z = Relu(y)
    y = Relu(x)
}
"""
    example_good = VALID_MODEL

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            if _in_file_order(g):
                continue  # every edge points forward: no cycle and nothing out of order
            position = {id(n): n.index for n in g.nodes}
            indeg = {id(n): 0 for n in g.nodes}
            succ: dict[int, list[NodeRef]] = {id(n): [] for n in g.nodes}
            for n in g.nodes:
                for name in set(n.node.input):
                    p = g.producers.get(name) if name else None
                    if p is not None and p is not n:
                        indeg[id(n)] += 1
                        succ[id(p)].append(n)
                    elif p is n:
                        indeg[id(n)] += 1  # self-loop
            ready = [n for n in g.nodes if indeg[id(n)] == 0]
            done = 0
            while ready:
                n = ready.pop()
                done += 1
                for s in succ[id(n)]:
                    indeg[id(s)] -= 1
                    if indeg[id(s)] == 0:
                        ready.append(s)
            if done < len(g.nodes):
                stuck = [n for n in g.nodes if indeg[id(n)] > 0]
                ctx.emit(self.make(stuck[0].location(), "cycle", count=len(stuck)))
                continue
            for n in g.nodes:
                late = [
                    name
                    for name in n.node.input
                    if name
                    and (p := g.producers.get(name)) is not None
                    and position[id(p)] > n.index
                ]
                if late:
                    ctx.emit(
                        self.make(
                            n.location(tensor=late[0]),
                            "order",
                            severity=Severity.WARNING,
                            value=late[0],
                        )
                    )
                    break


def _in_file_order(g: GraphRef) -> bool:
    """Whether every input of every node of ``g`` produced in ``g`` is produced by an
    earlier node (a self-loop is not): then the graph is acyclic and sorted, and Kahn's
    algorithm, which most graphs would otherwise pay for, can only agree."""
    producers = g.producers
    for n in g.nodes:
        here = n.index
        for name in n.input_names:
            p = producers.get(name) if name else None
            if p is not None and p.index >= here:
                return False
    return True


@register
class TensorDataSize(Rule):
    """A tensor whose stored data does not hold the number of elements its dims declare.

    What it does:
        Counts the elements each inline tensor stores (initializers, sparse values,
        Constant and other tensor attributes, in every graph, body and function) and
        compares them with the product of its dims. External data is not opened.

    Why it matters:
        ONNX Runtime refuses such a model at load, and some versions first try to
        allocate the declared size (a 2^31-element Constant with one value asks for
        16 GiB), so the session fails with an out-of-memory error instead of a
        clear message. The model is corrupt or was edited by hand.

    Fix:
        Re-export the model; when editing a tensor, change its dims and its data
        together (``onnx.numpy_helper.from_array`` builds both from one array).

    Execution providers:
        All.
    """

    code = "OL109"
    node_local = True  # a node's tensor attributes
    model_reads = ()  # the initializers
    visits = ("*",)
    status = "preview"
    since = "0.2.0"
    name = "tensor-data-size"
    category = Category.STRUCTURE
    severity = Severity.ERROR
    messages = {
        "initializer": (
            "initializer '{value}' declares {declared} elements but its data holds {stored}"
        ),
        "attribute": (
            "tensor attribute '{attribute}' declares {declared} elements but its data holds {stored}"
        ),
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[4] w = {1.0, 2.0}> {
    y = Add(x, w)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    y = Add(x, w)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        for g in ctx.index.graphs:
            for name, tensor in g.initializers.items():
                mismatch = data_mismatch(tensor)
                if mismatch is not None:
                    declared, stored = mismatch
                    ctx.emit(
                        self.make(
                            Location(graph=g.path, tensor=name),
                            "initializer",
                            value=name,
                            declared=declared,
                            stored=stored,
                        )
                    )

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        for attr in node.node.attribute:
            tensors = [attr.t] if attr.HasField("t") else []
            tensors += list(attr.tensors)
            for sp in [attr.sparse_tensor] if attr.HasField("sparse_tensor") else []:
                tensors.append(sp.values)
            for tensor in tensors:
                mismatch = data_mismatch(tensor)
                if mismatch is not None:
                    declared, stored = mismatch
                    ctx.emit(
                        self.make(
                            node.location(),
                            "attribute",
                            attribute=attr.name,
                            declared=declared,
                            stored=stored,
                        )
                    )
                    break
