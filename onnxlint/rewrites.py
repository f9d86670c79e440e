"""Model rewrites that analyses and ORT access share; the input model is never modified."""

from __future__ import annotations

import onnx


def override_dims(model: onnx.ModelProto, dims: dict[str, int] | None) -> onnx.ModelProto:
    """A copy with named graph-input dims fixed, like ORT's free dimension overrides.

    Returns ``model`` itself when there is nothing to change (the user's model is never modified).
    """
    if not dims:
        return model
    hits = [
        d
        for vi in model.graph.input
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")
        for d in vi.type.tensor_type.shape.dim
        if d.HasField("dim_param") and d.dim_param in dims
    ]
    if not hits:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for vi in out.graph.input:
        if not (vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in dims:
                d.dim_value = int(dims[d.dim_param])
    # the exporter's value_info stays, symbolic dims and all, as ORT keeps it: its inference
    # merges what it computes into the declared shapes, so a dim only the declaration
    # gives (an Expand's to a computed shape) stays known, and a declared symbolic dim
    # that inference now computes takes the value
    return out
