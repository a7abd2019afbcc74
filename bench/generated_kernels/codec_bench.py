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
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--core", type=int, default=1)
    p.add_argument("--kernels-cpu", default="native")
    p.add_argument("--isa", default="", help="the runtime's ISA path (default: the best this CPU runs)")
    p.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = p.parse_args(argv)
    runtime = os.path.join(args.build, "lib", "Runtime")
    with tempfile.TemporaryDirectory() as work:
        kernels, exe = os.path.join(work, "kernels.o"), os.path.join(work, "codec_bench")
        subprocess.run([os.path.join(args.build, "bin", "ptrain-translate"), "--emit-cpp",
                        os.path.join(HERE, "codecs.mlir"), "-o", os.path.join(work, "codecs.cpp"),
                        f"--emit-cpp-kernels={kernels}", f"--emit-cpp-kernels-cpu={args.kernels_cpu}"], check=True)
        subprocess.run([args.cxx, "-std=c++17", "-O2", f"-I{os.path.join(ROOT, 'include')}", f"-I{os.path.join(ROOT, 'bench')}",
                        os.path.join(HERE, "codec_bench.cpp"), kernels, "-o", exe, f"-L{runtime}", "-lptrain_runtime",
                        f"-Wl,-rpath,{runtime}"], check=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        return subprocess.run(["taskset", "-c", str(args.core), exe, str(args.reps)] + ([args.isa] if args.isa else []), env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
