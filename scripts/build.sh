#!/usr/bin/env bash
# Configures (once) and builds ptrain with Ninja and ccache. Installs system packages first.
# Usage: bash scripts/build.sh [build-dir] [cmake-option...]     (default: build; the options apply when the
#        folder is first configured, e.g. -DPTRAIN_SANITIZE=address,undefined from scripts/test.sh --sanitize)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
shift || true

bash scripts/setup.sh

# ccache keys on absolute paths; with the checkout as base directory, clones in other folders (CI's fresh
# clone) hit the same cache entries (ENV.md).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DPython3_EXECUTABLE=/usr/bin/python3 "$@"
fi
ninja -C "$BUILD_DIR"
