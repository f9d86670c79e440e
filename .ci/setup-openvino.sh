#!/usr/bin/env bash
# Create (or reuse) the separate venv that runs the OpenVINO EP for
# `onnxlint probe --ep openvino` and `--confirm --ep openvino`.
# onnxruntime-openvino ships its own `onnxruntime` module, so it cannot share
# the main venv with the plain onnxruntime wheel. Idempotent: a venv that
# already imports the pinned versions is left alone.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${ONNXLINT_OPENVINO_VENV:-.venv-openvino}"
PY="${PYTHON:-python3}"
ORT_OV_VERSION="1.24.1"
ONNX_VERSION="1.23.2"

start=$(date +%s)
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$ORT_OV_VERSION" "$ONNX_VERSION" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version
import onnxruntime as ort
ok = (
    version("onnxruntime-openvino") == sys.argv[1]
    and version("onnx") == sys.argv[2]
    and "OpenVINOExecutionProvider" in ort.get_available_providers()
)
sys.exit(0 if ok else 1)
PYEOF
then
  echo "setup-openvino: $VENV already up to date"
else
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet \
    "onnxruntime-openvino==$ORT_OV_VERSION" "onnx==$ONNX_VERSION"
  "$VENV/bin/python" -c "import onnxruntime as ort; p = ort.get_available_providers(); assert 'OpenVINOExecutionProvider' in p, p; print('setup-openvino: providers', p)"
fi
echo "setup-openvino: done in $(( $(date +%s) - start )) s"
