"""Builders for hostile inputs and a CLI runner that checks the invariants every case shares.

Hostile models are written at the protobuf wire level where ``onnx.helper`` would
refuse or where building them as Python messages would itself recurse or allocate
(10,000-deep nesting, millions of nodes, invalid UTF-8).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]

#: a subprocess that blocks (e.g. on a FIFO it should never have opened) fails the test
CLI_TIMEOUT_S = 60

VALID_TEXT = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    [relu0] y = Relu(x)
}
"""


# -- wire format -------------------------------------------------------------------------
def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint((number << 3) | 2) + varint(len(payload)) + payload


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def model_bytes(graph: bytes, opset: int = 17, ir_version: int = 8) -> bytes:
    """ModelProto{ir_version=1, graph=7, opset_import=8{version=2}}."""
    return (
        field_varint(1, ir_version) + field_bytes(7, graph) + field_bytes(8, field_varint(2, opset))
    )


def relu_node(x: bytes = b"x", y: bytes = b"y") -> bytes:
    """NodeProto{input=1, output=2, op_type=4}."""
    return field_bytes(1, x) + field_bytes(2, y) + field_bytes(4, b"Relu")


def nested_if_model(depth: int) -> bytes:
    """A chain of If nodes, each then_branch holding the next; ``depth`` subgraph levels."""
    graph = field_bytes(2, b"g") + field_bytes(1, relu_node())
    for _ in range(depth):
        attr = field_bytes(1, b"then_branch") + field_varint(20, 5) + field_bytes(6, graph)
        node = field_bytes(1, b"c") + field_bytes(2, b"y") + field_bytes(4, b"If")
        graph = field_bytes(2, b"g") + field_bytes(1, node + field_bytes(5, attr))
    return model_bytes(graph)


def nested_if_text(depth: int) -> str:
    body = "{ y = Relu(x) }"
    for i in range(depth):
        body = (
            f"{{ y = If(c) <then_branch = t{i} () => (float y) {body}, "
            f"else_branch = e{i} () => (float y) {{ y = Relu(x) }}> }}"
        )
    return '<ir_version: 8, opset_import: ["" : 17]>\nmain (float x, bool c) => (float y) ' + body


def many_nodes_model(count: int, inside_subgraph: bool = False) -> bytes:
    """``count`` empty NodeProtos (2 bytes each on the wire, ~150 bytes each once decoded)."""
    nodes = field_bytes(1, b"") * count
    if not inside_subgraph:
        return model_bytes(field_bytes(2, b"g") + nodes)
    attr = field_bytes(1, b"then_branch") + field_varint(20, 5) + field_bytes(6, nodes)
    node = field_bytes(1, b"c") + field_bytes(2, b"y") + field_bytes(4, b"If")
    return model_bytes(field_bytes(2, b"g") + field_bytes(1, node + field_bytes(5, attr)))


def length_claim_model(claimed: int) -> bytes:
    """A graph field whose length prefix claims ``claimed`` bytes; the file ends long before."""
    return field_varint(1, 8) + varint((7 << 3) | 2) + varint(claimed) + field_bytes(1, relu_node())


def invalid_utf8_model() -> bytes:
    """A valid model whose node name is not UTF-8 (protobuf strings must be)."""
    model = onnx.parser.parse_model(VALID_TEXT)
    model.graph.node[0].name = "NAMEXXXX"
    return model.SerializeToString().replace(b"NAMEXXXX", b"\xff\xfe\xc0\x80bad!")


def huge_dims_model(dim: int, *, initializer_dims: bool = True) -> onnx.ModelProto:
    """Inputs, outputs and (optionally) an initializer claiming ``dim`` x ``dim`` elements."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, dim])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim, dim])
    inits = []
    if initializer_dims:
        inits.append(TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[dim, dim]))
        node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    else:
        node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def huge_transfer_model(dim: int) -> onnx.ModelProto:
    """A tensor of ``dim`` x ``dim`` floats crossing from an EP-friendly op (Relu) to one
    most EPs refuse (NonZero): the partition's transfer-cost estimate sees ``dim``^2 * 4."""
    return onnx.parser.parse_model(
        f"""\
<ir_version: 8, opset_import: ["" : 17]>
g (float[{dim},{dim}] x) => (int64[2,N] y, float[{dim},{dim}] z) {{
    [relu] a = Relu(x)
    [nonzero] y = NonZero(a)
    [neg] z = Neg(a)
}}
"""
    )


def cycle_model() -> onnx.ModelProto:
    return onnx.parser.parse_model(
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
    [a] t = Add(x, u)
    [b] u = Relu(t)
    [c] y = Relu(u)
}
"""
    )


def self_referencing_subgraph_model() -> onnx.ModelProto:
    """An If whose branch reads the If's own output from the enclosing scope."""
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["y"], ["t"], name="self_ref")],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"], name="plain")],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])],
    )
    node = helper.make_node("If", ["c"], ["y"], name="if0", then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def custom_domain_model(domain: str) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node("EvilOp", ["x"], ["y"], name="evil", domain=domain)
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)],
        ir_version=8,
    )
    helper.set_model_props(model, {"custom_op_library": f"./lib{domain}.so"})
    return model


def external_data_model(location: str, where: str = "initializer", length: int = 16) -> bytes:
    """A model with one tensor stored as external data at ``location``.

    ``where``: ``initializer`` (main graph), ``subgraph`` (initializer of an If branch)
    or ``constant`` (a Constant node's value attribute).
    """
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[length // 4])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [length // 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [length // 4])
    if where == "initializer":
        graph = helper.make_graph(
            [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g", [x], [y], [tensor]
        )
    elif where == "constant":
        graph = helper.make_graph(
            [
                helper.make_node("Constant", [], ["w"], name="const", value=tensor),
                helper.make_node("Add", ["x", "w"], ["y"], name="add"),
            ],
            "g",
            [x],
            [y],
        )
    else:
        branch = helper.make_graph(
            [helper.make_node("Add", ["x", "w"], ["t"], name="add")],
            "then",
            [],
            [helper.make_tensor_value_info("t", TensorProto.FLOAT, [length // 4])],
            [tensor],
        )
        other = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["e"], name="id")],
            "else",
            [],
            [helper.make_tensor_value_info("e", TensorProto.FLOAT, [length // 4])],
        )
        graph = helper.make_graph(
            [
                helper.make_node(
                    "If", ["c"], ["y"], name="if0", then_branch=branch, else_branch=other
                )
            ],
            "g",
            [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
            [y],
        )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


# -- snapshots: nothing the user owns is modified -----------------------------------------
@dataclass(frozen=True)
class Entry:
    kind: str
    size: int
    mtime_ns: int
    digest: str


def snapshot(folder: Path) -> dict[str, Entry]:
    """Every entry under ``folder`` (not following symlinks); only regular files are read."""
    out: dict[str, Entry] = {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            p = Path(root) / name
            st = p.lstat()
            digest = ""
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(p.read_bytes()).hexdigest() if st.st_size < 2**24 else ""
                kind = "file"
            elif stat.S_ISLNK(st.st_mode):
                kind, digest = "link", os.readlink(p)
            elif stat.S_ISFIFO(st.st_mode):
                kind = "fifo"
            else:
                kind = "dir" if stat.S_ISDIR(st.st_mode) else "other"
            mtime = st.st_mtime_ns if kind != "dir" else 0
            out[str(p.relative_to(folder))] = Entry(kind, st.st_size, mtime, digest)
    return out


# -- the CLI in a subprocess ------------------------------------------------------------
@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float

    @property
    def codes(self) -> list[str]:
        return [d["code"] for f in json.loads(self.stdout)["files"] for d in f["diagnostics"]]


#: address-space ceiling for CLI subprocesses (Python + onnx + onnxruntime map ~1 GB), so
#: a hostile input that makes a library allocate without bound fails here, not the machine
CLI_MEMORY_CAP = 4 * 2**30


def _cap_memory() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = CLI_MEMORY_CAP if hard == resource.RLIM_INFINITY else min(CLI_MEMORY_CAP, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_cli(*args: str | Path, cwd: Path | None = None, timeout: float = CLI_TIMEOUT_S) -> CliRun:
    """Run ``python -m onnxlint ... --format json`` with a timeout; measure time and peak RSS.

    Runs through a small wrapper that reports the child's own peak RSS, so that
    measurements do not mix with other children of the test process.
    """
    # cli.main, not the command's entry point: that one ends with os._exit (no teardown),
    # which would skip the line that reports the peak
    wrapper = (
        "import resource, sys\n"
        "sys.argv = ['onnxlint', *sys.argv[1:]]\n"
        "try:\n"
        "    from onnxlint.cli import main\n"
        "    code = main(sys.argv[1:])\n"
        "finally:\n"
        "    sys.stderr.write('\\n@@peak_rss_kb=%d\\n' % "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", wrapper, *map(str, args), "--format", "json", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=timeout,
        env=env,
        check=False,
        preexec_fn=_cap_memory,
    )
    seconds = time.perf_counter() - start
    # an uncaught exception prints its traceback after the marker line, so cut the line out
    found = _PEAK_RE.search(proc.stderr)
    peak = int(found.group(1)) / 1024 if found else 0.0
    stderr = _PEAK_RE.sub("", proc.stderr)
    return CliRun(proc.returncode, proc.stdout, stderr, seconds, peak)


_PEAK_RE = re.compile(r"\n@@peak_rss_kb=(\d+)\n")


def own_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
