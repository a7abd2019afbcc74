#!/usr/bin/env bash
# Installs every system package ptrain needs on Debian 12 (bookworm), non-interactively and idempotently.
# Usage: sudo bash scripts/setup.sh   (as root; CI runs it as root)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PKGS=(
  # MLIR / LLVM 22 (bookworm-security), lit and FileCheck
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # build
  cmake ninja-build ccache g++ python3 python3-pip
  # lld: ptrain-translate links the static MLIR/LLVM archives (~800 MB read); GNU ld takes minutes, lld seconds
  lld
  # tests
  libgtest-dev libbenchmark-dev
  # ONNX import
  libonnx-dev libprotobuf-dev protobuf-compiler
  # ONNX backend node tests (conformance: test/Conformance)
  libonnx-testdata
  # CPU target: MPI and BLAS
  libopenmpi-dev openmpi-bin libopenblas-dev
  # Python side: tests of the data and export helpers, .onnxtext importer tests and the compiled-GPT check
  # (python3-onnx); pkg-config finds OpenBLAS
  python3-pytest python3-numpy python3-onnx pkg-config python3-tqdm
  # PyTorch 1.13, CPU build (only /usr/bin/python3 sees it): codegen-cpu-loss-options' references and the
  # python-tests of the bundled GPT and the import fixtures against the PyTorch models
  python3-torch
  # bench/cluster (network namespaces, tc); its argument checks run in lit (test/Bench/bench-scripts-args.test)
  iproute2
  # ptrain-run's plots of the run log (loss, bytes per link, codec telemetry)
  python3-matplotlib
  # the project venv (.venv: PyPI onnx for opsets 18-23, onnxruntime; scripts/setup-python.sh)
  python3-venv
  # pip install ./python offline (--no-build-isolation; python/pyproject.toml): the setuptools backend and its
  # wheel builder, for Debian's python3 and venvs made with --system-site-packages (docs/PythonPackage.md)
  python3-setuptools python3-wheel
  # libFuzzer (bookworm-security): the fuzz targets' smoke run in CI (scripts/fuzz.sh, docs/Fuzzing.md)
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all system packages present"
fi

# The Python venv with the pinned PyPI packages (python/requirements-test.txt).
bash "$(dirname "${BASH_SOURCE[0]}")/setup-python.sh"
