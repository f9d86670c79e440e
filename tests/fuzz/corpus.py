"""Seed models and protobuf-level mutations for the fuzz harness.

Seeds are small valid models that between them hold every structure the linter walks:
subgraphs (If, Loop, Scan), model-local functions, initializers, Constant attributes,
external-data references, value infos, sequence types, metadata. Mutations work on
``ModelProto`` fields (wrong types, negative and huge dims, dangling references, cycles,
self-referencing subgraphs and functions, missing opset imports, ...) and on the
serialized bytes (flips, cuts, splices, invalid UTF-8 in string fields).

Shared by the hypothesis tests and the atheris entry point (``atheris_fuzz.py``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import onnx
from onnx import AttributeProto, TensorProto, helper

REPO = Path(__file__).resolve().parents[2]

_TEXT_SEEDS = {
    "relu": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    [relu0] y = Relu(x)
}
""",
    "init-const": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}, int64[2] shape = {-1, 4}> {
    [c] k = Constant <value = float[1] {0.5}> ()
    [m] a = Mul(x, w)
    [r] b = Reshape(a, shape)
    [s] y = Add(b, k)
}
""",
    "if-loop": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x, bool c, int64 n) => (float[4] y, float[4] z) {
    [if0] y = If(c) <
        then_branch = t () => (float[4] a) { [t0] a = Relu(x) },
        else_branch = e () => (float[4] b) { [e0] b = Neg(x) }
    >
    [loop0] z = Loop(n, c, x) <
        body = lb (int64 i, bool cond, float[4] acc) => (bool co, float[4] out) {
            [l0] co = Identity(cond)
            [l1] out = Add(acc, x)
        }
    >
}
""",
    "function": """\
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[2] x) => (float[2] y) {
    [call] y = local.Double(x)
}
<domain: "local", opset_import: ["" : 17]>
Double (a) => (b) {
    b = Add(a, a)
}
""",
    "sequence": """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
    [seq] s = SequenceConstruct(x, x)
    [at] y = SequenceAt(s, zero)
    [z] zero = Constant <value = int64 {0}> ()
}
""",
}


def _external_seed() -> onnx.ModelProto:
    model = onnx.parser.parse_model(_TEXT_SEEDS["init-const"])
    w = model.graph.initializer[0]
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = key, value
    helper.set_model_props(model, {"author": "fuzz", "onnxlint:ignore": "OL103"})
    return model


def _scan_seed() -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_in"], ["s_out"], name="acc")],
        "scan_body",
        [
            helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2])],
    )
    node = helper.make_node(
        "Scan", ["init", "xs"], ["final"], name="scan0", body=body, num_scan_inputs=1
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("init", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("xs", TensorProto.FLOAT, ["T", 2]),
        ],
        [helper.make_tensor_value_info("final", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@cache
def seeds() -> tuple[tuple[str, bytes], ...]:
    """(name, serialized model) for every seed; built once per process."""
    out = [
        (name, onnx.parser.parse_model(t).SerializeToString()) for name, t in _TEXT_SEEDS.items()
    ]
    out.append(("external", _external_seed().SerializeToString()))
    out.append(("scan", _scan_seed().SerializeToString()))
    demo = REPO / "examples" / "demo.onnx"
    if demo.is_file():
        out.append(("demo", demo.read_bytes()))
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    for name in ("light_bvlc_alexnet.onnx", "light_squeezenet.onnx"):
        if (light / name).is_file():
            out.append((name, (light / name).read_bytes()))
    return tuple(out)


# -- field-level mutations ----------------------------------------------------------------
def _graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    out, stack = [], [model.graph]
    while stack:
        g = stack.pop()
        out.append(g)
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH or a.HasField("g"):
                    stack.append(a.g)
                stack.extend(a.graphs)
    return out


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes = [n for g in _graphs(model) for n in g.node]
    return nodes + [n for f in model.functions for n in f.node]


def _value_infos(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    return [v for g in _graphs(model) for v in (*g.input, *g.output, *g.value_info)]


def _tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    out = [t for g in _graphs(model) for t in g.initializer]
    out += [a.t for n in _nodes(model) for a in n.attribute if a.HasField("t")]
    return out


HUGE = [2**62, 2**63 - 1, 10**9, 2**31, 2**32 + 1]
NEGATIVE = [-1, -2, -(2**62), -(2**63)]
STRANGE_STRINGS = [
    "",
    "\x00",
    "a" * 5000,
    "../../etc/passwd",
    "/dev/zero",
    "main/x:body",
    "é∂ƒ",
    " ",
]


def _dims(rng: random.Random, m: onnx.ModelProto) -> None:
    vis = [v for v in _value_infos(m) if v.type.HasField("tensor_type")]
    if not vis:
        return
    shape = rng.choice(vis).type.tensor_type.shape
    if not shape.dim:
        shape.dim.add()
    d = rng.choice(shape.dim)
    choice = rng.randrange(3)
    if choice == 0:
        d.dim_value = rng.choice(HUGE)
    elif choice == 1:
        d.dim_value = rng.choice(NEGATIVE)
    else:
        d.dim_param = rng.choice(STRANGE_STRINGS)


def _tensor_dims(rng: random.Random, m: onnx.ModelProto) -> None:
    tensors = _tensors(m)
    if not tensors:
        return
    t = rng.choice(tensors)
    t.dims[:] = [rng.choice(HUGE + NEGATIVE + [0, 1]) for _ in range(rng.randrange(0, 4))]


def _tensor_type(rng: random.Random, m: onnx.ModelProto) -> None:
    tensors = _tensors(m)
    if tensors:
        t = rng.choice(tensors)
        t.data_type = rng.choice([0, 8, 16, 23, 99, 2**31 - 1, -1])
        if rng.random() < 0.5:
            t.raw_data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))


def _elem_type(rng: random.Random, m: onnx.ModelProto) -> None:
    vis = _value_infos(m)
    if vis:
        v = rng.choice(vis)
        choice = rng.randrange(4)
        if choice == 0:
            v.type.tensor_type.elem_type = rng.choice([0, 99, -3, 2**31 - 1])
        elif choice == 1:
            v.type.sequence_type.elem_type.sequence_type.elem_type.tensor_type.elem_type = 1
        elif choice == 2:
            v.type.map_type.key_type = rng.choice([0, 1, 7, 99])
        else:
            v.ClearField("type")


def _dangling(rng: random.Random, m: onnx.ModelProto) -> None:
    nodes = [n for n in _nodes(m) if n.input]
    if nodes:
        n = rng.choice(nodes)
        n.input[rng.randrange(len(n.input))] = rng.choice(["ghost", "", *STRANGE_STRINGS])
    elif m.graph.output:
        m.graph.output[0].name = "ghost_output"


def _cycle(rng: random.Random, m: onnx.ModelProto) -> None:
    graph = rng.choice(_graphs(m))
    nodes = list(graph.node)
    if not nodes:
        return
    i = rng.randrange(len(nodes))
    j = rng.randrange(i, len(nodes))  # same node (self-loop) or a later one
    if nodes[j].output:
        if nodes[i].input:
            nodes[i].input[0] = nodes[j].output[0]
        else:
            nodes[i].input.append(nodes[j].output[0])


def _self_reference(rng: random.Random, m: onnx.ModelProto) -> None:
    """A subgraph reads its own parent node's output, or holds a copy of the main graph."""
    owners = [n for g in _graphs(m) for n in g.node if any(a.HasField("g") for a in n.attribute)]
    if owners and rng.random() < 0.6:
        parent = rng.choice(owners)
        attr = next(a for a in parent.attribute if a.HasField("g"))
        if attr.g.node and parent.output:
            attr.g.node[0].input.append(parent.output[0])
        return
    node = m.graph.node.add(op_type="If", input=["c"], output=["self_if"], name="self_if")
    attr = node.attribute.add(name="then_branch", type=AttributeProto.GRAPH)
    copy = onnx.GraphProto()
    copy.CopyFrom(m.graph)
    attr.g.CopyFrom(copy)


def _recursive_function(rng: random.Random, m: onnx.ModelProto) -> None:
    """A model-local function that calls itself (or a pair calling each other)."""
    fn = m.functions.add(name="Rec", domain="local", input=["a"], output=["b"])
    fn.opset_import.add(domain="", version=17)
    fn.opset_import.add(domain="local", version=1)
    callee = "Rec"
    if rng.random() < 0.5:
        other = m.functions.add(name="Rec2", domain="local", input=["a"], output=["b"])
        other.opset_import.add(domain="local", version=1)
        other.node.add(op_type="Rec", domain="local", input=["a"], output=["b"])
        callee = "Rec2"
    fn.node.add(op_type=callee, domain="local", input=["a"], output=["b"])
    if not any(o.domain == "local" for o in m.opset_import):
        m.opset_import.add(domain="local", version=1)
    if m.graph.input and m.graph.output:
        m.graph.node.add(
            op_type="Rec",
            domain="local",
            input=[m.graph.input[0].name],
            output=[m.graph.output[0].name],
            name="calls_rec",
        )


def _attribute_type(rng: random.Random, m: onnx.ModelProto) -> None:
    attrs = [a for n in _nodes(m) for a in n.attribute]
    node = rng.choice(_nodes(m)) if _nodes(m) else None
    if attrs and rng.random() < 0.7:
        a = rng.choice(attrs)
        a.type = rng.choice(list(AttributeProto.AttributeType.values()))
        if rng.random() < 0.3:
            a.ClearField("g")
        if rng.random() < 0.3:
            a.name = rng.choice(STRANGE_STRINGS)
    elif node is not None:
        # a graph-typed attribute with no graph, or a ref_attr_name outside a function
        a = node.attribute.add(name=rng.choice(["then_branch", "body", "axis", "value"]))
        a.type = rng.choice([AttributeProto.GRAPH, AttributeProto.GRAPHS, AttributeProto.TENSOR])
        if rng.random() < 0.5:
            a.ref_attr_name = "missing"


def _opsets(rng: random.Random, m: onnx.ModelProto) -> None:
    choice = rng.randrange(4)
    if choice == 0:
        del m.opset_import[:]
    elif choice == 1 and m.opset_import:
        m.opset_import[0].version = rng.choice([0, -1, 1, 6, 26, 10**6, 2**62])
    elif choice == 2:
        m.opset_import.add(domain=rng.choice([*STRANGE_STRINGS, "com.microsoft"]), version=1)
        m.opset_import.add(domain="", version=rng.choice([1, 13, 99]))  # duplicate domain
    else:
        m.ir_version = rng.choice([0, -1, 1, 3, 13, 99, 2**62])


def _node_strings(rng: random.Random, m: onnx.ModelProto) -> None:
    nodes = _nodes(m)
    if nodes:
        n = rng.choice(nodes)
        field = rng.choice(["name", "op_type", "domain"])
        setattr(n, field, rng.choice([*STRANGE_STRINGS, "If", "Loop", "Constant", "Custom"]))
        if rng.random() < 0.3:
            n.input.extend([""] * rng.randrange(1, 50))
        if rng.random() < 0.3 and nodes:
            other = rng.choice(nodes)
            n.name = other.name  # duplicate names


def _external(rng: random.Random, m: onnx.ModelProto) -> None:
    tensors = _tensors(m)
    if not tensors:
        return
    t = rng.choice(tensors)
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for key in rng.sample(
        ["location", "offset", "length", "checksum", "bogus"], rng.randrange(0, 5)
    ):
        e = t.external_data.add()
        e.key = key
        e.value = rng.choice(
            ["weights.bin", "../up.bin", "/etc/passwd", "-5", "99999999999999999999", "x", ""]
        )


def _structure(rng: random.Random, m: onnx.ModelProto) -> None:
    choice = rng.randrange(5)
    if choice == 0:
        m.ClearField("graph")
    elif choice == 1:
        del m.graph.output[:]
    elif choice == 2 and m.graph.node:
        m.graph.node.append(m.graph.node[rng.randrange(len(m.graph.node))])  # duplicate outputs
    elif choice == 3:
        s = m.graph.sparse_initializer.add()
        s.dims[:] = [rng.choice(HUGE + NEGATIVE)]
        s.values.name = "sparse"
        s.values.data_type = 1
        s.indices.data_type = 7
        s.indices.int64_data[:] = [rng.choice(NEGATIVE + HUGE)]
    else:
        m.graph.node.reverse()  # out of topological order


FIELD_MUTATIONS: dict[str, Callable[[random.Random, onnx.ModelProto], None]] = {
    "dims": _dims,
    "tensor-dims": _tensor_dims,
    "tensor-type": _tensor_type,
    "elem-type": _elem_type,
    "dangling": _dangling,
    "cycle": _cycle,
    "self-reference": _self_reference,
    "recursive-function": _recursive_function,
    "attribute-type": _attribute_type,
    "opsets": _opsets,
    "node-strings": _node_strings,
    "external-data": _external,
    "structure": _structure,
}

_PLACEHOLDER = "\u2603UTF8\u2603"


def _invalid_utf8(rng: random.Random, m: onnx.ModelProto) -> bytes:
    """Serialize with a placeholder in a string field, then swap in invalid UTF-8 bytes."""
    nodes = _nodes(m)
    target = rng.choice(["node-name", "output", "graph-name", "domain"])
    if target == "node-name" and nodes:
        rng.choice(nodes).name = _PLACEHOLDER
    elif target == "output" and nodes and rng.choice(nodes).output:
        n = rng.choice([n for n in nodes if n.output] or nodes)
        if n.output:
            n.output[0] = _PLACEHOLDER
    elif target == "domain" and m.opset_import:
        m.opset_import[0].domain = _PLACEHOLDER
    else:
        m.graph.name = _PLACEHOLDER
    data = m.SerializeToString()
    token = _PLACEHOLDER.encode()
    bad = bytes([0xFF, 0xFE, 0xC0, 0x80]) + b"\xed\xa0\x80"[: len(token) - 4]
    return data.replace(token, bad.ljust(len(token), b"\x80"))


def mutate_fields(seed: bytes, choices: list[str], rng: random.Random, utf8: bool) -> bytes:
    model = onnx.ModelProto()
    model.ParseFromString(seed)
    for name in choices:
        try:
            FIELD_MUTATIONS[name](rng, model)
        except (ValueError, TypeError):
            continue  # protobuf refused the value (e.g. an out-of-range enum): skip it
    if utf8:
        return _invalid_utf8(rng, model)
    return model.SerializeToString()


# -- byte-level mutations -----------------------------------------------------------------
def mutate_bytes(seed: bytes, rng: random.Random, steps: int) -> bytes:
    data = bytearray(seed)
    for _ in range(steps):
        if not data:
            data.extend(rng.randbytes(rng.randrange(1, 16)))
            continue
        op = rng.randrange(6)
        pos = rng.randrange(len(data))
        if op == 0:
            data[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[pos] = rng.choice([0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x3A, 0x12])
        elif op == 2:
            del data[pos : pos + rng.randrange(1, 32)]
        elif op == 3:
            data[pos:pos] = rng.randbytes(rng.randrange(1, 16))
        elif op == 4:
            del data[pos:]  # truncate
        else:
            end = min(len(data), pos + rng.randrange(1, 64))
            data[pos:pos] = data[pos:end] * rng.randrange(1, 4)  # repeat a slice
    return bytes(data)


def examples(count: int, seed: int = 0) -> Iterator[tuple[str, bytes]]:
    """A deterministic stream of mutated inputs (for the subprocess spot check and atheris)."""
    rng = random.Random(seed)
    pool = seeds()
    names = sorted(FIELD_MUTATIONS)
    for i in range(count):
        name, base = rng.choice(pool)
        kind = i % 3
        if kind == 0:
            picks = [rng.choice(names) for _ in range(rng.randrange(1, 4))]
            yield (
                f"{i:04d}-{name}-{'+'.join(picks)}",
                mutate_fields(base, picks, rng, rng.random() < 0.1),
            )
        elif kind == 1:
            yield f"{i:04d}-{name}-bytes", mutate_bytes(base, rng, rng.randrange(1, 6))
        else:
            yield f"{i:04d}-random", rng.randbytes(rng.randrange(0, 512))
