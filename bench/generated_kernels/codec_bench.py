#!/usr/bin/python3
"""The generated quantization encoders (--ptrain-outline-codecs) against the runtime's and memcpy (issue 26).

ptrain-translate --emit-cpp-kernels compiles the three quantization sites of codecs.mlir (2^22 elements, blocks of
64, error feedback; 8-bit symmetric, 4- and 2-bit asymmetric) for this machine's CPU (or --kernels-cpu);
codec_bench.cpp, linked with that object and the runtime, times each site's runtime encoder on the --isa path,
its generated kernel and a memcpy of the same size on one core (interleaved, the best of --reps runs in thread
CPU time) and checks that the outputs are identical. Prints a Markdown table.

    /usr/bin/python3 bench/generated_kernels/codec_bench.py [--build build] [--reps 10] [--core 1]
        [--kernels-cpu native] [--isa avx512|avx2|baseline] [--cxx c++]
"""

import sys

import kernel_bench

if __name__ == "__main__":
    sys.exit(kernel_bench.main(__doc__, "codecs.mlir", "codec_bench.cpp", 10, with_isa=True))
