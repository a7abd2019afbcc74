#!/usr/bin/env python3
"""CTest codegen-cpu-vocab-parallel: Megatron's vocabulary-parallel embedding, LM head and cross-entropy in
generated code under mpirun.

    vocab_parallel_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT (vocabulary 256, tied embedding) with the same global batch of 16 sequences
   and SGD settings (sgd_equivalence.py's SGD_FLAGS): one rank (--micro-batches 4, the reference), --tp 2 --vocab-parallel (2 ranks),
   --tp 2 --pp 2 --vocab-parallel (4 ranks) and --tp 2 --vocab-parallel --vocab-multiple 3 (the vocabulary
   padded to 258: rank 1 holds rows 129..257, its last two zero rows and masked logits).
2. step.cpp: the last stage's forward-backward calls the vocabulary-parallel kernels with the rank's tp coordinate
   and all-gathers only the per-position maxima (dimension 0), never the logits, and has no replicated loss.
3. ptrain-run each for 3 steps: the validation loss before training and the step losses within LOSS_TOL
   relative of one rank; the padded rows of the embedding are still exactly zero after training; the
   embedding halves of the tp ranks' checkpoints, stacked, equal one rank's table within the derived bound (3) of
   sgd_equivalence.py (1e-3 of its largest displacement by training plus 3 ulps; SGD's update does not amplify
   the f32 roundings of the split sums as AdamW's would, issue 20).
4. The multi-rank executor (ptrain-interpret --multi-rank) runs the 4-rank and the padded step.mlir on the
   same 3 global batches: its step losses within EXEC_TOL relative of the MPI run.
5. ptrain-compile's option errors: --vocab-parallel without --tp, --vocab-multiple without --vocab-parallel.
"""

import array
import json
import os
import re
import sys

from e2e import (check, compile_plans, corpus, executor_losses, failures, finish, global_batches,
                 read_checkpoint, run, setup)
from sgd_equivalence import GRAD_NOISE, SGD_FLAGS, bound_use

import onnx
from onnx import numpy_helper

LOSS_TOL = 1e-5    # relative, losses vs one rank (the f32 sums of the loss's parts grouped otherwise)
EXEC_TOL = 1e-5    # relative, MPI step losses vs the executor (f64 ops rounded to f32 vs f32 kernels)

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
data = corpus(source, work)

common = [*SGD_FLAGS, "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"ref": ["--micro-batches", "4"],
           "vtp2": ["--tp", "2", "--vocab-parallel", "--micro-batches", "4"],
           "vtp2pp2": ["--tp", "2", "--pp", "2", "--vocab-parallel", "--micro-batches", "4"],
           "vtp2pad": ["--tp", "2", "--vocab-parallel", "--vocab-multiple", "3", "--micro-batches", "4"]}
plans = compile_plans(BIN, MODEL, work, configs, common)
for flags, message in ((["--vocab-parallel"], "--vocab-parallel needs --tp > 1"),
                       (["--tp", "2", "--vocab-multiple", "2"], "--vocab-multiple 2 without --vocab-parallel")):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, "bad")])
    check(rc == 1 and message in out and not os.path.exists(os.path.join(work, "bad")),
          f"ptrain-compile {' '.join(flags)}: exit 1, '{message}', no output")
if failures:
    finish()

wte = {name: next(s for s in plans[name]["states"] if s["key"] == "wte.weight") for name in configs}
check(wte["vtp2"]["shape"] == [128, 128] and wte["vtp2"]["tp_slice"]["global_shape"] == [256, 128]
      and "padded" not in wte["vtp2"]["tp_slice"], "plan.json: wte.weight is [128, 128] per rank of [256, 128]")
check(wte["vtp2pad"]["shape"] == [129, 128] and wte["vtp2pad"]["tp_slice"].get("padded") == 258,
      "plan.json: --vocab-multiple 3 pads wte.weight to 258 rows, [129, 128] per rank")
check(plans["vtp2"]["vocab_parallel"] == {"multiple": 1} and plans["vtp2pad"]["vocab_parallel"] == {"multiple": 3}
      and "vocab_parallel" not in plans["ref"], "plan.json: vocab_parallel with its multiple")
for name in ("vtp2", "vtp2pp2"):
    cpp = open(os.path.join(work, name, "step.cpp")).read()
    # The last stage's forward-backward holds the loss: it gathers the per-position maxima, never the logits.
    start = re.search(rf"ptrain_step_stage{plans[name]['pp'] - 1}_forward_backward\([^)]*\) {{", cpp).start()
    body = cpp[start:cpp.index('extern "C"', start)]
    # With the repeated blocks it calls (identical layers written once: include/ptrain/Target/Common/BlockOutliner.h).
    for block in sorted(set(re.findall(r"PTRAIN_STEP_FORWARD\((ptrain_block_\d+)\(", body))):
        at = cpp.index(f"ptrain_status_t {block}(")
        body += cpp[at:cpp.index("\n}\n", at)]
    gathers = re.findall(r"ptrain_all_gather_dim\(comm_grid_tp, \w+, PTRAIN_DTYPE_F32, 3, dims, (\d)", body)
    check(all(k in cpp for k in ("ptrain_vocab_parallel_embedding_fwd_f32", "ptrain_vocab_parallel_embedding_bwd_f32"))
          and all(k in body for k in ("ptrain_vocab_parallel_ce_parts_fwd_f32", "ptrain_vocab_parallel_ce_parts_bwd_f32"))
          and re.search(r"gridCoordinate\(ptrain_rank, \d\), 2,", body) and gathers == ["0"]
          and "ptrain_cross_entropy_fwd_f32" not in body,
          f"{name}/step.cpp: the vocabulary-parallel kernels; the loss's stage calls them with the rank's tp coordinate and "
          f"gathers only the maxima (all-gathers along dims {gathers})")

def train(name):
    log, ckpt = os.path.join(work, f"{name}.json"), os.path.join(work, f"{name}.ckpt")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(STEPS),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--checkpoint", ckpt, "--timeout", "120",
                   "--no-plots"], timeout=900)
    check(rc == 0, f"ptrain-run {name} {STEPS} steps" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log)) if rc == 0 else None


def table(name, suffix):
    values = array.array("f")
    values.frombytes(read_checkpoint(os.path.join(work, f"{name}.ckpt{suffix}"))["wte.weight"])
    return values


logs = {name: train(name) for name in configs}
if logs["ref"]:
    a = logs["ref"]
    print(f"one rank: train {a['train_loss']} val {a['val_loss']}")
    ref_table = table("ref", "")
    init_table = next(numpy_helper.to_array(i) for i in onnx.load(MODEL).graph.initializer if i.name == "wte.weight")
    for name in ("vtp2", "vtp2pp2", "vtp2pad"):
        b = logs[name]
        if not b:
            continue
        val = abs(a["val_loss"][0][1] - b["val_loss"][0][1]) / abs(a["val_loss"][0][1])
        worst = max(abs(x - y) / abs(x) for x, y in zip(a["train_loss"], b["train_loss"]))
        print(f"{name}: train {b['train_loss']} val {b['val_loss']}; eval before training {val:.3e}, worst "
              f"relative step-loss difference {worst:.3e}")
        check(val <= LOSS_TOL and worst <= LOSS_TOL and len(b["train_loss"]) == STEPS,
              f"{name}: eval and {STEPS} step losses within {LOSS_TOL} relative of one rank")
        stage = ".stage0" if plans[name]["pp"] > 1 else ""
        rows = wte[name]["shape"][0]
        stacked = table(name, f"{stage}.tp0") + table(name, f"{stage}.tp1")
        padding = stacked[256 * 128:]
        check(len(stacked) == 2 * rows * 128 and all(v == 0.0 for v in padding),
              f"{name}: the tp ranks hold {rows} rows each; the {len(padding) // 128} padded rows are still 0")
        use, diff = bound_use(stacked[:256 * 128], ref_table, init_table, STEPS)
        print(f"{name}: embedding vs one rank's after {STEPS} steps: worst |diff| {diff:.3e}, {use:.3e} of the bound")
        check(use <= 1.0, f"{name}: the stacked embedding within the derived bound of one rank's (sgd_equivalence.py "
              f"(3): {GRAD_NOISE} of its displacement + {STEPS} ulps)")

tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
for name in ("vtp2pp2", "vtp2pad"):
    if not logs[name]:
        continue
    executor = executor_losses(BIN, MODEL, os.path.join(work, name), tokens, STEPS)
    if executor is None:
        continue
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, logs[name]["train_loss"]))
    print(f"{name}: executor {executor}; MPI {logs[name]['train_loss']}; worst relative {worst:.3e}")
    check(len(executor) == STEPS and worst <= EXEC_TOL, f"{name}: MPI run within {EXEC_TOL} relative of the executor")

finish()
