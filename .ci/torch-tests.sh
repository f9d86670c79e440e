#!/usr/bin/env bash
# Torch step of CI: install the torch CPU wheel into the CI venv, then run the torch-marked
# tests (onnxlint.torch against the real exporters, and the example training repository
# end to end). Run after .ci/run has created .venv; prints how long each part took.
#
#   bash .ci/torch-tests.sh            # uses .venv
#   VENV=/path/to/venv bash .ci/torch-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
PY="${VENV:-.venv}/bin/python"

t0=$(date +%s)
# torch==2.13.0 resolves to the CPU wheel through pip's configuration (find-links); onnxscript
# is what the dynamo exporter needs. Never a CUDA build: checked right after.
"$PY" -m pip install --quiet "torch==2.13.0" "onnxscript>=0.3"
"$PY" - <<'PYCHECK'
import sys

import torch

if torch.version.cuda is not None:
    sys.exit(f"ci: torch {torch.__version__} is a CUDA build; install the CPU wheel")
from importlib.metadata import distributions

cuda = sorted(d.metadata["Name"] for d in distributions() if d.metadata["Name"].startswith("nvidia-"))
if cuda:
    sys.exit(f"ci: CUDA packages were pulled in: {', '.join(cuda)}")
print(f"ci: torch {torch.__version__} (CPU build)")
PYCHECK
t1=$(date +%s)
echo "ci: torch install took $(( t1 - t0 )) s"

# the torch-marked tests, including the example training repo run end to end
"$PY" -m pytest -m torch tests -q -p no:cacheprovider
t2=$(date +%s)
echo "ci: torch tests took $(( t2 - t1 )) s (install + tests: $(( t2 - t0 )) s)"
