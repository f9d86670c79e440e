"""The CLI's head start: an ORT worker started before onnx is imported, when it will be needed.

The front end passes what it was asked for as plain values; nothing here reads CLI
arguments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onnxlint.analyses.level1.cache import Level1Cache, hint_key
from onnxlint.runtime.identity import cache_enabled

#: the CLI reads and hashes a model this large at most to decide on prewarming a worker
PREWARM_MAX_BYTES = 64 * 2**20


def prewarm_for(
    paths: Sequence[str],
    eps: Sequence[str],
    *,
    jobs: int = 1,
    no_cache: bool = False,
    assume_dims: Sequence[str] = (),
) -> bool:
    """Start an ORT worker before the linter imports onnx, when a cold lint is likely.

    For ``onnxlint MODEL.onnx --ep <accelerator>`` (one file, one job) whose graph the
    cache does not hint at, a worker is started at once: it imports onnxruntime (about
    0.2 s) while this process imports onnx and the rules and loads the model, and the
    level-1 job sends it its request (:func:`onnxlint.runtime.processes.prewarm`). Anything
    unusual (folders, several files, EPs from a config file only, large files) gets no
    head start. ``assume_dims`` are ``NAME=VALUE`` as given to ``--assume-dim``. Never
    raises; returns whether a worker was started.
    """
    try:
        return _prewarm(list(paths), [str(e).lower() for e in eps], jobs, no_cache, assume_dims)
    except Exception:  # a head start is an optimization: the lint goes on without it
        return False


def _prewarm(
    paths: list[str], eps: list[str], jobs: int, no_cache: bool, assume_dims: Sequence[str]
) -> bool:
    if len(paths) != 1 or jobs > 1:
        return False
    if not likely_cold(paths, eps, no_cache=no_cache, assume_dims=assume_dims):
        return False
    from onnxlint.ort_versions import limits_preface
    from onnxlint.runtime.processes import prewarm

    # the same worker answers ORT's limits first when nothing has them yet (the opset
    # rules ask for them): one worker start for the lint, not two
    return prewarm(preface=limits_preface())


def likely_cold(
    paths: Sequence[str | Path],
    eps: Sequence[str],
    *,
    no_cache: bool = False,
    assume_dims: Sequence[str] = (),
    budget_bytes: int = PREWARM_MAX_BYTES,
) -> bool:
    """Whether linting ``paths`` with ``eps`` will likely start an ORT level-1 worker: an
    accelerator EP and a ``.onnx`` file whose graph the cache has no hint for (every
    file, with the cache off). Files are read and hashed smallest first, at most
    ``budget_bytes`` in all; past that (or with no onnxruntime) the answer is False,
    and a worker is started when a lint asks for one, as without the head start."""
    eps = [str(e).lower() for e in eps]
    if not eps or all(e in ("cpu", "cpuexecutionprovider") for e in eps):
        return False
    sized = []
    for item in paths:
        path = Path(item)
        if path.suffix.lower() != ".onnx" or not path.is_file():
            continue
        sized.append((path.stat().st_size, path))
    if no_cache or not cache_enabled():
        return bool(sized)
    dims: dict[str, int] = {}
    for item in assume_dims:
        name, _, value = str(item).partition("=")
        if value.strip().isdigit():
            dims[name.strip()] = int(value)
    cache = Level1Cache()
    for size, path in sorted(sized, key=lambda sp: sp[0]):
        budget_bytes -= size
        if budget_bytes < 0:
            return False
        hint = hint_key(hashlib.sha256(path.read_bytes()).hexdigest(), dims)
        if hint is None:
            return False  # no onnxruntime
        if not cache.has_hint(hint):
            return True
    return False


#: a file larger than this is scheduled by its size alone: its bytes dominate its lint
#: and reading it twice (here and in the lint) would cost more than a better guess buys
COST_SCAN_MAX_BYTES = 16 * 2**20


#: a node's share of a lint, in the bytes of folded weights that cost ORT as long (0.4 ms
#: against 6 ns a byte, on the onnx wheel's light models)
NODE_COST_BYTES = 64 * 1024


def estimated_cost(path: Path, worker: bool) -> int:
    """A guess at the work of linting ``path``, in bytes, for ordering the files of a
    ``-j N`` run: the file's size and, when the lint will ask ORT for a level-1 graph
    (``worker``), its main graph's nodes and the bytes ORT's constant folding writes out
    for ``ConstantOfShape`` nodes with a constant shape. A model whose weights are made at run time (the onnx
    wheel's ``light_vgg19``: 9 KB on disk, 0.5 GB folded) is among the longest lints
    although its file is among the smallest. Never raises: 0 for a file that cannot be
    read, the size for one that cannot be parsed or is larger than
    :data:`COST_SCAN_MAX_BYTES`."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    if not worker or size > COST_SCAN_MAX_BYTES or path.suffix.lower() != ".onnx":
        return size  # without a worker the size is as good a guess, and costs no parse
    try:
        import onnx

        model = onnx.ModelProto()
        model.ParseFromString(path.read_bytes())
        return size + NODE_COST_BYTES * len(model.graph.node) + folded_bytes(model.graph)
    except Exception:  # a guess: a file the lint will report on is scheduled by its size
        return size


def folded_bytes(graph: Any) -> int:
    """Bytes of the ``ConstantOfShape`` outputs of ``graph`` (main graph only) whose shape
    is an initializer or a ``Constant``: what ORT's level-1 constant folding materialises."""
    from onnxlint.tensors import inline_array

    shapes = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    shapes[node.output[0]] = attr.t
    total = 0
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.domain not in ("", "ai.onnx"):
            continue
        tensor = shapes.get(node.input[0]) if node.input else None
        dims = inline_array(tensor, max_elements=64) if tensor is not None else None
        if dims is None or dims.dtype.kind not in "iu" or (dims < 0).any():
            continue
        itemsize = 4  # the default value is a float32 zero
        for attr in node.attribute:
            if attr.name == "value" and attr.HasField("t"):
                itemsize = _ITEMSIZE.get(attr.t.data_type, 4)
        count = 1
        for d in dims.reshape(-1).tolist():
            count *= int(d)
        total += count * itemsize
    return total


#: bytes per element of the ONNX element types (TensorProto.DataType), 4 for the rest
_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}
