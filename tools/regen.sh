#!/usr/bin/env bash
# Regenerate every shipped EP profile from its upstream sources.
#
#   tools/regen.sh ORT_GIT_DIR TRT_GIT_DIR
#
# ORT_GIT_DIR: a clone (bare is fine) of onnxruntime/onnxruntime-qnn, which carries the ORT
#              tree and its full history (the ROCm EP is read from the commit before its
#              deletion); TRT_GIT_DIR: a clone of onnx/onnx-tensorrt.
# Upstream files are extracted to a temporary folder with `git show` and deleted afterwards;
# only the facts they hold end up in rules/facts/sources/ (and the profiles built from them
# in rules/eps/). Without the clones, `gen_profiles.py build` rebuilds every profile from
# rules/facts/ alone. The QNN HTP overlay fitted to the measurement
# (rules/facts/fitted/qnn-htp.json) is made separately with:
#   gen_profiles.py fit --measured rules/measured/qnn.json --profile qnn-htp --skip-dtypes double
set -euo pipefail
ORT=${1:?ORT git dir}
TRT=${2:?onnx-tensorrt git dir}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python}
ORT_COMMIT=cee6c0d91e583d43f5ecef6391e93c19b4042c0f
ROCM_COMMIT=4fcc81aed22ad8488025260df11a404df4f56d4a
TRT_COMMIT=96e781103cfc4adf4a6bb557e94bac8e693f6f4c
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

show() { git --git-dir="$1" show "$2:$3" >"$TMP/$4"; }
P=onnxruntime/core/providers
show "$ORT" $ORT_COMMIT docs/OperatorKernels.md OperatorKernels.md
show "$ORT" $ORT_COMMIT $P/openvino/ov_versions/data_ops.cc data_ops.cc
show "$ORT" $ORT_COMMIT $P/qnn/builder/op_builder_factory.cc qnn_factory.cc
show "$ORT" $ORT_COMMIT $P/migraphx/migraphx_execution_provider.cc migraphx.cc
show "$ORT" $ORT_COMMIT $P/webgpu/webgpu_execution_provider.cc webgpu.cc
show "$ORT" $ORT_COMMIT onnxruntime/contrib_ops/webgpu/webgpu_contrib_kernels.cc webgpu_contrib.cc
show "$ORT" $ORT_COMMIT $P/xnnpack/xnnpack_execution_provider.cc xnnpack.cc
show "$ORT" $ORT_COMMIT $P/cann/cann_execution_provider.cc cann.cc
show "$ORT" $ROCM_COMMIT $P/rocm/rocm_execution_provider.cc rocm.cc
show "$ORT" $ROCM_COMMIT onnxruntime/contrib_ops/rocm/rocm_contrib_kernels.cc rocm_contrib.cc
show "$TRT" $TRT_COMMIT docs/operators.md trt_operators.md

G=("$PY" "$HERE/gen_profiles.py")
R=(--repo onnxruntime/onnxruntime-qnn --commit $ORT_COMMIT --version "onnxruntime 1.25.0 (main)" --date 2026-03-13)
"${G[@]}" cpu
"${G[@]}" mobile
"${G[@]}" vitisai
"${G[@]}" kernels-md --src "$TMP/OperatorKernels.md" "${R[@]}"
"${G[@]}" openvino --src "$TMP/data_ops.cc" "${R[@]}"
"${G[@]}" qnn --src "$TMP/qnn_factory.cc" "${R[@]}"
"${G[@]}" migraphx --src "$TMP/migraphx.cc" "${R[@]}"
"${G[@]}" registry --src "$TMP/webgpu.cc" "$TMP/webgpu_contrib.cc" --profile webgpu \
  --ep-const kWebGpuExecutionProvider --prov-id ort-webgpu-kernels \
  --file-label "onnxruntime/core/providers/webgpu/webgpu_execution_provider.cc + onnxruntime/contrib_ops/webgpu/webgpu_contrib_kernels.cc" \
  "${R[@]}"
"${G[@]}" registry --src "$TMP/xnnpack.cc" --profile xnnpack --ep-const kXnnpackExecutionProvider \
  --prov-id ort-xnnpack-kernels --file-label onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc "${R[@]}"
"${G[@]}" registry --src "$TMP/cann.cc" --profile cann --ep-const kCannExecutionProvider \
  --prov-id ort-cann-kernels --file-label onnxruntime/core/providers/cann/cann_execution_provider.cc "${R[@]}"
"${G[@]}" registry --src "$TMP/rocm.cc" "$TMP/rocm_contrib.cc" --profile rocm --ep-const kRocmExecutionProvider \
  --prov-id ort-rocm-kernels \
  --file-label "onnxruntime/core/providers/rocm/rocm_execution_provider.cc + onnxruntime/contrib_ops/rocm/rocm_contrib_kernels.cc" \
  --repo microsoft/onnxruntime --commit $ROCM_COMMIT \
  --version "onnxruntime 1.23.0-dev (last commit before the ROCm EP was deleted, read from the history carried by onnxruntime/onnxruntime-qnn)" \
  --date 2025-06-15
"${G[@]}" tensorrt --src "$TMP/trt_operators.md" --repo onnx/onnx-tensorrt --commit $TRT_COMMIT \
  --version "TensorRT 10.0 parser docs" --date 2024-06-17
"${G[@]}" index
