#!/usr/bin/env bash
# The CUDA checks on a machine with one GPU (issue 9), in under 6 minutes on 16 cores with the project's
# packages installed (scripts/setup.sh): configures build-gpu with PTRAIN_ENABLE_CUDA=ON (sm_80 and sm_90),
# builds only the CUDA runtime, its tests and the kernel benchmark, runs the tests (the GPU codec kernels
# against the CPU's, NCCL on one rank with self send/recv and the watchdog, and the compiled step of the
# bundled GPT: --emit-cuda + nvcc against the CPU step, docs/CodegenCuda.md; on a machine with 2 GPUs also
# the pp2 plan over NCCL trained by ptrain-run against the CPU plan's losses), then the benchmark.
# Usage: bash bench/gpu/run.sh [build-dir]      (default: build-gpu)
# Output: the CTest summary and the benchmark's Markdown tables (copy them into bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build-gpu}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if ! nvidia-smi -L; then
  echo "bench/gpu/run.sh: no GPU visible (nvidia-smi failed)" >&2
  exit 77
fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DPTRAIN_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="80;90"
fi
time ninja -C "$BUILD_DIR" ptrain_runtime_cuda PTrainCudaHostTests PTrainCudaCodecTests PTrainNcclTests \
  PTrainCudaModelKernelTests ptrain-bench-gpu ptrain-translate ptrain-opt ptrain_runtime
# A skipped GPU test here is a failure: this script is for a machine with a device. The multi-rank step
# (codegen-cuda-gpu-multirank, pp2 over NCCL against the CPU plan) needs one GPU per rank: NCCL refuses two
# ranks on one device, so with a single GPU it is left out, said here.
status=0
gpus=$(nvidia-smi -L | grep -c '^GPU' || true)
exclude='^$'
if [ "$gpus" -lt 2 ]; then
  echo "bench/gpu/run.sh: $gpus GPU: codegen-cuda-gpu-multirank (2 NCCL ranks, one per GPU) is left out"
  exclude='codegen-cuda-gpu-multirank'
fi
ctest --test-dir "$BUILD_DIR" -R 'Cuda|runtime-cuda|runtime-nccl|codegen-cuda' -E "$exclude" --output-on-failure \
  --timeout 300 | tee "$BUILD_DIR/cuda-tests.log" || status=1
if grep -q 'Skipped' "$BUILD_DIR/cuda-tests.log"; then
  echo "bench/gpu/run.sh: a CUDA test was skipped on a machine with a GPU" >&2
  status=1
fi
"$BUILD_DIR/bench/gpu/ptrain-bench-gpu" || status=1
exit $status
