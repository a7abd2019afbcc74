#!/usr/bin/python3
"""What the CUDA route of the generated kernels costs at compile time (issue 26; docs/GeneratedKernels.md, "The
CUDA route"): `ptrain-translate --emit-cuda` of the bundled GPT's step with and without
--emit-cuda-kernels=sm_80,sm_90 (outlining plus the in-process lowering to PTX), interleaved, the median wall
time of each and their ratio in one run; per plan the kernels, the launches and the PTX bytes per image, and
ptxas's time to assemble each image (where ptxas exists; the step itself leaves that to the driver's JIT).
No GPU is needed: this measures the compiler, not the kernels.

    PYTHONPATH=python /usr/bin/python3 bench/generated_kernels/cuda_emit.py [--build build] [--out out/bench-cuda-emit]
        [--repeats 3]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLANS = {"pp1": [], "tp2": ["--tp", "2"]}
ARCHS = "sm_80,sm_90"


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench-cuda-emit"))
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    translate = os.path.join(args.build, "bin", "ptrain-translate")
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    model = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    cpu = next((line.split(":", 1)[1].strip() for line in model.splitlines() if line.startswith("Model name")), "?")
    print(f"CPU: {cpu}; load average {os.getloadavg()[0]:.1f}; {args.repeats} interleaved repeats")
    print("plan  emit s (unfused)  emit s (fused)  ratio  kernels  launches  PTX bytes per image  ptxas s per image")
    for name, options in PLANS.items():
        plan = os.path.join(args.out, name)
        # The step through the CPU target's flow: step.mlir is the same module --emit-cuda reads (no nvcc here).
        subprocess.run([os.path.join(args.build, "bin", "ptrain-compile"), os.path.join(ROOT, "models/gpt/gpt.onnx"),
                        "--target", "cpu", "-o", plan, *options], check=True, stdout=subprocess.DEVNULL)
        step = os.path.join(plan, "step.mlir")
        base = [translate, "--emit-cuda", "--emit-verify-plan=false", step]
        plain, fused = [], []
        with tempfile.TemporaryDirectory() as tmp:
            unfused_cu, fused_cu = os.path.join(tmp, "plain.cu"), os.path.join(tmp, "fused.cu")
            consts = f"--emit-cuda-constants={os.path.join(tmp, 'c.bin')}"
            for _ in range(args.repeats):
                plain.append(timed(base + ["-o", unfused_cu, consts]))
                fused.append(timed(base + ["-o", fused_cu, consts, f"--emit-cuda-kernels={ARCHS}"]))
            text = open(fused_cu).read()
            images = re.findall(r'const char kGeneratedPtx_(sm_\d+)\[\] = R"ptx\((.*?)\)ptx";', text, re.S)
            kernels = len(re.findall(r"^void \*generated_ptrain_kernel_\d+ = nullptr;", text, re.M))
            launches = text.count("ptrain_cuda_kernel_launch(")
            sizes, assemble = [], []
            for arch, ptx in images:
                path = os.path.join(tmp, f"{arch}.ptx")
                with open(path, "w") as f:
                    f.write(ptx)
                sizes.append(f"{arch} {len(ptx)}")
                if os.path.exists(ptxas):
                    assemble.append(f"{arch} {timed([ptxas, f'-arch={arch}', path, '-o', path + '.cubin']):.2f}")
        a, b = statistics.median(plain), statistics.median(fused)
        print(f"{name:5} {a:16.2f} {b:15.2f} {b / a:6.2f} {kernels:8} {launches:9}  {', '.join(sizes):20} "
              f"{', '.join(assemble) or 'no ptxas'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
