#!/usr/bin/python3
"""The generated kernels of three elementwise chains against the runtime's kernels per op (issue 26).

ptrain-translate --emit-cpp-kernels compiles the chains of chains.mlir (the attention scores' scale and mask;
bias + residual; bias + GELU; scale + mask + softmax; bias + GELU after a GEMM against GemmFusion's bias rows) for this machine's CPU (or --kernels-cpu); chain_bench.cpp, linked with that object and the
runtime, times each chain both ways on one core (the best of --reps runs in thread CPU time, alternating) and checks that the
outputs are identical. Prints a Markdown table: milliseconds, the bytes each variant must move over its time,
the speedup.

    /usr/bin/python3 bench/generated_kernels/chain_bench.py [--build build] [--reps 20] [--core 1]
        [--kernels-cpu native] [--cxx c++]
"""

import sys

import kernel_bench

if __name__ == "__main__":
    sys.exit(kernel_bench.main(__doc__, "chains.mlir", "chain_bench.cpp", 20))
