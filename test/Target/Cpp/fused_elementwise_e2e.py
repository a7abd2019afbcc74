#!/usr/bin/env python3
"""CTest codegen-cpu-fused-elementwise: the step with generated kernels trains like the step without (issue 26).

    fused_elementwise_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT with --fuse-elementwise=off and =on, at pp=1 and pp=2 (1F1B), 2 micro-batches,
   and =on for the baseline x86-64 CPU (SSE2 only, whatever the host has: --kernels-cpu x86-64); and at tp=2,
   where the row-parallel linears add their bias after the all-reduce, so bias + residual fuse too (a second
   kernel).
2. The fused steps call the generated kernel (step.cpp names it, kernels.o defines it, libstep.so keeps it
   local) and the unfused ones do not.
3. ptrain-run each for 3 steps on the same data and seed: the validation loss before training and the three
   step losses of every fused step are identical to the unfused step's (docs/GeneratedKernels.md: the fused
   chains perform the same fp32 operations in the same order).
4. ptrain_step_init checks the instruction-set extensions the kernels use (none for x86-64); on a CPU without
   AVX-512, a step compiled for skylake-avx512 fails at init naming avx512f.
5. An unknown --kernels-cpu is ptrain-compile's error, naming the CPU.
7. AdamW (--ptrain-outline-adamw): every fused step calls the generated AdamW kernels and no
   ptrain_adamw_step_f32 (pp1-on: the AdamW table's rows; clip-on, global-norm clipping: one update at a time,
   the clip scale's mul folded in; zero-on, ZeRO-1 at dp=2: the update of each bucket's shard), and trains
   identically to the unfused step (clip-off, zero-off).
6. qpp2: pp=2 with every pipeline send quantized (4-bit asymmetric blocks of 64 forward, 8-bit symmetric blocks
   of 32 backward, error feedback on both): the fused step calls the generated per-site encoders
   (--ptrain-outline-codecs) and no ptrain_quant_encode_f32, and trains identically to the unfused step.
"""

import json
import os
import subprocess
import sys

from e2e import check, corpus, failures, finish, run, setup, train_logs

build, source, work, BIN, MODEL = setup(sys.argv)
data = corpus(source, work)

QUANT = ["--policy", "mcbench", "--compress-options",
         "fwd-codec=quant:bits=4,granularity=block,block-size=64,symmetric=false "
         "bwd-codec=quant:bits=8,granularity=block,block-size=32 error-feedback=true"]
common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {
    "pp1-off": ["--pp", "1", "--micro-batches", "2", "--fuse-elementwise", "off"],
    "pp1-on": ["--pp", "1", "--micro-batches", "2", "--fuse-elementwise", "on"],
    "pp1-on-x86-64": ["--pp", "1", "--micro-batches", "2", "--fuse-elementwise", "on", "--kernels-cpu", "x86-64"],
    "pp2-off": ["--pp", "2", "--micro-batches", "2", "--fuse-elementwise", "off"],
    "pp2-on": ["--pp", "2", "--micro-batches", "2", "--fuse-elementwise", "on"],
    "tp2-off": ["--tp", "2", "--micro-batches", "2", "--fuse-elementwise", "off"],
    "tp2-on": ["--tp", "2", "--micro-batches", "2", "--fuse-elementwise", "on"],
    # Quantized pipeline sends with error feedback: the generated per-site encoders (--ptrain-outline-codecs).
    "qpp2-off": ["--pp", "2", "--micro-batches", "2", "--fuse-elementwise", "off", *QUANT],
    "qpp2-on": ["--pp", "2", "--micro-batches", "2", "--fuse-elementwise", "on", *QUANT],
    # Global-norm clipping: the AdamW kernels fold the clip scale's mul in (--ptrain-outline-adamw).
    "clip-off": ["--pp", "1", "--micro-batches", "2", "--clip-norm", "0.5", "--fuse-elementwise", "off"],
    "clip-on": ["--pp", "1", "--micro-batches", "2", "--clip-norm", "0.5", "--fuse-elementwise", "on"],
    # ZeRO-1: AdamW over each bucket's shard.
    "zero-off": ["--dp", "2", "--zero", "1", "--micro-batches", "2", "--fuse-elementwise", "off"],
    "zero-on": ["--dp", "2", "--zero", "1", "--micro-batches", "2", "--fuse-elementwise", "on"],
}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, *flags, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {name}" + ("" if rc == 0 else ":\n" + out))
if failures:
    sys.exit(1)

for name in configs:
    step = open(os.path.join(work, name, "step.cpp")).read()
    kernels = os.path.join(work, name, "kernels.o")
    if name.endswith("off"):
        check("ptrain_kernel_" not in step and "ptrain_codec_kernel_" not in step and not os.path.exists(kernels),
              f"{name}: no generated kernel")
        continue
    check("ptrain_kernel_0(" in step, f"{name}: step.cpp calls ptrain_kernel_0")
    symbols = subprocess.run(["nm", kernels], capture_output=True, text=True).stdout
    check(" T ptrain_kernel_0" in symbols, f"{name}: kernels.o defines ptrain_kernel_0")
    check(" T ptrain_adamw_kernel_0" in symbols and "ptrain_adamw_step_f32(" not in step,
          f"{name}: the AdamW updates call their generated kernels, not ptrain_adamw_step_f32")
    if name == "pp1-on":
        check("row.kernel(" in step, f"{name}: the AdamW table's rows call their kernels")
    if name == "clip-on":
        check("the clip scale's mul, computed by ptrain_adamw_kernel_" in step,
              f"{name}: the clip scale's mul is folded into the AdamW kernels")
    if name.startswith("qpp2"):
        check("ptrain_codec_kernel_0(" in step and "ptrain_quant_encode_f32(" not in step,
              f"{name}: step.cpp calls the generated quantization encoders, not the runtime's")
        check(" T ptrain_codec_kernel_0" in symbols, f"{name}: kernels.o defines ptrain_codec_kernel_0")
    if name.startswith("tp2"):
        check("ptrain_kernel_1(" in step, f"{name}: step.cpp also calls ptrain_kernel_1 (bias + residual)")
    dynamic = subprocess.run(["nm", "-D", "--defined-only", os.path.join(work, name, "libstep.so")],
                             capture_output=True, text=True).stdout
    check("ptrain_kernel_" not in dynamic, f"{name}: libstep.so does not export its kernels")
    plan = json.load(open(os.path.join(work, name, "plan.json")))
    check("generated_kernels" in plan, f"{name}: plan.json records the generated kernels")

logs = train_logs(BIN, work, data, configs)
for name, log in logs.items():
    print(f"{name}: train {log['train_loss']} val {log['val_loss'][0][1]}")
    ref = logs.get(name.split("-")[0] + "-off")
    if ref is None or log is ref:
        continue
    check(log["val_loss"][0][1] == ref["val_loss"][0][1], f"{name}: eval before training identical to unfused")
    check(log["train_loss"] == ref["train_loss"], f"{name}: the 3 step losses identical to unfused")

# The extensions the kernels use are checked at init (docs/GeneratedKernels.md, "Which CPU"): the host's step
# tests them, the x86-64 one none; a step for an AVX-512 CPU on a machine without AVX-512 (the AMD AVX2 machines
# of CI) fails at init naming avx512f instead of dying of an illegal instruction.
check('__builtin_cpu_supports("sse4.2")' in open(os.path.join(work, "pp1-on", "step.cpp")).read(),
      "pp1-on: ptrain_step_init checks the host's extensions")
check("__builtin_cpu_supports" not in open(os.path.join(work, "pp1-on-x86-64", "step.cpp")).read(),
      "pp1-on-x86-64: nothing to check")
flags = open("/proc/cpuinfo").read().split()
if "avx512f" in flags:
    print("skipped: the check of a step for skylake-avx512 on a CPU without AVX-512 (this one has it)")
else:
    avx512 = os.path.join(work, "avx512")
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, *configs["pp1-on"], "--kernels-cpu",
                   "skylake-avx512", "-o", avx512])
    check(rc == 0, "ptrain-compile --kernels-cpu skylake-avx512" + ("" if rc == 0 else ":\n" + out))
    rc, out = run([os.path.join(BIN, "ptrain-run"), avx512, "--data", data, "--steps", "1", "--timeout", "60",
                   "--no-tensorboard", "--no-plots"])
    check(rc != 0 and "compiled for skylake-avx512, which has avx512f, and this CPU has not" in out,
          "a step for skylake-avx512 on a CPU without AVX-512 fails at init naming avx512f")

rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, "--fuse-elementwise", "on", "--kernels-cpu",
               "no-such-cpu", "-o", os.path.join(work, "bad-cpu")])
check(rc != 0 and "unknown CPU 'no-such-cpu'" in out, "an unknown --kernels-cpu is an error naming it")
finish()
