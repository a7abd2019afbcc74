"""The driver of chain_bench.py, codec_bench.py and adamw_bench.py: compile a module's generated kernels, link a C++ bench with
them and the runtime, run it pinned to one core.

ptrain-translate --emit-cpp-kernels writes the kernels of MLIR for --kernels-cpu; the C++ bench (which declares
them) is linked with that object and libptrain_runtime and run under taskset with one BLAS thread, its
arguments --reps (and the runtime's ISA path where the bench takes one).
"""

import argparse
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main(doc, mlir, cpp, default_reps, argv=None, with_isa=False):
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0], epilog=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--reps", type=int, default=default_reps)
    p.add_argument("--core", type=int, default=1)
    p.add_argument("--kernels-cpu", default="native")
    if with_isa:
        p.add_argument("--isa", default="", help="the runtime's ISA path (default: the best this CPU runs)")
    p.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = p.parse_args(argv)
    runtime = os.path.join(args.build, "lib", "Runtime")
    with tempfile.TemporaryDirectory() as work:
        kernels, exe = os.path.join(work, "kernels.o"), os.path.join(work, "bench")
        subprocess.run([os.path.join(args.build, "bin", "ptrain-translate"), "--emit-cpp", os.path.join(HERE, mlir),
                        "-o", os.path.join(work, "step.cpp"), f"--emit-cpp-kernels={kernels}",
                        f"--emit-cpp-kernels-cpu={args.kernels_cpu}"], check=True)
        subprocess.run([args.cxx, "-std=c++17", "-O2", f"-I{os.path.join(ROOT, 'include')}",
                        f"-I{os.path.join(ROOT, 'bench')}", os.path.join(HERE, cpp), kernels, "-o", exe,
                        f"-L{runtime}", "-lptrain_runtime", f"-Wl,-rpath,{runtime}"], check=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        extra = [args.isa] if with_isa and args.isa else []
        return subprocess.run(["taskset", "-c", str(args.core), exe, str(args.reps)] + extra, env=env).returncode
