#!/usr/bin/env bash
# Creates .venv (git-ignored) with the pinned packages of python/requirements-test.txt: onnx >= 1.15 and
# onnxruntime for the tests that need more than Debian's python3-onnx. Idempotent: pip runs again only when
# the requirements changed (.venv/requirements.installed keeps the last installed copy).
# Usage: bash scripts/setup-python.sh   (scripts/setup.sh calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
REQ=python/requirements-test.txt
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! cmp -s "$REQ" .venv/requirements.installed; then
  echo "setup-python: installing $REQ into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r "$REQ"
  cp "$REQ" .venv/requirements.installed
else
  echo "setup-python: .venv up to date"
fi
