#!/usr/bin/python3
"""CPU time of each runtime call of a compiled CPU step, by kernel and by op site (issue 10's profile).

Copies a ptrain-compile output folder (--plan), wraps every PTRAIN_STEP_CALL of its step.cpp in a timer (the
thread's CPU time, clock_gettime(CLOCK_THREAD_CPUTIME_ID): the wait for the core on a loaded machine is not
counted), compiles that copy like ptrain-compile does, embeds the plan section (python/ptrain/plan_abi.py), trains
--steps steps with ptrain-run on one core, and prints the milliseconds per training step of the micro-batch
step and the optimizer step (stage0_forward_backward, stage0_optimizer_step, and the outlined layer blocks
they call) by runtime call, by op site and by GEMM shape
(the op kind and ONNX node in the comment above each call, with the block index replaced by N). The timer
costs ~0.1 us per call (~600 calls per micro-batch).

    PYTHONPATH=python /usr/bin/python3 bench/pytorch/kernel_times.py --plan out/bench-pytorch/ptrain [--build build]
        [--steps 10] [--core 1] [--sites 30]

The plan is the one bench/pytorch/tokens_per_s.py compiles (out/bench-pytorch/ptrain after a run of it).
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ptrain import plan_abi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TIMED = ("ptrain_step_stage0_forward_backward", "ptrain_step_stage0_optimizer_step")

TIMER = r'''#include <stdio.h>
#include <time.h>
static double ptrain_kt_seconds[LINES];
static long ptrain_kt_calls[LINES];
static double ptrain_kt_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static int ptrain_kt_depth; // > 0 inside a timed function (and the outlined blocks it calls)
struct PtrainKtScope {
  PtrainKtScope() { ++ptrain_kt_depth; }
  ~PtrainKtScope() { --ptrain_kt_depth; }
};
static struct PtrainKtDump {
  ~PtrainKtDump() {
    FILE *f = fopen(OUT, "w");
    for (int i = 0; i < LINES; ++i)
      if (ptrain_kt_calls[i])
        fprintf(f, "%d %ld %.9f\n", i, ptrain_kt_calls[i], ptrain_kt_seconds[i]);
    fclose(f);
  }
} ptrain_kt_dump;
#define PTRAIN_STEP_CALL(call)                                                 \
  do {                                                                         \
    const double ptrain_kt_t0 = ptrain_kt_now();                               \
    const ptrain_status_t ptrain_status_ = (call);                             \
    if (ptrain_kt_depth > 0) {                                                 \
      ptrain_kt_seconds[__LINE__] += ptrain_kt_now() - ptrain_kt_t0;           \
      ++ptrain_kt_calls[__LINE__];                                             \
    }                                                                          \
    if (ptrain_status_ != PTRAIN_OK) {                                         \
      step_error_own = false;                                                  \
      return ptrain_status_;                                                   \
    }                                                                          \
  } while (0)'''


class BenchError(Exception):
    pass


def instrument(src, out_path):
    start = src.find("#define PTRAIN_STEP_CALL(call)")
    end = src.find("} while (0)", start)
    if start < 0 or end < 0:
        raise BenchError("step.cpp has no PTRAIN_STEP_CALL macro to wrap")
    lines = src.count("\n") + TIMER.count("\n") + 16
    timer = TIMER.replace("LINES", str(lines)).replace("OUT", json.dumps(out_path))
    src = src[:start] + timer + src[end + len("} while (0)"):]
    # Time the calls inside the timed functions only, the outlined layer blocks they call included (the eval
    # forward calls the same blocks): a scope at the top of each timed function's definition.
    for name in TIMED:
        src, n = re.subn(r'(extern "C" PTRAIN_STEP_API ptrain_status_t ' + name + r'\([^;{]*\) \{\n)',
                         r"\1  PtrainKtScope ptrain_kt_scope;\n", src)
        if n != 1:
            raise BenchError(f"step.cpp: no single definition of {name} to time")
    return src


def sites(src):
    """Per line: (function, op kind, location) of the op block it is in."""
    func, loc, kind, info = None, "?", "?", {}
    for i, line in enumerate(src.split("\n"), 1):
        m = re.match(r'(?:extern "C" PTRAIN_STEP_API )?ptrain_status_t (ptrain_step_\w+|ptrain_block_\d+)\(', line)
        if m:
            func = m.group(1)
        m = re.match(r"\s*// (\".*?\"|unknown location|\S+:\d+:\d+)", line)
        if m:
            loc = re.sub(r"blocks\.\d+", "blocks.N", m.group(1))
        m = re.match(r"\s*// ([a-z_]+\.[a-z_]+)$", line)
        if m:
            kind = m.group(1)
        info[i] = (func, kind, loc)
    return info


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", required=True, help="a ptrain-compile --target cpu output folder")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--data", default=os.path.join(ROOT, "out", "bench-pytorch", "data"))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--core", type=int, default=1)
    p.add_argument("--sites", type=int, default=30, help="op sites to list")
    args = p.parse_args(argv)
    try:
        run(args)
    except BenchError as e:
        print(f"bench/pytorch/kernel_times: error: {e}", file=sys.stderr)
        return 1
    return 0


def run(args):
    for f in ("step.cpp", "plan.json", "libstep.so"):
        if not os.path.isfile(os.path.join(args.plan, f)):
            raise BenchError(f"--plan {args.plan}: no {f} (a ptrain-compile --target cpu output folder)")
    if not os.path.isfile(os.path.join(args.data, "train.bin")):
        raise BenchError(f"--data {args.data}: no train.bin (bench/pytorch/tokens_per_s.py writes it)")
    work = tempfile.mkdtemp(prefix="ptrain-kernel-times-")
    try:
        plan_dir = os.path.join(work, "plan")
        shutil.copytree(args.plan, plan_dir)
        counts = os.path.join(work, "calls.txt")
        src = open(os.path.join(plan_dir, "step.cpp")).read()
        timed = instrument(src, counts)
        with open(os.path.join(plan_dir, "step.cpp"), "w") as f:
            f.write(timed)
        lib = os.path.join(plan_dir, "libstep.so")
        runtime = os.path.join(args.build, "lib", "Runtime")
        subprocess.run([os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-shared", "-fPIC", "-w",
                        f"-I{os.path.join(ROOT, 'include')}", f"-I{os.path.join(args.build, 'include')}",
                        os.path.join(plan_dir, "step.cpp"), "-o", lib, f"-L{runtime}", "-lptrain_runtime",
                        f"-Wl,-rpath,{runtime}"], check=True)
        plan = json.load(open(os.path.join(plan_dir, "plan.json")))
        plan_abi.embed(lib, plan)  # the section ptrain-run checks, as ptrain-compile adds it
        plan["library"] = lib
        json.dump(plan, open(os.path.join(plan_dir, "plan.json"), "w"), indent=1)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        cmd = ["taskset", "-c", str(args.core), os.path.join(args.build, "bin", "ptrain-run"), plan_dir, "--data",
               args.data, "--steps", str(args.steps), "--val-batches", "1", "--no-plots",
               "--log", os.path.join(work, "log.json"), "--mpirun-args=--bind-to none"]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if proc.returncode or not os.path.isfile(counts):
            raise BenchError(f"ptrain-run failed:\n{proc.stdout[-3000:]}")
        report(timed, counts, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(src, counts, args):
    info = sites(src)
    lines = src.split("\n")
    by_call, by_site, calls = collections.Counter(), collections.Counter(), collections.Counter()
    by_gemm, gemm_calls = collections.Counter(), collections.Counter()
    for row in open(counts):
        line, n, seconds = row.split()
        line, n, seconds = int(line), int(n), float(seconds)
        func, kind, loc = info[line]
        if func not in TIMED and not func.startswith("ptrain_block_"):
            continue
        m = re.search(r"PTRAIN_STEP_CALL\((\w+)", lines[line - 1])
        name = m.group(1) if m else "?"
        by_call[name] += seconds
        calls[name] += n
        by_site[(kind, loc, name)] += seconds
        shape = gemm_shape(lines[line - 1])
        if shape:
            by_gemm[shape] += seconds
            gemm_calls[shape] += n
    total = sum(by_call.values())
    ms = 1e3 / args.steps
    print(f"{args.steps} steps; runtime calls of {' + '.join(TIMED)}: {total * ms:.1f} ms CPU per step")
    print("\n| runtime call | ms/step | share | calls/step |\n|---|---|---|---|")
    for name, s in by_call.most_common():
        print(f"| {name} | {s * ms:.2f} | {100 * s / total:.1f}% | {calls[name] // args.steps} |")
    print(f"\n| op site (kind, ONNX node) | runtime call | ms/step |\n|---|---|---|")
    for (kind, loc, name), s in by_site.most_common(args.sites):
        print(f"| {kind} {loc} | {name} | {s * ms:.2f} |")
    if by_gemm:
        # FLOPs of one call: 2 batch M N K (C = alpha op(A) op(B) + beta C; docs/Runtime.md, ptrain_gemm_f32).
        print("\n| GEMM: trans_a, trans_b, batch x M x N x K, beta | calls/step | ms/step | share of GEMMs | GFLOP/s |"
              "\n|---|---|---|---|---|")
        gemm_total = sum(by_gemm.values())
        for (ta, tb, batch, m, n, k, beta), s in by_gemm.most_common():
            flops = 2 * batch * m * n * k * gemm_calls[(ta, tb, batch, m, n, k, beta)]
            print(f"| {ta}, {tb}, {batch} x {m} x {n} x {k}, {beta} | {gemm_calls[(ta, tb, batch, m, n, k, beta)] // args.steps} "
                  f"| {s * ms:.2f} | {100 * s / gemm_total:.1f}% | {flops / s / 1e9:.1f} |")


GEMM_CALL = re.compile(r"PTRAIN_STEP_CALL\(ptrain_gemm_(?:f32|bf16|f16)\(([^;]*)\)\);")


def gemm_shape(line):
    """(trans_a, trans_b, batch, M, N, K, beta) of a ptrain_gemm_* call line with literal sizes, else None."""
    m = GEMM_CALL.search(line)
    if not m:
        return None
    args = [a.strip() for a in m.group(1).split(",")]
    try:
        ta, tb, batch, rows, cols, k = (int(a) for a in args[:6])
    except ValueError:
        return None  # sizes passed as expressions (none in the bundled GPT's step)
    return ta, tb, batch, rows, cols, k, args[11] if len(args) > 11 else "?"


if __name__ == "__main__":
    sys.exit(main())
