"""``onnxlint.torch``: the PyTorch pre-export check (``check_export``).

The implementation lives in :mod:`onnxlint.torch_export`; this module only
re-exports it under the name users type. Inside the package every import is
absolute, so ``import torch`` there always means PyTorch, never this module.
"""

from __future__ import annotations

from onnxlint.torch_export import (
    EXPORTER_DYNAMO,
    EXPORTER_TORCHSCRIPT,
    ExportFailed,
    ExportReport,
    OpsetTrial,
    TorchNotAvailable,
    check_export,
    dynamic_axes_from_shapes,
    dynamo_available,
    export_to_proto,
    exporter_opsets,
)

__all__ = [
    "EXPORTER_DYNAMO",
    "EXPORTER_TORCHSCRIPT",
    "ExportFailed",
    "ExportReport",
    "OpsetTrial",
    "TorchNotAvailable",
    "check_export",
    "dynamic_axes_from_shapes",
    "dynamo_available",
    "export_to_proto",
    "exporter_opsets",
]
