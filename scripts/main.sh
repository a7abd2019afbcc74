#!/usr/bin/env bash
# Set-up, build, and the main job on the bundled example: ptrain-opt verifies and prints a compressed
# two-stage pipeline training step (examples/optimus-cc-step.mlir), then shows that the canonicalizer keeps
# every communication and the codec state updates.
# Usage: bash scripts/main.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}

bash scripts/build.sh "$BUILD_DIR" > /dev/null
"$BUILD_DIR/bin/ptrain-opt" examples/optimus-cc-step.mlir --canonicalize --cse
