"""Random calibration feeds for the corpus's quantizers (numpy and onnx only: the build
scripts that run in venvs of their own import it as well as ``build.py``)."""

from __future__ import annotations

from typing import Any


def random_feeds(model: Any, n: int) -> list[dict[str, Any]]:
    """``n`` random feeds for ``model``'s inputs (seed 0; dynamic dims 1; int64 inputs,
    token ids, below 50; float inputs in [0, 1))."""
    import numpy as np
    import onnx

    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = []
    for _ in range(n):
        feed = {}
        for inp in model.graph.input:
            if inp.name in inits:
                continue
            t = inp.type.tensor_type
            shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
            if t.elem_type == onnx.TensorProto.INT64:
                feed[inp.name] = rng.integers(0, 50, shape).astype(np.int64)
            else:
                feed[inp.name] = rng.random(shape).astype(np.float32)
        feeds.append(feed)
    return feeds
