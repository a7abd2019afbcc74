#!/usr/bin/env bash
# Set-up, build and every test (lit + GoogleTest, all under CTest). Ends with CTest's summary.
# Usage: bash scripts/test.sh [build-dir]
#        bash scripts/test.sh --sanitize [build-dir]   (default build-asan: ASan + UBSan build of the CPU target,
#                                                      the same tests; docs/Sanitizers.md)
set -euo pipefail
cd "$(dirname "$0")/.."
CMAKE_OPTIONS=()
if [ "${1:-}" = "--sanitize" ]; then
  shift
  BUILD_DIR=${1:-build-asan}
  CMAKE_OPTIONS=(-DPTRAIN_SANITIZE=address,undefined -DPTRAIN_ENABLE_CUDA=OFF)
  # build.sh configures a folder once: an existing folder must be a sanitized one.
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] && ! grep -q '^PTRAIN_SANITIZE:STRING=address,undefined$' \
      "$BUILD_DIR/CMakeCache.txt"; then
    echo "scripts/test.sh --sanitize: $BUILD_DIR is configured without -DPTRAIN_SANITIZE=address,undefined;" \
      "pass another folder or remove it" >&2
    exit 1
  fi
else
  BUILD_DIR=${1:-build}
fi

bash scripts/build.sh "$BUILD_DIR" "${CMAKE_OPTIONS[@]}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
