#!/usr/bin/env bash
# Set-up, build and every test (lit + GoogleTest, all under CTest). Ends with CTest's summary.
# Usage: bash scripts/test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}

bash scripts/build.sh "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
