#!/usr/bin/env python3
"""CTests codegen-cpu-gemm-accumulate, -gemm-heads, -layer-norm-stats: an --emit-cpp fold trains like what it replaces.

    emitter_folds_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR [accumulate|heads|layer-norm-stats]

The folds (GemmFusion.h and BufferLiveness.h, docs/CodegenCpu.md "GEMM operands" and "Layer norm"):
  accumulate (the default): weight gradients accumulated by their GEMMs (C = the gradient state, beta = 1) against
    a buffer, an add and a copy per weight gradient (--emit-cpp-accumulate-gemms=false);
  heads: the attention's head split and merge read and written in place by ptrain_gemm_strided_f32 against
    ptrain_permute_f32 materializing each (--emit-cpp-fold-head-permutes=false);
  layer-norm-stats: a layer norm's gradient reading the mean and rstd its forward saved against recomputing them
    by a forward into scratch (--emit-cpp-layer-norm-saved-stats=false).
1. ptrain-compile the bundled GPT (pp = 1, 4 micro-batches of 4 x 64 tokens: a contraction of 256, and
   pp = 2 with 2 micro-batches): the default step, which makes the fold; step.cpp says so.
2. The same step.mlir translated again without the fold and linked like ptrain-compile links it (its step
   flags, the plan section embedded).
3. ptrain-run both for 3 steps on the same data and seed: the validation loss and the three step losses are
   identical (accumulate: OpenBLAS sums K = 256 in one pass, fl(C + sum) = fl(old + fl(sum)); heads: BLAS packs
   its operands, the leading dimension changes no sum; layer-norm-stats: the same kernel on the same input;
   scripts/test-kernel-paths.sh runs them under the Haswell and SkylakeX kernels).
"""

import json
import os
import shutil
import sys

from e2e import check, corpus, failures, finish, run, setup, train_logs

build, source, work, BIN, MODEL = setup(sys.argv)
sys.path.insert(0, os.path.join(source, "python"))
from ptrain import plan_abi  # noqa: E402
from ptrain.compile import step_flags  # noqa: E402

data = corpus(source, work)
common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"pp1": ["--pp", "1", "--micro-batches", "4"], "pp2": ["--pp", "2", "--micro-batches", "2"]}
FOLDS = {  # fold: (the ptrain-translate flag that turns it off, what step.cpp says where it is made)
    "accumulate": ("--emit-cpp-accumulate-gemms=false", "accumulated into its gradient state: C = the state, beta = 1"),
    "heads": ("--emit-cpp-fold-head-permutes=false", "the heads read and written in place"),
    "layer-norm-stats": ("--emit-cpp-layer-norm-saved-stats=false", "the mean and rstd its forward saved"),
}
FOLD = sys.argv[4] if len(sys.argv) > 4 else "accumulate"
check(FOLD in FOLDS, f"the fold '{FOLD}' is one of {sorted(FOLDS)}")
OFF, NOTE = FOLDS.get(FOLD, FOLDS["accumulate"])
runtime = os.path.join(build, "lib", "Runtime")
for name, flags in configs.items():
    folded, kept = os.path.join(work, name), os.path.join(work, name + "-kept")
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, *flags, "-o", folded])
    check(rc == 0, f"ptrain-compile {name}" + ("" if rc == 0 else ":\n" + out))
    if rc:
        continue
    check(NOTE in open(os.path.join(folded, "step.cpp")).read(), f"{name}: step.cpp makes the fold ({NOTE})")
    shutil.copytree(folded, kept)
    cpp, lib = os.path.join(kept, "step.cpp"), os.path.join(kept, "libstep.so")
    rc, out = run([os.path.join(BIN, "ptrain-translate"), "--emit-cpp", OFF,
                   os.path.join(kept, "step.mlir"), "-o", cpp,
                   "--emit-cpp-constants=" + os.path.join(kept, "step.consts.bin")])
    check(rc == 0, f"{name}: ptrain-translate {OFF}" + ("" if rc == 0 else ":\n" + out))
    check(rc == 0 and NOTE not in open(cpp).read(), f"{name}-kept: no fold ({OFF})")
    rc, out = run([os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
                   *step_flags(runtime), "-I" + os.path.join(source, "include"), cpp, "-o", lib, "-L" + runtime,
                   "-lptrain_runtime", "-Wl,-rpath," + runtime])
    check(rc == 0, f"{name}-kept: compiling step.cpp" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        plan = json.load(open(os.path.join(kept, "plan.json")))
        plan_abi.embed(lib, plan)  # the section ptrain-run checks, as ptrain-compile adds it
        plan["library"] = lib
        json.dump(plan, open(os.path.join(kept, "plan.json"), "w"), indent=1)
if failures:
    finish()

logs = train_logs(BIN, work, data, [n + suffix for n in configs for suffix in ("", "-kept")])
for name in configs:
    if name in logs and name + "-kept" in logs:
        a, b = logs[name], logs[name + "-kept"]
        print(f"{name}: train {a['train_loss']} val {a['val_loss'][0][1]}; kept: train {b['train_loss']}")
        check(a["val_loss"] == b["val_loss"], f"{name}: validation losses identical to the unfolded step's")
        check(a["train_loss"] == b["train_loss"], f"{name}: the 3 step losses identical to the unfolded step's")
finish()
