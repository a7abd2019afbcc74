#!/usr/bin/env python3
"""CTest codegen-cpu-tp-half-codecs: 16-bit top-k and rand-k values on compressed TP sites under mpirun (issue 24).

    tensor_parallel_half_codecs_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (4 layers, hidden 128) at --tp 2, 4 micro-batches of 4 x 64 (the global batch of 16 sequences,
seed 5), AdamW lr 1e-3, 3 steps, 2 MPI ranks, `--policy mcbench` with top-k 25% on every forward TP all-reduce and
rand-k 25% (error feedback) on every backward one, compiled with `--precision fp32` and `--precision bf16`:
1. step.mlir: every compressed TP all-reduce of the bf16 plan carries `value_type = bf16`
   (`ptrain.compressed_all_reduce_start` C8, set by --ptrain-widen-half-codecs), and step.cpp's codec descriptors
   `value_dtype` PTRAIN_DTYPE_BF16 (ptrain_codec_t version 2); the fp32 plan's neither.
2. The runtime's byte counters ("tp collectives", the bytes each rank hands to MPI, summed over the ranks): a
   top-k site's code is k values and k int32 indices, a rand-k site's k values (k = 8,192 of the 4 x 64 x 128
   activation); fp32 hands 4-byte values (top-k's all-gather 65,536 bytes, rand-k's all-reduce 32,768), bf16
   2-byte ones (49,152 and 16,384, rand-k all-gathered): exactly, per step
   TP x LAYERS x M x 2 sites of each codec.
3. The timing model (`ptrain-compile --report`: a rank's bytes per step) prices the same codes: the bf16 plan's
   modelled TP bytes of a rank are those of the 2-byte values (each site's (tp - 1) x code bytes, the all-gather's).
4. The compiled bf16 step against the multi-rank executor on the same step.mlir and batches: within EXEC_TOL
   relative at every step (the executor rounds the values and keeps the rounding in the residual as the runtime
   does); and it trains within LOSS_TOL of the fp32 plan's losses with the same codecs.
"""

import json
import os
import sys

from e2e import (check, compile_plans, corpus, executor_losses, failures, finish, global_batches, print_losses,
                 setup, train_logs)

LOSS_TOL = 1e-2   # relative, the bf16 plan's step losses vs the fp32 plan's (issue 24: bf16 within 1%)
# Relative, MPI step losses vs the executor. The executor computes model ops in f64 and rounds once, the generated
# code in f32; top-k's selection turns a last-bit difference into another kept element, so sparse plans agree less
# closely than the dense codecs' 1e-5 (measured below; the bound is that of docs/MixedPrecision.md's bf16 plans).
EXEC_TOL = 2e-4

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
B, S, H, M, LAYERS, TP = 4, 64, 128, 4, 4, 2
data = corpus(source, work)

common = ["--tp", str(TP), "--micro-batches", str(M), "--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100",
          "--target", "cpu", "--policy", "mcbench", "--compress-options",
          "tp-fwd-codec=topk:ratio=0.25 tp-bwd-codec=randk:ratio=0.25,seed=3"]
configs = {name: ["--precision", name, "--report", os.path.join(work, name + "-report.json")]
           for name in ("fp32", "bf16")}
plans = compile_plans(BIN, MODEL, work, configs, common)
if failures:
    finish()

# 1. The IR: value_type on every compressed TP all-reduce of the bf16 plan.
sites = {}
for name in configs:
    lines = [l for l in open(os.path.join(work, name, "step.mlir")).read().splitlines()
             if "ptrain.compressed_all_reduce_start" in l and "axes [tp]" in l]
    sites[name] = lines
    print(f"{name}: {len(lines)} compressed TP all-reduce ops in step.mlir, "
          f"{sum('value_type = bf16' in l for l in lines)} with value_type = bf16")
check(sites["bf16"] and all("value_type = bf16" in l for l in sites["bf16"]),
      "bf16: every compressed TP all-reduce sends bf16 values (value_type = bf16)")
check(sites["fp32"] and not any("value_type" in l for l in sites["fp32"]), "fp32: no value_type")
# The CPU emitter's descriptors: value_dtype (version 2's last field) bf16 on the bf16 plan's sites, f32 on fp32's.
descriptors = {name: [l.strip() for l in open(os.path.join(work, name, "step.cpp")).read().splitlines()
                      if "static const ptrain_codec_t codec = {PTRAIN_CODEC_" in l] for name in configs}
check(descriptors["bf16"] and all(l.endswith(", PTRAIN_DTYPE_BF16};") for l in descriptors["bf16"]),
      f"bf16: every codec descriptor in step.cpp has value_dtype PTRAIN_DTYPE_BF16 ({len(descriptors['bf16'])})")
check(descriptors["fp32"] and all(l.endswith(", PTRAIN_DTYPE_F32};") for l in descriptors["fp32"]),
      "fp32: every descriptor's value_dtype is PTRAIN_DTYPE_F32")


logs = train_logs(BIN, work, data, configs, steps=STEPS, seed=SEED, timeout=120)
if len(logs) != len(configs):
    finish()
print_losses(logs, base="fp32")

# 2. Bytes per step of the tp communicator, exactly.
numel = B * S * H
k = numel // 4
sites_per_codec = TP * LAYERS * M * 2  # per step, summed over the tp ranks: g twice (forward), f's gradient twice
align8 = lambda n: (n + 7) // 8 * 8
code = {"fp32": {"topk": align8(4 * k) + align8(4 * k), "randk": 4 * k},
        "bf16": {"topk": align8(2 * k) + align8(4 * k), "randk": align8(2 * k)}}
per_step = {name: log["traffic"]["tp collectives"]["bytes"] // STEPS for name, log in logs.items()}
for name in configs:
    want = sites_per_codec * (code[name]["topk"] + code[name]["randk"])
    check(per_step[name] == want,
          f"{name}: tp collectives = {sites_per_codec} x ({code[name]['topk']:,} top-k + {code[name]['randk']:,} rand-k "
          f"code bytes) = {want:,} per step (measured {per_step[name]:,})")
print(f"bf16 / fp32 tp bytes: {per_step['bf16'] / per_step['fp32']:.4f} "
      f"(top-k {code['bf16']['topk'] / code['fp32']['topk']:.2f}, rand-k {code['bf16']['randk'] / code['fp32']['randk']:.2f})")

# 3. The timing model's TP bytes (the report's bytes per rank and iteration; at pp = 1 the fused FB step holds every
# site): (tp - 1) x the code of each site, the all-gather's (fp32's rand-k all-reduce moves 2 (tp - 1) / tp of its
# values, the same bytes at tp = 2).
for name in configs:
    stages = json.load(open(os.path.join(work, name + "-report.json")))["stages"]
    modelled = sum(s["intra_node_bytes"] + s["inter_node_bytes"] for s in stages)
    want = M * LAYERS * 2 * (TP - 1) * (code[name]["topk"] + code[name]["randk"])
    check(abs(modelled - want) <= 1e-6 * want,
          f"{name}: the timing model's TP bytes per rank and step {modelled:,.0f} = {want:,} (the runtime's codes)")

# 4. The compiled bf16 step against the executor, and bf16 against fp32.
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
executor = executor_losses(BIN, MODEL, os.path.join(work, "bf16"), tokens, STEPS)
if executor:
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, logs["bf16"]["train_loss"]))
    print(f"bf16: executor train {executor}; MPI {logs['bf16']['train_loss']}; worst relative {worst:.3e}")
    check(len(executor) == STEPS and worst <= EXEC_TOL, f"bf16: MPI run within {EXEC_TOL} relative of the executor")
losses, ref = logs["bf16"]["train_loss"], logs["fp32"]["train_loss"]
worst = max(abs(x - y) / y for x, y in zip(losses, ref))
check(len(losses) == STEPS and worst <= LOSS_TOL and losses[-1] < losses[0],
      f"bf16 trains, every step loss within {LOSS_TOL} relative of fp32's with the same codecs (worst {worst:.2e})")

finish()
