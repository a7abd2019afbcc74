#!/usr/bin/env bash
# Runs the numerics tests once per kernel path this CPU can take (issue 20): OpenBLAS's GEMM kernel family
# (OPENBLAS_CORETYPE: Haswell = AVX2, SkylakeX = AVX-512) times the runtime's own vector clones
# (PTRAIN_CPU_ISA: baseline, avx2, avx512, avx512bf16; docs/Runtime.md, "Kernel paths"). One machine with AVX-512
# then covers what an AVX2-only machine and an AVX-512 machine would run. Each forced OpenBLAS core is checked to be the one
# OpenBLAS loads (OPENBLAS_VERBOSE=2 prints "Core: NAME"; an unknown name silently falls back to the CPU's own).
# Paths the CPU lacks are left out and listed. Ends with one line per path and exits non-zero if any failed.
#
# Usage: bash scripts/test-kernel-paths.sh [build-dir] [ctest -R regex]
#   PATHS="Haswell:avx2 SkylakeX:avx512"  only these core:isa pairs (default: every supported pair)
# The default regex: the runtime's and interpreter's unit tests and the CPU end-to-end tests that compare numbers
# across rank counts, against PyTorch or against onnxruntime. Pass '.' for the whole suite (about 15 min a path).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
REGEX=${2:-'^(CpuIsa|CastBf16|Gelu|Softmax|CrossEntropy|Gemm|Attention|LayerNorm|Optimizer|ModelOps)|^codegen-cpu-(gpt|tensor-parallel|export-tp|vocab-parallel|data-parallel|pipeline|loss-options|ort-forward|model-ops|clip-sgd|gemm-accumulate|gemm-heads|layer-norm-stats)$'}
LOGS="$BUILD_DIR/kernel-paths"
mkdir -p "$LOGS"

flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
cores=(Haswell) isas=(baseline)
if has avx2 && has fma; then isas+=(avx2); fi # the avx2 path is AVX2 plus FMA
if has avx512f && has avx512dq && has avx512vl && has avx512bw; then cores+=(SkylakeX) isas+=(avx512); fi
if has avx512f && has avx512dq && has avx512vl && has avx512bw && has avx512_bf16; then isas+=(avx512bf16); fi
all=()
for c in "${cores[@]}"; do for i in "${isas[@]}"; do all+=("$c:$i"); done; done
has avx2 || all=(":baseline") # OpenBLAS's Haswell kernels need AVX2: the CPU's own core only
read -r -a pairs <<< "${PATHS:-${all[*]}}"
echo "kernel paths on $(lscpu | sed -n 's/^Model name: *//p'): ${pairs[*]}"
[ -n "${PATHS:-}" ] && echo "  (PATHS set; supported here: ${all[*]})"

summary=() status=0
for pair in "${pairs[@]}"; do
  core=${pair%%:*} isa=${pair##*:}
  if [ -n "$core" ]; then
    export OPENBLAS_CORETYPE=$core
    got=$(OPENBLAS_VERBOSE=2 /usr/bin/python3 -c 'import ctypes; ctypes.CDLL("libopenblas.so.0")' 2>&1 |
          sed -n 's/^Core: //p' | head -1)
    if [ "$got" != "$core" ]; then
      echo "test-kernel-paths: OPENBLAS_CORETYPE=$core loads OpenBLAS core '$got'" >&2
      summary+=("$pair: OpenBLAS did not take the core") status=1
      continue
    fi
  else
    unset OPENBLAS_CORETYPE
  fi
  export PTRAIN_CPU_ISA=$isa
  log="$LOGS/${core:-native}-$isa.log"
  start=$(date +%s)
  if ctest --test-dir "$BUILD_DIR" -R "$REGEX" -j2 --output-on-failure > "$log" 2>&1; then rc=0; else rc=1; status=1; fi
  line=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
  summary+=("OPENBLAS_CORETYPE=${core:-(cpu)} PTRAIN_CPU_ISA=$isa: ${line:-no summary (see $log)} ($(( $(date +%s) - start )) s)")
  echo "${summary[-1]}"
  if [ "$rc" != 0 ]; then
    while read -r l; do summary+=("    failed: $l"); echo "    failed: $l"; done < <(grep -E '^\s+[0-9]+ - ' "$log")
  fi
done
echo "== kernel paths summary ($(lscpu | sed -n 's/^Model name: *//p'); logs in $LOGS)"
printf '%s\n' "${summary[@]}"
exit $status
