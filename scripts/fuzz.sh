#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/Fuzzing.md) in a clang build directory and runs each for a while.
# Usage: bash scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--jobs J] [TARGET...]
#   --seconds N     time per target (default 600); --smoke is --seconds 5
#   --build-dir DIR the clang build (default build-fuzz; configured once with CC=clang-22 CXX=clang++-22
#                   -DPTRAIN_FUZZ=ON, CUDA off)
#   --no-build      use DIR as it is
#   TARGET          onnx-wire import-onnx checkpoint checkpoint-manifest rendezvous (libFuzzer) and
#                   plan plan-elf manifest (atheris, .venv); default: all
# One target at a time, under `nice -n 19`, with a per-input timeout (-timeout=10 s) and an RSS limit
# (-rss_limit_mb=2048). Each target's corpus grows in DIR/fuzz-corpus/<target> across runs, seeded from the
# test inputs (fuzz/make_seeds.py); a crash, hang or out-of-memory input lands in DIR/fuzz-artifacts/<target>/
# and makes the script exit 1. Logs: DIR/fuzz-logs/<target>.log. The last line per target is libFuzzer's
# summary (execs, coverage, corpus) as bench/fuzz/README.md records it.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Python targets and the seed maker import ptrain from the source tree (docs/PythonPackage.md).
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

SECONDS_PER_TARGET=600
BUILD_DIR=build-fuzz
BUILD=1
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER_TARGET=$2; shift 2 ;;
    --smoke) SECONDS_PER_TARGET=5; shift ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
NATIVE=(onnx-wire import-onnx checkpoint checkpoint-manifest rendezvous)
PYTHON=(plan plan-elf manifest)
if [ "${#TARGETS[@]}" -eq 0 ]; then TARGETS=("${NATIVE[@]}" "${PYTHON[@]}"); fi

if [ "$BUILD" = 1 ]; then
  for tool in clang-22 clang++-22; do
    if ! command -v "$tool" > /dev/null; then
      echo "fuzz.sh: $tool not found (apt-get install clang-22 libclang-rt-22-dev; scripts/setup.sh)" >&2
      # CTest's fuzz-smoke skips (77) on a developer's machine without clang; CI installs it (scripts/setup.sh).
      if [ "${CI:-}" = true ]; then exit 1; else exit 77; fi
    fi
  done
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir -DPython3_EXECUTABLE=/usr/bin/python3 \
      -DPTRAIN_FUZZ=ON -DPTRAIN_ENABLE_CUDA=OFF -DBUILD_TESTING=OFF
  fi
  # Only the targets asked for (the importer's pulls in the dialect and libMLIR: minutes).
  build=(ptrain-fuzz-checkpoint-seeds)
  for t in "${TARGETS[@]}"; do
    case " ${NATIVE[*]} " in *" $t "*) build+=("ptrain-fuzz-$t") ;; esac
  done
  ninja -C "$BUILD_DIR" "${build[@]}"
fi

SEEDS="$BUILD_DIR/fuzz-seeds"
/usr/bin/python3 fuzz/make_seeds.py "$SEEDS" "$BUILD_DIR/bin"
lscpu | grep 'Model name' || true

failed=0
for t in "${TARGETS[@]}"; do
  corpus="$BUILD_DIR/fuzz-corpus/$t" artifacts="$BUILD_DIR/fuzz-artifacts/$t" log="$BUILD_DIR/fuzz-logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  opts=(-timeout=10 -rss_limit_mb=2048 -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1
        -artifact_prefix="$artifacts/")
  case " ${PYTHON[*]} " in
    *" $t "*) cmd=(.venv/bin/python fuzz/python/fuzz_checks.py "$t") ;;
    *) cmd=("$BUILD_DIR/bin/ptrain-fuzz-$t") ;;
  esac
  # The wire scanner's seeds hold large weights; mutating 64 KiB prefixes keeps it fast.
  if [ "$t" = onnx-wire ]; then opts+=(-max_len=65536); fi
  seeds=()
  if [ -d "$SEEDS/$t" ]; then seeds=("$SEEDS/$t"); fi
  echo "fuzz.sh: $t for ${SECONDS_PER_TARGET} s: ${cmd[*]} ${opts[*]} $corpus ${seeds[*]}"
  start=$(date +%s)
  rc=0
  nice -n 19 "${cmd[@]}" "${opts[@]}" "$corpus" "${seeds[@]}" > "$log" 2>&1 || rc=$?
  found=$(find "$artifacts" -type f | wc -l)
  echo "fuzz.sh: $t: rc $rc, $(( $(date +%s) - start )) s, $found artifact(s); $(grep -E '^#[0-9]+.*(DONE|pulse|REDUCE|NEW)' "$log" | tail -1)"
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | tr '\n' ' ' || true
  echo
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
    failed=1
    grep -E 'ERROR|SUMMARY|property broken|Traceback|Error' "$log" | head -5 || true
  fi
done
exit $failed
