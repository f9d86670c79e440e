"""Curated, per-EP facts that no upstream table lists in machine-readable form.

``gen_profiles.py`` merges these into the generated profiles: the EP-wide header
of every profile (``HEADERS``) and per-op overlays (``OVERLAYS``: extra
constraints, type restrictions, revision limits, added or removed ops). Every
overlay names the provenance record it comes from; the wording of each reason
is ours.
"""

from __future__ import annotations

import copy
from typing import Any

ORT_TREE = "onnxruntime/onnxruntime-qnn"
ORT_TREE_COMMIT = "cee6c0d91e583d43f5ecef6391e93c19b4042c0f"
ORT_TREE_NOTE = "ORT 1.25.0 source tree as carried by the onnxruntime-qnn repository (2026-03-13)"
MEASURED_DATE = "2026-11-29"
MEASURED_PACKAGES = {
    "onnxruntime": "1.31.1",
    "onnxruntime-qnn": "2.7.0",
    "onnxruntime-openvino": "1.24.1",
    "onnx": "1.23.2",
}
# The CPU profile follows the onnxruntime it is generated with (gen_profiles.py cpu reads
# the installed wheel's kernel table); its measurement is rules/measured/cpu.json.
CPU_MEASURED_DATE = "2026-12-01"
CPU_MEASURED_PACKAGES = {"onnxruntime": "1.32.0", "onnx": "1.23.2"}

# Contrib (com.microsoft) op names that op lists spell without a domain.
MS_CONTRIB_NAMES = frozenset(
    {
        "Attention",
        "BiasGelu",
        "BiasAdd",
        "BiasSplitGelu",
        "DynamicQuantizeMatMul",
        "EmbedLayerNormalization",
        "FastGelu",
        "FusedConv",
        "FusedGemm",
        "FusedMatMul",
        "GatherBlockQuantized",
        "GroupQueryAttention",
        "MatMulInteger16",
        "MatMulIntegerToFloat",
        "MatMulNBits",
        "MultiHeadAttention",
        "NhwcConv",
        "QLinearAdd",
        "QLinearConcat",
        "QLinearGlobalAveragePool",
        "QLinearLeakyRelu",
        "QLinearMul",
        "QLinearSigmoid",
        "QuickGelu",
        "RotaryEmbedding",
        "SimplifiedLayerNormalization",
        "SkipLayerNormalization",
        "SkipSimplifiedLayerNormalization",
    }
)
# OpenVINO's op list matches by op type only; these names are also contrib ops.
OV_CONTRIB_OPS = frozenset(
    {
        "Attention",
        "BiasGelu",
        "DynamicQuantizeMatMul",
        "EmbedLayerNormalization",
        "FastGelu",
        "FusedConv",
        "FusedGemm",
        "FusedMatMul",
        "GatherBlockQuantized",
        "GroupQueryAttention",
        "MatMulIntegerToFloat",
        "MatMulNBits",
        "QLinearAdd",
        "QLinearMul",
        "QuickGelu",
        "RotaryEmbedding",
        "SimplifiedLayerNormalization",
        "SkipLayerNormalization",
        "SkipSimplifiedLayerNormalization",
    }
)

# VitisAI: the "Supported Operators" table of Vitis AI 6.2 (NPU-accelerated ops, FP32 /
# FP16 / INT8 columns), as far as it was read (alphabetically up to "Sin", then "Sl...",
# which can only be Slice). Conv is absent from the part read but is the DPU's core
# engine in UG1414; it is kept. ONNX has no "RMSLayerNormalization" or "SiLU" op; those
# rows are left out. The EP itself delegates the decision to the closed vaip library.
VITISAI_OPS = frozenset(
    [
        "Abs",
        "Add",
        "And",
        "Attention",
        "AveragePool",
        "BatchNormalization",
        "BitwiseAnd",
        "BitwiseNot",
        "BitwiseOr",
        "BitwiseXor",
        "Cast",
        "Ceil",
        "Clip",
        "Concat",
        "ConstantOfShape",
        "Conv",
        "ConvTranspose",
        "Cos",
        "CumSum",
        "DepthToSpace",
        "Div",
        "Einsum",
        "Elu",
        "Equal",
        "Erf",
        "Exp",
        "Expand",
        "Flatten",
        "Floor",
        "Gather",
        "Gelu",
        "GlobalAveragePool",
        "Greater",
        "GreaterOrEqual",
        "GridSample",
        "HardSigmoid",
        "HardSwish",
        "Identity",
        "InstanceNormalization",
        "LayerNormalization",
        "LeakyRelu",
        "Less",
        "LessOrEqual",
        "Log",
        "LogSoftmax",
        "Max",
        "MaxPool",
        "Min",
        "Mish",
        "Mul",
        "Neg",
        "Not",
        "Or",
        "PRelu",
        "Pad",
        "Pow",
        "Range",
        "Reciprocal",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceMax",
        "ReduceMean",
        "ReduceMin",
        "ReduceSum",
        "ReduceSumSquare",
        "Relu",
        "Reshape",
        "Resize",
        "Round",
        "ScatterND",
        "Selu",
        "Shape",
        "Sigmoid",
        "Sign",
        "Sin",
        "Slice",
    ]
)


def _measured(
    pid: str, what: str, date: str = MEASURED_DATE, packages: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "id": pid,
        "kind": "measured",
        "tool": "onnxlint probe / ORT sessions with session.record_ep_graph_assignment_info",
        "date": date,
        "packages": dict(MEASURED_PACKAGES if packages is None else packages),
        "note": what,
    }


# Sessions measured on the repro models of the real-world disagreement classes (issue #16):
# QDQ models from onnxruntime.quantization, int64 tensors inside a graph, and so on.
SESSIONS_DATE = "2026-12-01"
QNN_SESSION_PACKAGES = {"onnxruntime": "1.32.0", "onnxruntime-qnn": "2.7.0", "onnx": "1.23.2"}
OV_SESSION_PACKAGES = {"onnxruntime-openvino": "1.24.1", "onnx": "1.23.2"}


def _sessions(pid: str, packages: dict[str, str], what: str) -> dict[str, Any]:
    return {
        "id": pid,
        "kind": "measured",
        "tool": "onnxlint --confirm (session.record_ep_graph_assignment_info)",
        "date": SESSIONS_DATE,
        "packages": dict(packages),
        "note": what,
    }


_QNN_SESSIONS = _sessions(
    "qnn-sessions",
    QNN_SESSION_PACKAGES,
    "QAIRT 2.51 HTP simulator, soc_model 60, both optimization levels; QDQ models made with "
    "onnxruntime.quantization (QNN config, 8- and 16-bit activations, ai.onnx and "
    "com.microsoft domains) and graphs with int64 tensors between float ops; refusal "
    "reasons from QNN's verbose per-node validation log",
)


def _tree(pid: str, file: str, note: str | None = None) -> dict[str, Any]:
    p = {
        "id": pid,
        "kind": "source",
        "repository": ORT_TREE,
        "file": file,
        "commit": ORT_TREE_COMMIT,
        "version": "onnxruntime 1.25.0 (main)",
        "date": "2026-03-13",
    }
    if note:
        p["note"] = note
    return p


_CPU_PREFERRED = "ORT's GetCpuPreferredNodes moves shape-computation nodes of this EP to CPU"

HEADERS: dict[str, dict[str, Any]] = {
    "cpu": {
        "ep": "CPUExecutionProvider",
        "display_name": "CPU",
        "aliases": ["cpu"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.32.0", "onnx": "1.23.2"},
        "provenance": [
            _measured(
                "ort-max-opset",
                "highest ai.onnx opset each ORT release loads, measured from the wheels "
                "(1.32: onnxruntime 1.32.0, 2026-12-01); for the installed ORT onnxlint "
                "asks that ORT instead (onnxlint/ort_versions.py)",
            ),
            _measured(
                "ort-cpu-measured",
                "CPU EP sessions, optimizations disabled",
                CPU_MEASURED_DATE,
                CPU_MEASURED_PACKAGES,
            ),
        ],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
        "opsets": {
            "ai.onnx": {
                "max": 28,
                "reason": "onnxruntime 1.32 loads ai.onnx up to opset 28",
                "provenance": "ort-max-opset",
            }
        },
        "notes": [
            "The CPU EP is the fallback: a node it cannot run makes session creation fail.",
            "StringNormalizer fails at run time when the en_US.UTF-8 locale is missing "
            "(a machine fact, not a model fact).",
        ],
    },
    "cuda": {
        "ep": "CUDAExecutionProvider",
        "display_name": "CUDA",
        "aliases": ["cuda"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0"},
        "provenance": [],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": True,
        "layout": "NCHW",
        "notes": [_CPU_PREFERRED],
    },
    "dml": {
        "ep": "DmlExecutionProvider",
        "display_name": "DirectML",
        "aliases": ["dml", "directml"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0"},
        "provenance": [],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": True,
        "layout": "NCHW",
        "notes": [_CPU_PREFERRED, "DirectML needs memory patterns and parallel execution off."],
    },
    "rocm": {
        "ep": "ROCMExecutionProvider",
        "display_name": "ROCm",
        "aliases": ["rocm"],
        "default_for_ep": True,
        "describes": {
            "onnxruntime": "1.22 (main at 1.23.0-dev; the ROCm EP was deleted right after)"
        },
        "provenance": [],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": True,
        "layout": "NCHW",
        "notes": [
            _CPU_PREFERRED,
            "The ROCm EP was retired upstream in favour of MIGraphX; this profile describes "
            "the last kernel registrations read.",
        ],
    },
    "tensorrt": {
        "ep": "TensorrtExecutionProvider",
        "display_name": "TensorRT",
        "aliases": ["tensorrt", "trt"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0", "sdk": "TensorRT 10.0 (onnx-tensorrt parser)"},
        "provenance": [
            _tree(
                "ort-trt-ep",
                "onnxruntime/core/providers/tensorrt/tensorrt_execution_provider.cc",
                "partitioning via the onnx-tensorrt parser's supportsModel; minimum subgraph "
                "size option trt_min_subgraph_size (default 1)",
            )
        ],
        "kind": "compiling",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
        "opsets": {
            "ai.onnx": {
                "min": 9,
                "max": 20,
                "reason": "the onnx-tensorrt parser for TensorRT 10.0 documents opsets 9-20",
                "provenance": "onnx-tensorrt-operators",
            }
        },
        "partitioning": {
            "min_partition_nodes": 1,
            "notes": [
                "Dynamic shapes need optimization profiles (trt_profile_min/max/opt_shapes) "
                "or the engine is rebuilt per shape.",
                "Nodes the parser refuses fall back to CUDA or CPU when those EPs are registered.",
            ],
        },
    },
    "nvtensorrtrtx": {
        "ep": "NvTensorRTRTXExecutionProvider",
        "display_name": "NVIDIA TensorRT RTX",
        "aliases": ["nvtensorrtrtx", "nv-trt-rtx", "tensorrt-rtx"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0", "sdk": "TensorRT-RTX (onnx-tensorrt parser)"},
        "provenance": [
            _tree(
                "ort-nv-ep",
                "onnxruntime/core/providers/nv_tensorrt_rtx/nv_execution_provider.cc",
                "same parser-driven partitioning as the TensorRT EP (supportsModelV2)",
            )
        ],
        "kind": "compiling",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
        "notes": [
            "Op coverage is taken from the onnx-tensorrt parser documentation; TensorRT-RTX "
            "ships the same ONNX parser, so treat per-op details as approximate.",
        ],
    },
    "coreml-neuralnetwork": {
        "ep": "CoreMLExecutionProvider",
        "display_name": "CoreML (NeuralNetwork)",
        "variant": {
            "format": "NeuralNetwork",
            "provider_options": {"ModelFormat": "NeuralNetwork"},
        },
        "aliases": ["coreml-nn", "coreml-neuralnetwork"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.31.1"},
        "provenance": [
            _tree(
                "coreml-builders",
                "onnxruntime/core/providers/coreml/builders/impl/",
                "per-op conditions, restated in our words",
            )
        ],
        "kind": "compiling",
        "requires_static_shapes": False,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
        "global_constraints": [
            {
                "kind": "max_rank",
                "value": 5,
                "reason": "CoreML handles tensors of rank 5 at most",
                "provenance": "coreml-builders",
            },
            {
                "kind": "no_zero_dims",
                "reason": "CoreML does not take tensors with a zero-sized dimension",
                "provenance": "coreml-builders",
            },
        ],
        "partitioning": {
            "notes": [
                "Inputs with dynamic shapes are refused unless the "
                "AllowDynamicShapes/RequireStaticInputShapes options say otherwise."
            ]
        },
    },
    "coreml-mlprogram": {
        "ep": "CoreMLExecutionProvider",
        "display_name": "CoreML (MLProgram)",
        "variant": {"format": "MLProgram", "provider_options": {"ModelFormat": "MLProgram"}},
        "aliases": ["coreml-mlprogram", "coreml-ml"],
        "describes": {"onnxruntime": "1.31.1"},
        "provenance": [
            _tree(
                "coreml-builders",
                "onnxruntime/core/providers/coreml/builders/impl/",
                "per-op conditions, restated in our words",
            )
        ],
        "kind": "compiling",
        "requires_static_shapes": False,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
        "global_constraints": [
            {
                "kind": "max_rank",
                "value": 5,
                "reason": "CoreML handles tensors of rank 5 at most",
                "provenance": "coreml-builders",
            },
            {
                "kind": "no_zero_dims",
                "reason": "CoreML does not take tensors with a zero-sized dimension",
                "provenance": "coreml-builders",
            },
        ],
    },
    "nnapi": {
        "ep": "NnapiExecutionProvider",
        "display_name": "NNAPI",
        "aliases": ["nnapi"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.31.1"},
        "provenance": [
            _tree(
                "nnapi-builders",
                "onnxruntime/core/providers/nnapi/nnapi_builtin/builders/",
                "per-op conditions, restated in our words",
            )
        ],
        "kind": "compiling",
        "requires_static_shapes": True,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        "layout": "NHWC",
        "global_constraints": [
            {
                "kind": "static_shape",
                "reason": "NNAPI needs fixed tensor shapes",
                "provenance": "nnapi-builders",
            },
            {
                "kind": "max_rank",
                "value": 4,
                "reason": "NNAPI handles tensors of rank 4 at most",
                "provenance": "nnapi-builders",
            },
        ],
    },
    "qnn-htp": {
        "ep": "QNNExecutionProvider",
        "display_name": "QNN (HTP backend)",
        "variant": {"backend": "HTP", "provider_options": {"backend_type": "htp"}},
        "aliases": ["qnn", "qnn-htp", "htp"],
        "default_for_ep": True,
        "describes": {
            "onnxruntime": "1.31.1",
            "ep": "onnxruntime-qnn 2.7.0",
            "sdk": "QAIRT 2.51 (HTP simulator on x86_64 Linux)",
        },
        "provenance": [
            _measured("qnn-measured", "QNN HTP simulator, soc_model 60, optimizations disabled"),
            _QNN_SESSIONS,
            _tree(
                "qnn-builder-checks",
                "onnxruntime/core/providers/qnn/builder/opbuilder/",
                "per-op validation in the op builders, restated in our words",
            ),
        ],
        "kind": "compiling",
        "requires_static_shapes": True,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        # QNN validates a QDQ node unit with the DQ of a weight as its static input
        "dequantized_constants": True,
        "layout": "NHWC",
        "opsets": {
            "ai.onnx": {
                "min": 7,
                "max": 26,
                "reason": "ORT's layout transformer, which every NHWC EP needs, does not handle "
                "opsets below 7",
                "provenance": "qnn-measured",
            }
        },
        "partitioning": {
            "drop_single_op_partitions": ["QuantizeLinear", "DequantizeLinear"],
            "constant_only_partition_fails": True,
            "refused_qdq_units": [
                {
                    "op": "LayerNormalization",
                    "input_types": {"0": ["uint8"], "1": ["int8"]},
                    "reason": "QNN fails to add a LayerNormalization with uint8 activations "
                    "and an int8 scale ('Failed to add node')",
                    "provenance": "qnn-sessions",
                }
            ],
            "notes": [
                "A claimed partition that depends only on constants fails with "
                "'zero graph inputs'.",
                "A dynamic shape inside a claimed partition fails with 'Dynamic shape is not "
                "supported yet'; fix the symbolic dims (add_free_dimension_override_by_name).",
                "Pass soc_model with backend_type=htp, or finalizing larger float graphs fails "
                "with QNN_COMMON_ERROR_MEM_ALLOC.",
            ],
        },
        "tensor_dtypes": {
            "allowed": [
                "bool",
                "double",
                "float",
                "float16",
                "int8",
                "int16",
                "int32",
                "int64",
                "uint8",
                "uint16",
                "uint32",
                "uint64",
                "int4",
                "uint4",
            ],
            "fails_on_graph_io": ["double", "uint64"],
            "reason": "QNN has no mapping for this element type",
            "provenance": "qnn-measured",
        },
        "global_constraints": [
            {
                "kind": "static_shape",
                "reason": "QNN needs every tensor shape to be static (it logs 'Cannot get shape')",
                "provenance": "qnn-measured",
                # claimed without the check; its own constraint says what happens then
                "except_ops": ["Reciprocal"],
            }
        ],
        "notes": [
            "float64 tensors are accepted and computed as float32.",
            "QNN logs one 'Validation FAILED ... REASON : ...' line per refused node at verbose "
            "log level.",
        ],
    },
    "qnn-cpu": {
        "ep": "QNNExecutionProvider",
        "display_name": "QNN (CPU backend)",
        "variant": {"backend": "CPU", "provider_options": {"backend_type": "cpu"}},
        "aliases": ["qnn-cpu"],
        "describes": {"onnxruntime": "1.31.1", "ep": "onnxruntime-qnn 2.7.0"},
        "provenance": [
            _measured("qnn-measured", "measured on the HTP backend; assumed to hold here too"),
            {**_QNN_SESSIONS, "note": "measured on the HTP backend; assumed to hold here too"},
            _tree(
                "qnn-builder-checks",
                "onnxruntime/core/providers/qnn/builder/opbuilder/",
                "per-op validation in the op builders, restated in our words",
            ),
        ],
        "kind": "compiling",
        "requires_static_shapes": True,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        # QNN validates a QDQ node unit with the DQ of a weight as its static input
        "dequantized_constants": True,
        "layout": "NHWC",
        "opsets": {"ai.onnx": {"min": 7, "max": 26, "provenance": "qnn-builder-checks"}},
        "tensor_dtypes": {
            "allowed": ["bool", "double", "float", "int32", "int64", "uint8", "int8", "uint32"],
            "reason": "the QNN CPU backend computes in float32 and has no quantized kernels",
            "provenance": "qnn-builder-checks",
        },
        "global_constraints": [
            {
                "kind": "static_shape",
                "reason": "QNN needs every tensor shape to be static",
                "provenance": "qnn-builder-checks",
            }
        ],
        "notes": ["The CPU backend refuses quantized (QDQ) node units that HTP accepts."],
    },
    "qnn-gpu": {
        "ep": "QNNExecutionProvider",
        "display_name": "QNN (GPU backend)",
        "variant": {"backend": "GPU", "provider_options": {"backend_type": "gpu"}},
        "aliases": ["qnn-gpu"],
        "describes": {"onnxruntime": "1.31.1", "ep": "onnxruntime-qnn 2.7.0"},
        "provenance": [
            _measured("qnn-measured", "measured on the HTP backend; assumed to hold here too"),
            {**_QNN_SESSIONS, "note": "measured on the HTP backend; assumed to hold here too"},
            _tree(
                "qnn-builder-checks",
                "onnxruntime/core/providers/qnn/builder/opbuilder/",
                "per-op validation in the op builders, restated in our words",
            ),
        ],
        "kind": "compiling",
        "requires_static_shapes": True,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        # QNN validates a QDQ node unit with the DQ of a weight as its static input
        "dequantized_constants": True,
        "layout": "NHWC",
        "opsets": {"ai.onnx": {"min": 7, "max": 26, "provenance": "qnn-builder-checks"}},
        "tensor_dtypes": {
            "allowed": ["bool", "float", "float16", "int32", "int64", "uint32"],
            "reason": "the QNN GPU backend supports float and float16 compute only",
            "provenance": "qnn-builder-checks",
        },
        "global_constraints": [
            {
                "kind": "static_shape",
                "reason": "QNN needs every tensor shape to be static",
                "provenance": "qnn-builder-checks",
            }
        ],
    },
    "migraphx": {
        "ep": "MIGraphXExecutionProvider",
        "display_name": "MIGraphX",
        "aliases": ["migraphx", "mgx"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0"},
        "provenance": [],
        "kind": "compiling",
        "requires_static_shapes": False,
        "requires_static_control_flow": False,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
    },
    "vitisai": {
        "ep": "VitisAIExecutionProvider",
        "display_name": "Vitis AI",
        "aliases": ["vitisai", "vitis", "ryzenai"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0", "sdk": "Vitis AI 6.2 (vaip)"},
        "provenance": [
            {
                "id": "vitisai-docs",
                "kind": "manual",
                "repository": "vitisai.docs.amd.com (Vitis AI 6.2)",
                "file": "docs/additional_information/ops_support.html; operators.html",
                "version": "Vitis AI 6.2",
                "note": "NPU-supported operator table, read up to 'Sin'/'Sl...'; ops after that "
                "are missing here. Opsets up to 20 fully, 21-22 partly; dynamic shapes send the "
                "whole model to CPU",
            },
            _tree(
                "ort-vitisai",
                "onnxruntime/core/providers/vitisai/imp/capability.cc",
                "GetCapability forwards to vaip; no op list in ORT",
            ),
        ],
        "kind": "compiling",
        "requires_static_shapes": True,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        "layout": "NCHW",
        "opsets": {
            "ai.onnx": {
                "max": 22,
                "reason": "Vitis AI 6.2 covers opsets up to 20 fully and 21-22 partly",
                "provenance": "vitisai-docs",
            }
        },
        "global_constraints": [
            {
                "kind": "static_shape",
                "reason": "the Vitis AI NPU compiler needs fixed shapes",
                "provenance": "vitisai-docs",
            }
        ],
        "notes": ["Float models run on the NPU only after quantization (QDQ)."],
    },
    "xnnpack": {
        "ep": "XnnpackExecutionProvider",
        "display_name": "XNNPACK",
        "aliases": ["xnnpack"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0"},
        "provenance": [],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": True,
        "device_memory": "host",
        "cpu_preferred_shape_nodes": False,
        "layout": "NHWC",
        "notes": [
            "Registrations in the NHWC internal domain are listed under ai.onnx: ORT's layout "
            "transformer rewrites the user's NCHW nodes into them."
        ],
    },
    "webgpu": {
        "ep": "WebGpuExecutionProvider",
        "display_name": "WebGPU",
        "aliases": ["webgpu", "wgpu"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0"},
        "provenance": [],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": True,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": True,
        "layout": "NHWC",
        "notes": [_CPU_PREFERRED],
    },
    "cann": {
        "ep": "CANNExecutionProvider",
        "display_name": "CANN (Huawei Ascend)",
        "aliases": ["cann", "ascend"],
        "default_for_ep": True,
        "describes": {"onnxruntime": "1.25.0"},
        "provenance": [],
        "kind": "kernel",
        "requires_static_shapes": False,
        "requires_static_control_flow": True,
        "device_memory": "device",
        "cpu_preferred_shape_nodes": True,
        "layout": "NCHW",
        "notes": [_CPU_PREFERRED],
    },
}

_OV_COMMON: dict[str, Any] = {
    "ep": "OpenVINOExecutionProvider",
    "describes": {
        "onnxruntime": "1.24.1",
        "ep": "onnxruntime-openvino 1.24.1",
        "sdk": "OpenVINO 2025.4",
    },
    "kind": "compiling",
    "requires_static_shapes": False,
    "requires_static_control_flow": False,
    "cpu_preferred_shape_nodes": False,
    "layout": "NCHW",
    "partitioning": {
        "min_partition_nodes": 2,
        "drop_if_output_used_outside": ["Conv", "Identity"],
        "notes": [
            "When every node is supported the whole graph is one partition, whatever its size.",
            "Otherwise single-node clusters go back to CPU (or join the next cluster they "
            "connect to), and a cluster whose Conv/Identity output is also used outside it "
            "is dropped.",
            "TopK and NonZero always break clusters.",
            "A graph with no non-constant inputs, or an input that is not a tensor, is not "
            "claimed at all.",
        ],
    },
    "notes": [
        "OpenVINO claims almost every node and may then fail at compile time with no "
        "fallback: If bodies with dynamic-rank outputs, ZipMap outputs, TorchScript-style "
        "Loop bodies, opset-23 Attention.",
        "Release builds log no per-node reasons, only the number of supported subgraphs.",
    ],
}


def _ov(device: str, default: bool, aliases: list[str]) -> dict[str, Any]:
    h = copy.deepcopy(_OV_COMMON)
    h.update(
        {
            "display_name": f"OpenVINO ({device})",
            "variant": {"device": device, "provider_options": {"device_type": device}},
            "aliases": aliases,
            "default_for_ep": default,
            "device_memory": "host" if device == "CPU" else "device",
            "provenance": [
                _measured("ov-measured", f"onnxruntime-openvino with device_type {device}")
            ],
            "global_constraints": [
                {
                    "kind": "known_shape",
                    "graph_inputs_only": True,
                    "reason": "OpenVINO takes no graph whose inputs are not plain tensors "
                    "(sequence, optional or rank-less)",
                    "provenance": "ov-capability",
                }
            ],
        }
    )
    if device == "CPU":
        # OpenVINO's frontend folds a DequantizeLinear of constants into a constant
        h["dequantized_constants"] = True
        part = h["partitioning"]
        notes = part.pop("notes")  # kept last, as the profiles list it
        part["unknown_rank_input_fails"] = True
        part["rank_losing_ops"] = [
            {
                "op": op,
                "domain": "ai.onnx",
                "since_version": 12,
                "reason": f"{op} of opsets 12-15 hands its output, and what the same "
                "subgraph computes from it, to the next OpenVINO subgraph as a Parameter of "
                "dynamic rank",
                "provenance": "ov-sessions",
            }
            for op in ("GreaterOrEqual", "LessOrEqual")
        ]
        part["cyclic_partition_fails"] = True
        part["claimed_body_partition_fails"] = ["Loop"]
        part["bodies_compiled_with_node"] = ["If"]
        part["notes"] = [
            *notes,
            "A subgraph that receives a tensor of unknown rank fails to compile (ov-sessions: "
            "the CPU plug-in refuses a Parameter of dynamic rank; Softmax of unknown rank "
            "fails in the frontend or in SoftmaxDecomposition).",
            "A tensor computed from GreaterOrEqual/LessOrEqual of opsets 12-15 reaches the "
            "next OpenVINO subgraph with dynamic rank (ov-sessions: opsets 12-15 fail, 16 and "
            "18 load; within one subgraph it keeps its rank).",
            "A single-node cluster joins the next cluster it connects to; when a path leaves "
            "that cluster and comes back through other nodes, ORT's fused graph has a cycle "
            "and the session fails ('the graph is not acyclic', ov-sessions).",
            "ORT partitions a Loop body before the graph around it: when OpenVINO claims "
            "nodes of the body and then the Loop itself, its frontend gets a body holding "
            "the body partition's fused node and fails ('does not support the following "
            "ONNX operations: com.intel.ai.OpenVINO-EP-subgraph', or 'node not found in "
            "graph cache'; ov-sessions, both levels).",
            "An If that OpenVINO claims is compiled with its branches: they get no "
            "partition of their own (ov-sessions: ORT reports none, and the session loads).",
        ]
    if device == "CPU":
        h["provenance"].append(
            _sessions(
                "ov-sessions",
                OV_SESSION_PACKAGES,
                "onnxruntime-openvino with device_type CPU, both optimization levels; QDQ "
                "models made with onnxruntime.quantization (8- and 16-bit, ai.onnx and "
                "com.microsoft domains)",
            )
        )
    if device != "CPU":
        h["describes"] = {"onnxruntime": "1.24.1", "ep": "onnxruntime-openvino 1.24.1 (source)"}
        h["provenance"] = []
    return h


HEADERS["openvino-cpu"] = _ov("CPU", True, ["openvino", "ov", "openvino-cpu", "ov-cpu"])
HEADERS["openvino-gpu"] = _ov("GPU", False, ["openvino-gpu", "ov-gpu"])
HEADERS["openvino-npu"] = _ov("NPU", False, ["openvino-npu", "ov-npu"])


# Highest ai.onnx opset the ORT release a profile describes can load (measured from the
# wheels: 1.18-1.20 -> 21, 1.21-1.22 -> 22, 1.23 -> 23, 1.24 -> 25, 1.25-1.31 -> 26).
_ORT_MAX_OPSET = {
    "cuda": ("1.25", 26), "dml": ("1.25", 26), "rocm": ("1.23", 23), "migraphx": ("1.25", 26),
    "webgpu": ("1.25", 26), "xnnpack": ("1.25", 26), "cann": ("1.25", 26),
    "nvtensorrtrtx": ("1.25", 26), "coreml-neuralnetwork": ("1.31", 26),
    "coreml-mlprogram": ("1.31", 26), "nnapi": ("1.31", 26), "openvino-cpu": ("1.24", 25),
    "openvino-gpu": ("1.24", 25), "openvino-npu": ("1.24", 25),
}  # fmt: skip
for _pid, (_ort, _max) in _ORT_MAX_OPSET.items():
    _h = HEADERS[_pid]
    _h.setdefault("opsets", {}).setdefault(
        "ai.onnx",
        {
            "max": _max,
            "reason": f"onnxruntime {_ort} loads ai.onnx up to opset {_max}",
            "provenance": "ort-max-opset",
        },
    )
    if not any(p["id"] == "ort-max-opset" for p in _h["provenance"]):
        _h["provenance"].append(
            _measured(
                "ort-max-opset",
                "highest ai.onnx opset each ORT release loads, measured from the wheels",
            )
        )

# Filled by gen_profiles.cmd_openvino before writing (dtype sets and scalar rules
# read from data_ops.cc).
OV_EXTRAS: dict[str, dict[str, Any]] = {}


# ---------------------------------------------------------------------------
# Per-op overlays. Keys: (domain, op). Values may hold:
#   constraints: list (appended), types / graph_io_types: dict (merged per slot, over the
#   fitted measurement), versions: list (replaces),
#   remove: True (drop the op), add: dict (a whole op entry when the op is absent).


def _c(kind: str, reason: str, prov: str, **kw: Any) -> dict[str, Any]:
    return {"kind": kind, "reason": reason, "provenance": prov, **kw}


_QNN_COMMON: dict[tuple[str, str], dict[str, Any]] = {
    ("ai.onnx", "BatchNormalization"): {
        "constraints": [
            _c(
                "constant_input",
                "QNN folds scale, bias, mean and variance at compile time, so they must be "
                "constants",
                "qnn-builder-checks",
                inputs=[1, 2, 3, 4],
            ),
            _c(
                "max_rank",
                "QNN BatchNorm takes inputs of rank 4 at most",
                "qnn-builder-checks",
                value=4,
                inputs=[0],
            ),
        ]
    },
    ("ai.onnx", "Clip"): {
        "constraints": [
            _c(
                "constant_input",
                "QNN needs Clip's min and max to be constants",
                "qnn-builder-checks",
                inputs=[1, 2],
            )
        ]
    },
    ("ai.onnx", "CumSum"): {
        "constraints": [
            _c(
                "constant_input",
                "QNN needs CumSum's axis to be a constant",
                "qnn-builder-checks",
                inputs=[1],
            ),
            _c(
                "attribute",
                "QNN supports CumSum only with exclusive=0",
                "qnn-builder-checks",
                name="exclusive",
                allowed=[0],
            ),
            _c(
                "attribute",
                "QNN supports CumSum only with reverse=0",
                "qnn-builder-checks",
                name="reverse",
                allowed=[0],
            ),
        ]
    },
    ("ai.onnx", "Expand"): {
        "constraints": [
            _c(
                "constant_input",
                "QNN needs Expand's target shape to be a constant (no dynamic shapes)",
                "qnn-builder-checks",
                inputs=[1],
            )
        ]
    },
    ("ai.onnx", "ArgMax"): {
        "constraints": [
            _c(
                "attribute",
                "QNN supports ArgMax only with select_last_index=0",
                "qnn-builder-checks",
                name="select_last_index",
                allowed=[0],
            )
        ]
    },
    ("ai.onnx", "ArgMin"): {
        "constraints": [
            _c(
                "attribute",
                "QNN supports ArgMin only with select_last_index=0",
                "qnn-builder-checks",
                name="select_last_index",
                allowed=[0],
            )
        ]
    },
    ("ai.onnx", "QuantizeLinear"): {
        "constraints": [
            _c(
                "not_graph_input",
                "QNN does not take a QuantizeLinear that reads a graph input "
                "(the quantization stays on CPU)",
                "qnn-measured",
                inputs=[0],
            )
        ]
    },
    ("ai.onnx", "DequantizeLinear"): {
        "constraints": [
            _c(
                "not_graph_output",
                "QNN does not take a DequantizeLinear that writes a graph "
                "output (the dequantization stays on CPU)",
                "qnn-measured",
                outputs=[0],
            )
        ]
    },
}


def _const(reason: str, inputs: list[int], prov: str = "qnn-measured") -> dict[str, Any]:
    return _c("constant_input", reason, prov, inputs=inputs)


def _attr(reason: str, name: str, prov: str = "qnn-measured", **kw: Any) -> dict[str, Any]:
    return _c("attribute", reason, prov, name=name, **kw)


_REDUCE_AXES = _const("QNN takes a reduction's axes only as a constant", [1])
_REDUCE_NOOP = _attr(
    "QNN has no no-op reduction (noop_with_empty_axes=1)", "noop_with_empty_axes", allowed=[0]
)
_AT_LEAST_2 = _c("min_inputs", "QNN needs at least two inputs here", "qnn-measured", value=2)
_DILATIONS_1 = "QNN pools only with all dilations equal to 1"

# Refusal reasons QNN logged in the probe, restated as constraints.
_QNN_MEASURED: dict[tuple[str, str], dict[str, Any]] = {
    **{
        ("ai.onnx", op): {"constraints": [_REDUCE_AXES, _REDUCE_NOOP]}
        for op in (
            "ReduceL2",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceSum",
        )
    },
    ("ai.onnx", "LayerNormalization"): {
        "constraints": [
            _c(
                "output_absent",
                "QNN LayerNorm produces only its first output (no mean or inverse std-dev outputs)",
                "qnn-measured",
                outputs=[1, 2],
            )
        ]
    },
    ("ai.onnx", "RMSNormalization"): {
        "constraints": [
            _attr(
                "QNN RMSNorm normalises only over the last axis", "axis", allowed=[-1], default=-1
            )
        ]
    },
    ("ai.onnx", "QuantizeLinear"): {
        "constraints": [_const("QNN needs the scale and zero point to be constants", [1, 2])]
    },
    ("ai.onnx", "DequantizeLinear"): {
        "constraints": [_const("QNN needs the scale and zero point to be constants", [1, 2])]
    },
    ("ai.onnx", "OneHot"): {
        "constraints": [_const("QNN needs OneHot's depth to be a constant", [1])]
    },
    ("ai.onnx", "NonMaxSuppression"): {
        "constraints": [
            _const("QNN needs NonMaxSuppression's scalar limits to be constants", [2, 3, 4])
        ]
    },
    ("ai.onnx", "QLinearMatMul"): {
        "constraints": [
            _const(
                "QNN needs QLinearMatMul's scales and zero points to be constants",
                [1, 2, 4, 5, 6, 7],
            )
        ]
    },
    ("ai.onnx", "QLinearConv"): {
        "constraints": [
            _const(
                "QNN needs QLinearConv's scales and zero points to be constants", [1, 2, 4, 5, 6, 7]
            )
        ]
    },
    ("ai.onnx", "Slice"): {
        "constraints": [
            _const("QNN needs Slice's starts, ends, axes and steps to be constants", [1, 2, 3, 4])
        ]
    },
    ("ai.onnx", "Split"): {
        "constraints": [_const("QNN needs Split's sizes to be a constant", [1])]
    },
    ("ai.onnx", "TopK"): {"constraints": [_const("QNN needs TopK's k to be a constant", [1])]},
    ("ai.onnx", "Tile"): {
        "constraints": [_const("QNN needs Tile's repeats to be a constant", [1])]
    },
    ("ai.onnx", "Pad"): {
        "constraints": [
            _const("QNN needs Pad's pads and value to be constants", [1, 2]),
            _c("input_absent", "QNN Pad does not take the axes input", "qnn-measured", inputs=[3]),
        ]
    },
    ("ai.onnx", "Upsample"): {
        "constraints": [_const("QNN needs Upsample's scales to be a constant", [1])]
    },
    ("ai.onnx", "Resize"): {
        "constraints": [
            _attr(
                "QNN Resize has no cubic mode when scales are computed at run time "
                "(treated here as no cubic mode)",
                "mode",
                forbidden=["cubic"],
            ),
            _attr("QNN Resize has no anti-aliasing", "antialias", allowed=[0]),
            _attr(
                "QNN Resize does not support this coordinate_transformation_mode",
                "coordinate_transformation_mode",
                forbidden=["tf_crop_and_resize", "half_pixel_symmetric"],
            ),
        ]
    },
    ("ai.onnx", "MaxPool"): {
        "constraints": [
            _attr(_DILATIONS_1, "dilations", allowed=[[1], [1, 1], [1, 1, 1]]),
            _c(
                "output_absent",
                "QNN MaxPool produces only its first output (no indices)",
                "qnn-measured",
                outputs=[1],
            ),
        ]
    },
    ("ai.onnx", "AveragePool"): {
        "constraints": [_attr(_DILATIONS_1, "dilations", allowed=[[1], [1, 1], [1, 1, 1]])]
    },
    ("ai.onnx", "LpPool"): {
        "constraints": [
            _attr("QNN LpPool supports p=1 or p=2 only", "p", allowed=[1, 2], default=2),
            _attr(_DILATIONS_1, "dilations", allowed=[[1], [1, 1], [1, 1, 1]]),
        ]
    },
    ("ai.onnx", "ConvTranspose"): {
        "constraints": [
            _attr(
                "QNN TransposeConv supports only dilations of 1",
                "dilations",
                allowed=[[1], [1, 1], [1, 1, 1]],
            )
        ]
    },
    ("ai.onnx", "Gemm"): {
        "constraints": [
            _attr("QNN FullyConnected supports only alpha=1.0", "alpha", allowed=[1.0]),
            _attr("QNN FullyConnected supports only beta=1.0 or 0.0", "beta", allowed=[1.0, 0.0]),
        ]
    },
    ("ai.onnx", "LpNormalization"): {
        "constraints": [
            _attr("QNN supports LpNormalization only with p=2", "p", allowed=[2], default=2)
        ]
    },
    ("ai.onnx", "Mod"): {
        "constraints": [_attr("QNN Mod supports only fmod=0", "fmod", allowed=[0], default=0)]
    },
    ("ai.onnx", "ScatterND"): {
        "constraints": [
            _attr(
                "QNN ScatterND does not support max/min reduction",
                "reduction",
                forbidden=["max", "min"],
            )
        ]
    },
    ("ai.onnx", "ScatterElements"): {
        "constraints": [
            _attr(
                "QNN ScatterElements supports no reduction",
                "reduction",
                allowed=["none"],
                default="none",
            )
        ]
    },
    ("ai.onnx", "If"): {
        "constraints": [
            _c(
                "known_shape",
                "QNN takes an If only when its branch outputs are plain tensors "
                "(no sequences or optionals)",
                "qnn-measured",
                outputs=[0, 1, 2, 3],
            )
        ]
    },
    ("ai.onnx", "RoiAlign"): {
        "constraints": [
            _attr("QNN HTP's RoiAlign only averages", "mode", allowed=["avg"], default="avg")
        ]
    },
    ("ai.onnx", "GatherND"): {
        "constraints": [_attr("QNN GatherND supports only batch_dims=0", "batch_dims", allowed=[0])]
    },
    ("ai.onnx", "GridSample"): {
        "constraints": [
            _attr("QNN GridSample has no cubic mode", "mode", forbidden=["cubic", "bicubic"]),
            _c(
                "max_rank",
                "QNN GridSample is 2-D only (rank-4 input)",
                "qnn-measured",
                value=4,
                inputs=[0],
            ),
        ]
    },
    ("ai.onnx", "GRU"): {
        "constraints": [_attr("QNN supports only layout=0 recurrent ops", "layout", allowed=[0])]
    },
    ("ai.onnx", "LSTM"): {
        "constraints": [
            _attr("QNN supports only layout=0 recurrent ops", "layout", allowed=[0]),
            _const("QNN needs LSTM's sequence lengths to be a constant", [4]),
        ]
    },
    ("ai.onnx", "Attention"): {
        "constraints": [
            _c(
                "input_absent",
                "QNN Attention does not take nonpad_kv_seqlen",
                "qnn-measured",
                inputs=[6],
            ),
            _attr(
                "QNN Attention does not take softmax_precision", "softmax_precision", absent=True
            ),
        ],
        "types": {"in:3": ["float", "float16"]},
    },
    **{
        ("ai.onnx", op): {"constraints": [_AT_LEAST_2]}
        for op in ("Max", "Min", "Sum", "Mean", "Einsum")
    },
}
# onnxruntime.quantization writes 16-bit QDQ (and, with UseQDQContribOps, every QDQ) in
# the com.microsoft domain: QNN takes those Q/DQ nodes exactly like the ai.onnx ones
# (uint8, int8, uint16 and int16 measured), including the graph-input/-output refusals
# ("QNN EP is configured to not take Q nodes that consume a graph input").
_QNN_CONTRIB_QDQ: dict[tuple[str, str], dict[str, Any]] = {
    ("com.microsoft", op): {
        "add": {"domain": "com.microsoft", "op": op, "provenance": "qnn-sessions"},
        "constraints": [
            _c(kind, f"QNN does not take a {op} that {where} (the {what} stays on CPU)",
               "qnn-sessions", **{slot: [0]}),
            _const("QNN needs the scale and zero point to be constants", [1, 2], "qnn-sessions"),
        ],
    }
    for op, kind, slot, where, what in (
        ("QuantizeLinear", "not_graph_input", "inputs", "reads a graph input", "quantization"),
        ("DequantizeLinear", "not_graph_output", "outputs", "writes a graph output",
         "dequantization"),
    )
}  # fmt: skip

# Integer tensors on the HTP, measured per slot on graphs where the tensor sits between
# two QNN nodes and where it is a graph input/output (the probe's single-node cases only
# saw the second, and read "refused at the graph boundary" as "refused"). QNN computes
# int64 as int32: a Cast to or from int64 and an int64 Transpose are claimed inside a
# graph and on an int64 graph input; QNN fails to add a Transpose or a Cast that writes an
# int64 graph output. A Cast of an int8/int16/uint16/uint64 tensor and a Gather,
# Concat, ArgMax or Transpose of a non-quantized int8/uint8 tensor fail wherever they are
# ("Failed to create Cast node", "Failed to add node").
_CAST_TYPES = ["bool", "double", "float", "float16", "int32", "int64", "uint32", "uint8"]
_TRANSPOSE_TYPES = ["bfloat16", "bool", "double", "float", "float16", "int16", "int32",
                    "int64", "uint16", "uint32", "uint64"]  # fmt: skip
_QNN_INT_TYPES: dict[tuple[str, str], dict[str, Any]] = {
    ("ai.onnx", "Cast"): {
        "types": {"in:0": _CAST_TYPES, "out:0": _CAST_TYPES},
        "graph_io_types": {
            "in:0": [t for t in _CAST_TYPES if t != "double"],
            "out:0": [t for t in _CAST_TYPES if t not in ("double", "int64")],
        },
    },
    ("ai.onnx", "Transpose"): {
        "types": {"in:0": _TRANSPOSE_TYPES, "out:0": _TRANSPOSE_TYPES},
        "graph_io_types": {
            "in:0": [t for t in _TRANSPOSE_TYPES if t != "double"],
            "out:0": [t for t in _TRANSPOSE_TYPES if t not in ("double", "int64")],
        },
    },
    ("ai.onnx", "Gather"): {
        "types": {"in:0": _TRANSPOSE_TYPES},
    },
}

#: QNN's Reciprocal builder never asks for its input's shape: the node is claimed with a
#: dynamic input, and compiling the partition fails (measured: a session, and the
#: real-world corpus's tf2onnx LayerNorm with symbolic value_info dims)
_QNN_RECIPROCAL_REASON = (
    "QNN claims a Reciprocal without checking its input shape, then fails to compile it "
    "('Dynamic shape is not supported yet')"
)

_QNN_HTP_ONLY: dict[tuple[str, str], dict[str, Any]] = {
    ("ai.onnx", "ReduceProd"): {"remove": True},
    ("ai.onnx", "IsInf"): {"remove": True},
    # "Failed to create GatherND node" on bool data (measured; float, int32, int64 taken)
    ("ai.onnx", "GatherND"): {"types": {"in:0": [t for t in _TRANSPOSE_TYPES if t != "bool"]}},
    ("ai.onnx", "Reciprocal"): {
        "constraints": [
            {
                "kind": "static_shape",
                "reason": _QNN_RECIPROCAL_REASON,
                "provenance": "qnn-sessions",
                "effect": "fails_after_claim",
            }
        ]
    },
}


def _merge_overlays(
    *parts: dict[tuple[str, str], dict[str, Any]],
) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for part in parts:
        for key, change in part.items():
            cur = out.setdefault(key, {})
            for k, v in change.items():
                if k == "constraints":
                    cur.setdefault("constraints", []).extend(v)
                elif k in ("types", "graph_io_types"):
                    cur.setdefault(k, {}).update(v)
                else:
                    cur[k] = v
    return out


# OpenVINO: conditions read from data_ops.cc / capability.cc (all devices) and the
# claimed-then-failed cases measured on the CPU device.
_OV_SOURCE: dict[tuple[str, str], dict[str, Any]] = {
    ("ai.onnx", "Reshape"): {
        "constraints": [
            _c(
                "constant_input",
                "OpenVINO takes a lone Reshape only when its target shape is a constant",
                "ov-capability",
                inputs=[1],
                graph_nodes_at_most=1,
            )
        ]
    },
    ("ai.onnx", "RoiAlign"): {
        "constraints": [
            _c(
                "always",
                "OpenVINO takes a lone RoiAlign only with float16 data and rois",
                "ov-capability",
                graph_nodes_at_most=1,
            )
        ]
    },
    ("ai.onnx", "Unsqueeze"): {
        "constraints": [
            _c(
                "constant_input",
                "OpenVINO cannot build a static graph when Unsqueeze's axes come from a tensor",
                "ov-data-ops",
                inputs=[1],
            )
        ]
    },
    ("ai.onnx", "ReduceMax"): {
        "types": {
            "in:0": [
                "bool",
                "float",
                "float16",
                "int16",
                "int32",
                "int64",
                "int4",
                "uint16",
                "uint32",
                "uint4",
            ]
        }
    },
    ("ai.onnx", "Resize"): {
        "constraints": [
            _c(
                "attribute",
                "OpenVINO does not support this coordinate_transformation_mode",
                "ov-data-ops",
                name="coordinate_transformation_mode",
                forbidden=["tf_crop_and_resize", "half_pixel_symmetric"],
            ),
            _c(
                "attribute",
                "OpenVINO does not support anti-aliased linear/cubic Resize",
                "ov-data-ops",
                name="antialias",
                allowed=[0],
            ),
            _c(
                "attribute",
                "OpenVINO does not support exclude_outside=1",
                "ov-data-ops",
                name="exclude_outside",
                allowed=[0],
            ),
        ]
    },
}
_OV_MEASURED: dict[tuple[str, str], dict[str, Any]] = {
    # the com.microsoft Q/DQ that onnxruntime.quantization writes for 16-bit QDQ: OpenVINO
    # takes them, and the whole QDQ graph with them (uint8, int8, uint16, int16 measured)
    **{
        ("com.microsoft", op): {
            "add": {"domain": "com.microsoft", "op": op, "provenance": "ov-sessions"}
        }
        for op in ("QuantizeLinear", "DequantizeLinear")
    },
    ("ai.onnx", "Attention"): {
        "add": {"domain": "ai.onnx", "op": "Attention", "provenance": "ov-data-ops"},
        "constraints": [
            _c(
                "always",
                "OpenVINO's ONNX frontend rejects the opset-23 Attention op at "
                "compile time, and the EP has no fallback",
                "ov-measured",
                effect="fails_after_claim",
            )
        ],
    },
    ("ai.onnx", "BatchNormalization"): {
        "constraints": [
            _c(
                "attribute",
                "OpenVINO fails to compile BatchNormalization in training mode",
                "ov-measured",
                effect="fails_after_claim",
                name="training_mode",
                allowed=[0],
            )
        ]
    },
    ("ai.onnx", "ScatterND"): {
        "constraints": [
            _c(
                "attribute",
                "OpenVINO fails to compile ScatterND with a reduction",
                "ov-measured",
                effect="fails_after_claim",
                name="reduction",
                allowed=["none"],
            )
        ]
    },
    ("ai.onnx", "QuantizeLinear"): {
        "constraints": [
            _c(
                "attribute",
                "OpenVINO fails to compile blocked quantization (block_size)",
                "ov-measured",
                effect="fails_after_claim",
                name="block_size",
                allowed=[0],
            )
        ]
    },
    ("ai.onnx", "If"): {
        "constraints": [
            _c(
                "known_shape",
                "an If whose outputs have dynamic rank fails to compile in "
                "OpenVINO, with no fallback",
                "ov-measured",
                effect="fails_after_claim",
                outputs=[0],
            )
        ]
    },
}

OVERLAYS: dict[str, dict[tuple[str, str], dict[str, Any]]] = {
    "qnn-htp": _merge_overlays(
        _QNN_COMMON, _QNN_MEASURED, _QNN_CONTRIB_QDQ, _QNN_INT_TYPES, _QNN_HTP_ONLY
    ),
    "qnn-cpu": _merge_overlays(_QNN_COMMON, _QNN_MEASURED, _QNN_CONTRIB_QDQ),
    "qnn-gpu": _merge_overlays(_QNN_COMMON, _QNN_MEASURED, _QNN_CONTRIB_QDQ),
    "openvino-cpu": _merge_overlays(_OV_SOURCE, _OV_MEASURED),
    "openvino-gpu": _OV_SOURCE,
    "openvino-npu": _OV_SOURCE,
}


# CoreML / NNAPI: the per-op notes of the op lists in the onnxruntime wheel, restated as
# constraints (provenance: the list itself, "ort-mobile-helpers").
def _m(kind: str, reason: str, **kw: Any) -> dict[str, Any]:
    return _c(kind, reason, "ort-mobile-helpers", **kw)


_POOL_2D = {
    "constraints": [
        _m("max_rank", "only 2-D pooling (rank-4 input)", value=4, inputs=[0]),
        _m("min_rank", "only 2-D pooling (rank-4 input)", value=4, inputs=[0]),
    ]
}
_CONV_12D = _m("max_rank", "only 1-D and 2-D convolution", value=4, inputs=[0])
_COREML_COMMON: dict[tuple[str, str], dict[str, Any]] = {
    ("ai.onnx", "AveragePool"): _POOL_2D,
    ("ai.onnx", "MaxPool"): _POOL_2D,
    ("ai.onnx", "GlobalAveragePool"): _POOL_2D,
    ("ai.onnx", "GlobalMaxPool"): _POOL_2D,
    ("ai.onnx", "Gemm"): {
        "constraints": [_m("constant_input", "B must be a constant", inputs=[1])]
    },
    ("ai.onnx", "Pow"): {"types": {"in:0": ["float"], "in:1": ["float"]}},
    ("ai.onnx", "Slice"): {
        "constraints": [
            _m(
                "constant_input",
                "starts, ends, axes and steps must be constants",
                inputs=[1, 2, 3, 4],
            )
        ]
    },
    ("ai.onnx", "Split"): {
        "constraints": [_m("constant_input", "the split sizes must be a constant", inputs=[1])]
    },
}
_COREML_MLPROGRAM = _merge_overlays(
    _COREML_COMMON,
    {
        ("ai.onnx", "Conv"): {
            "constraints": [
                _CONV_12D,
                _m("constant_input", "the bias must be a constant", inputs=[2]),
            ]
        },
        ("ai.onnx", "ConvTranspose"): {
            "constraints": [
                _m("constant_input", "weights and bias must be constants", inputs=[1, 2]),
                _m(
                    "attribute",
                    "SAME_UPPER/SAME_LOWER padding is not supported",
                    name="auto_pad",
                    forbidden=["SAME_UPPER", "SAME_LOWER"],
                ),
                _m("attribute", "output_shape is not supported", name="output_shape", absent=True),
            ]
        },
        ("ai.onnx", "And"): {"types": {"in:0": ["bool"], "in:1": ["bool"]}},
        ("ai.onnx", "GatherND"): {
            "constraints": [_m("attribute", "batch_dims must be 0", name="batch_dims", allowed=[0])]
        },
        ("ai.onnx", "GridSample"): {
            "constraints": [
                _m("max_rank", "4-D input only", value=4, inputs=[0]),
                _m("min_rank", "4-D input only", value=4, inputs=[0]),
            ]
        },
        ("ai.onnx", "Where"): {
            "types": {"in:1": ["float", "float16"], "in:2": ["float", "float16"]}
        },
    },
)
_COREML_NN = _merge_overlays(
    _COREML_COMMON,
    {
        ("ai.onnx", "Conv"): {
            "constraints": [
                _CONV_12D,
                _m("constant_input", "weights and bias must be constants", inputs=[1, 2]),
            ]
        },
        ("ai.onnx", "DepthToSpace"): {
            "constraints": [
                _m("attribute", "only DCR mode", name="mode", allowed=["DCR"], default="DCR")
            ]
        },
        ("ai.onnx", "MatMul"): {
            "constraints": [_m("constant_input", "B must be a constant", inputs=[1])]
        },
        ("ai.onnx", "Pad"): {
            "constraints": [
                _m(
                    "attribute",
                    "only constant-mode padding",
                    name="mode",
                    allowed=["constant"],
                    default="constant",
                ),
                _m(
                    "constant_input",
                    "pads, constant_value and axes must be constants",
                    inputs=[1, 2, 3],
                ),
            ]
        },
        ("ai.onnx", "PRelu"): {
            "constraints": [_m("constant_input", "the slope must be a constant", inputs=[1])]
        },
        ("ai.onnx", "Resize"): {
            "constraints": [
                _m("max_rank", "4-D input only", value=4, inputs=[0]),
                _m(
                    "attribute",
                    "only asymmetric coordinate transformation",
                    name="coordinate_transformation_mode",
                    allowed=["asymmetric"],
                    default="half_pixel",
                ),
                _m(
                    "attribute",
                    "only linear or nearest mode",
                    name="mode",
                    allowed=["linear", "nearest"],
                    default="nearest",
                ),
            ]
        },
        ("ai.onnx", "Shape"): {
            "constraints": [
                _m("attribute", "a non-default start is not supported", name="start", allowed=[0]),
                _m("attribute", "end is not supported", name="end", absent=True),
            ]
        },
    },
)
_QDQ_CONST = _m(
    "constant_input", "quantization scales and zero points must be constants", inputs=[1, 2]
)
_NNAPI: dict[tuple[str, str], dict[str, Any]] = {
    ("ai.onnx", "AveragePool"): _POOL_2D,
    ("ai.onnx", "MaxPool"): _POOL_2D,
    ("ai.onnx", "GlobalAveragePool"): _POOL_2D,
    ("ai.onnx", "GlobalMaxPool"): _POOL_2D,
    ("ai.onnx", "Conv"): {
        "constraints": [
            _m("max_rank", "only 2-D convolution", value=4, inputs=[0]),
            _m("constant_input", "weights and bias must be constants", inputs=[1, 2]),
        ]
    },
    ("ai.onnx", "DepthToSpace"): {
        "constraints": [
            _m("attribute", "only DCR mode", name="mode", allowed=["DCR"], default="DCR")
        ]
    },
    ("ai.onnx", "DequantizeLinear"): {"constraints": [_QDQ_CONST]},
    ("ai.onnx", "QuantizeLinear"): {"constraints": [_QDQ_CONST]},
    ("ai.onnx", "Pad"): {
        "constraints": [
            _m(
                "attribute",
                "only constant-mode padding",
                name="mode",
                allowed=["constant"],
                default="constant",
            ),
            _m("constant_input", "pads and constant_value must be constants", inputs=[1, 2]),
        ]
    },
    ("ai.onnx", "Resize"): {
        "constraints": [_m("max_rank", "only 2-D resize", value=4, inputs=[0])]
    },
    ("ai.onnx", "Split"): {
        "constraints": [_m("constant_input", "the split sizes must be a constant", inputs=[1])]
    },
    ("ai.onnx", "Squeeze"): {
        "constraints": [_m("constant_input", "axes must be a constant", inputs=[1])]
    },
    ("ai.onnx", "Unsqueeze"): {
        "constraints": [_m("constant_input", "axes must be a constant", inputs=[1])]
    },
    ("ai.onnx", "QLinearMatMul"): {
        "constraints": [
            _m(
                "constant_input",
                "quantization scales and zero points must be constants",
                inputs=[1, 2, 4, 5, 6, 7],
            )
        ]
    },
    ("ai.onnx", "QLinearConv"): {
        "constraints": [
            _m("max_rank", "only 2-D convolution", value=4, inputs=[0]),
            _m(
                "constant_input",
                "weights, bias, scales and zero points must be constants",
                inputs=[1, 2, 3, 4, 5, 6, 7, 8],
            ),
        ]
    },
}
OVERLAYS["coreml-mlprogram"] = _COREML_MLPROGRAM
OVERLAYS["coreml-neuralnetwork"] = _COREML_NN
OVERLAYS["nnapi"] = _NNAPI


# TensorRT / NvTensorRtRtx: the "Restrictions" column of onnx-tensorrt docs/operators.md,
# restated (provenance "onnx-tensorrt-operators").
def _t(kind: str, reason: str, **kw: Any) -> dict[str, Any]:
    return _c(kind, reason, "onnx-tensorrt-operators", **kw)


_TRT_AXES = {"constraints": [_t("constant_input", "TensorRT needs axes as a constant", inputs=[1])]}
_TRT: dict[tuple[str, str], dict[str, Any]] = {
    **{
        ("ai.onnx", op): _TRT_AXES
        for op in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
            "ReduceSum",
            "ReduceSumSquare",
            "Squeeze",
            "Unsqueeze",
            "CumSum",
        )
    },
    ("ai.onnx", "Slice"): {
        "constraints": [
            _t("constant_input", "TensorRT needs Slice's axes as a constant", inputs=[3])
        ]
    },
    ("ai.onnx", "Pad"): {
        "constraints": [_t("constant_input", "TensorRT needs Pad's axes as a constant", inputs=[3])]
    },
    ("ai.onnx", "AveragePool"): {
        "constraints": [
            _t("max_rank", "TensorRT pools in 2-D or 3-D only", value=5, inputs=[0]),
            _t("min_rank", "TensorRT pools in 2-D or 3-D only", value=4, inputs=[0]),
            _t(
                "attribute",
                "TensorRT pools only with dilations of 1",
                name="dilations",
                allowed=[[1, 1], [1, 1, 1]],
            ),
        ]
    },
    ("ai.onnx", "Resize"): {
        "constraints": [
            _t(
                "attribute",
                "TensorRT resizes only in nearest or linear mode",
                name="mode",
                allowed=["nearest", "linear"],
                default="nearest",
            ),
            _t(
                "attribute",
                "TensorRT does not support this coordinate_transformation_mode",
                name="coordinate_transformation_mode",
                allowed=[
                    "half_pixel",
                    "pytorch_half_pixel",
                    "tf_half_pixel_for_nn",
                    "asymmetric",
                    "align_corners",
                ],
                default="half_pixel",
            ),
            _t("attribute", "TensorRT has no anti-aliased Resize", name="antialias", allowed=[0]),
            _t(
                "attribute",
                "TensorRT supports only the stretch aspect-ratio policy",
                name="keep_aspect_ratio_policy",
                allowed=["stretch"],
            ),
        ]
    },
}
OVERLAYS["tensorrt"] = _TRT
OVERLAYS["nvtensorrtrtx"] = _TRT


_RNN_LAYOUT = _c(
    "attribute",
    "the CPU kernel rejects batch-first recurrent layouts (layout=1) when the session starts",
    "ort-cpu-measured",
    effect="fails_after_claim",
    name="layout",
    allowed=[0],
)
OVERLAYS["cpu"] = {("ai.onnx", op): {"constraints": [_RNN_LAYOUT]} for op in ("GRU", "LSTM", "RNN")}
# Measured (rules/measured/cpu.json, onnxruntime 1.32.0): SwiGLU-28 has no CPU kernel and its
# function body is not run either ("Could not find an implementation for Swish(24)"), although
# a lone Swish-24 node is expanded and runs; all 5 SwiGLU node test cases fail.
OVERLAYS["cpu"][("ai.onnx", "SwiGLU")] = {"remove": True}


def apply_overlay(profile_id: str, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge the curated overlay for ``profile_id`` into generated op entries."""
    overlay = OVERLAYS.get(profile_id, {})
    extras = OV_EXTRAS.get(profile_id, {})
    by_key = {(o["domain"], o["op"]): o for o in ops}
    _apply_measured(profile_id, by_key)
    for op in extras.get("only_in_model", []):
        if ("ai.onnx", op) in by_key:
            by_key[("ai.onnx", op)].setdefault("constraints", []).append(
                _c(
                    "always",
                    "OpenVINO does not take this op when it is alone in a model of at most "
                    "3 nodes (it only works as an intermediate node)",
                    "ov-capability",
                    graph_nodes_at_most=3,
                )
            )
    for key, change in overlay.items():
        entry = by_key.get(key)
        if change.get("remove"):
            by_key.pop(key, None)
            continue
        if entry is None:
            if "add" not in change:
                continue
            entry = copy.deepcopy(change["add"])
            by_key[key] = entry
        if "versions" in change:
            entry["versions"] = copy.deepcopy(change["versions"])
        for field in ("types", "graph_io_types"):
            if field in change:
                entry.setdefault(field, {}).update(change[field])
        for c in change.get("constraints", []):
            entry.setdefault("constraints", []).append(copy.deepcopy(c))
    return list(by_key.values())


def _apply_measured(profile_id: str, by_key: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Ops and element types fitted to the probe measurement (overlays/<id>.measured.json)."""
    import json
    from pathlib import Path

    path = Path(__file__).with_name("overlays") / f"{profile_id}.measured.json"
    if not path.exists():
        return
    fit = json.loads(path.read_text(encoding="utf-8"))
    prov = MEASURED_PROV.get(profile_id)
    for domain, op in fit["add_ops"]:
        if (domain, op) not in by_key and prov:
            by_key[(domain, op)] = {"domain": domain, "op": op, "provenance": prov}
    for domain, op in fit["remove_ops"]:
        by_key.pop((domain, op), None)
    for field in ("types", "graph_io_types"):
        for key, slots in fit.get(field, {}).items():
            domain, op = key.split("::")
            entry = by_key.get((domain, op))
            if entry is not None:
                entry.setdefault(field, {}).update(slots)


# Provenance id of the measurement behind each fitted profile.
MEASURED_PROV = {
    "qnn-htp": "qnn-measured",
    "openvino-cpu": "ov-measured",
    "cpu": "ort-cpu-measured",
}


def header_extras(profile_id: str) -> dict[str, Any]:
    """Header fields computed from a source (OpenVINO dtype sets and scalar rules)."""
    extras = OV_EXTRAS.get(profile_id, {})
    return {k: v for k, v in extras.items() if k in ("tensor_dtypes", "global_constraints")}
