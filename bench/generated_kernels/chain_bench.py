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

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--core", type=int, default=1)
    p.add_argument("--kernels-cpu", default="native")
    p.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = p.parse_args(argv)
    runtime = os.path.join(args.build, "lib", "Runtime")
    with tempfile.TemporaryDirectory() as work:
        kernels, exe = os.path.join(work, "kernels.o"), os.path.join(work, "chain_bench")
        subprocess.run([os.path.join(args.build, "bin", "ptrain-translate"), "--emit-cpp",
                        os.path.join(HERE, "chains.mlir"), "-o", os.path.join(work, "chains.cpp"),
                        f"--emit-cpp-kernels={kernels}", f"--emit-cpp-kernels-cpu={args.kernels_cpu}"], check=True)
        subprocess.run([args.cxx, "-std=c++17", "-O2", f"-I{os.path.join(ROOT, 'include')}", f"-I{os.path.join(ROOT, 'bench')}",
                        os.path.join(HERE, "chain_bench.cpp"), kernels, "-o", exe, f"-L{runtime}", "-lptrain_runtime",
                        f"-Wl,-rpath,{runtime}"], check=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        return subprocess.run(["taskset", "-c", str(args.core), exe, str(args.reps)], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
