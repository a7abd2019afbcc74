#!/usr/bin/python3
"""The generated AdamW kernels (--ptrain-outline-adamw) against the runtime's ptrain_adamw_step_f32 and memcpy
(issue 26).

ptrain-translate --emit-cpp-kernels compiles the two updates of adamw.mlir (a bucket of 2^22 elements, without
and with the clip scale) for this machine's CPU (or --kernels-cpu); adamw_bench.cpp, linked with that object and
the runtime, times each update by the runtime (after its mul by the clip scale when clipped), by the generated
kernel and a memcpy of 16 MiB on one core (interleaved, the best of --reps runs in thread CPU time) and checks
that p, m and v are identical. Prints a Markdown table.

    /usr/bin/python3 bench/generated_kernels/adamw_bench.py [--build build] [--reps 10] [--core 1]
        [--kernels-cpu native] [--cxx c++]
"""

import sys

import kernel_bench

if __name__ == "__main__":
    sys.exit(kernel_bench.main(__doc__, "adamw.mlir", "adamw_bench.cpp", 10))
