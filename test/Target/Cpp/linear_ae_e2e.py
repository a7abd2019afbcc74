#!/usr/bin/env python3
"""CTest codegen-cpu-linear-ae: MCBench's linear autoencoder compiled to C++ and trained under mpirun (issue 8).

    linear_ae_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (hidden H = 128), pp = 2 with 1F1B and 4 micro-batches of 4 x 64 tokens, AdamW (lr 1e-3,
warm-up 1), `ptrain-compile --linear-ae 64`: the encoder W_e (128 x 64) ends stage 0, the decoder W_d (64 x 128)
starts stage 1, both new parameters that the ONNX model does not hold and that start from their orthogonal
`ptrain.init` (ptrain_state_init_onnx on each rank: W_d = W_e^T).
1. plan.json lists both weights with their init (seed 0, the boundary's index) on their stages.
2. ptrain-run 5 steps (seed 3, checkpoint): the training loss falls (step 5 below step 1).
3. The runtime's byte counters: forward 0->1 and backward 1->0 each carry 4 codes of 4 x 64 x 64 f32 per step,
   4 x 4 x 64 x 64 x 4 = 262,144 bytes, H / 64 = 2 times less than the 4 x 4 x 64 x 128 x 4 = 524,288 bytes of
   the plan without the autoencoder (the size codegen-cpu-compressed measures for it).
4. The multi-rank executor (ptrain-interpret --multi-rank --weights gpt.onnx: the same default initializer
   through the interpreter) on the same plan and global batches gives the first 3 losses within 1e-5 relative.
5. Checkpoints: stage 0's holds the encoder, stage 1's the decoder, trained away from the start but still
   near it (|W_e - W_d^T| in (1e-4, 0.05): they started equal and moved 5 AdamW steps of lr 1e-3 apart); a run
   of 3 steps resumed to 5 ends with checkpoints byte-identical to the straight run's.
6. Errors: --linear-ae without a pipeline, a code size of 0 or above the hidden size, --linear-ae-skip-stages
   without --linear-ae or leaving no boundary.
"""

import json
import math
import os
import struct
import sys

from e2e import (check, corpus, executor_losses, failures, finish, global_batches, read_checkpoint, run,
                 setup)

build, source, work, BIN, MODEL = setup(sys.argv)
SEED = 3
B, S, H, D, M = 4, 64, 128, 64, 4
data = corpus(source, work)
common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu", "--pp", "2",
          "--micro-batches", str(M)]
out = os.path.join(work, "ae")
rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, "--linear-ae", str(D), "-o", out])
check(rc == 0, f"ptrain-compile --pp 2 --linear-ae {D}" + ("" if rc == 0 else ":\n" + text))
if failures:
    finish()

# 1. The plan.
plan = json.load(open(os.path.join(out, "plan.json")))
ae_states = {s["key"]: s for s in plan["states"] if s["key"] in ("ae/0->1/encoder", "ae/0->1/decoder")}
check(plan.get("linear_ae") == {"dim": D, "skip_stages": 0}, f"plan.json records the autoencoder: {plan.get('linear_ae')}")
check(sorted(ae_states) == ["ae/0->1/decoder", "ae/0->1/encoder"]
      and ae_states["ae/0->1/encoder"]["shape"] == [H, D] and ae_states["ae/0->1/decoder"]["shape"] == [D, H]
      and all(s["kind"] == "parameter" for s in ae_states.values())
      and ae_states["ae/0->1/encoder"].get("init") == {"kind": "orthogonal", "seed": 0}
      and ae_states["ae/0->1/decoder"].get("init") == {"kind": "orthogonal_transposed", "seed": 0},
      f"plan.json: encoder {H} x {D} (orthogonal) and decoder {D} x {H} (orthogonal_transposed), seed 0")


def train(steps, extra=()):
    log = os.path.join(work, f"ae-{steps}-{len(extra)}.json")
    rc, text = run([os.path.join(BIN, "ptrain-run"), out, "--data", data, "--steps", str(steps), "--val-batches", "1",
                    "--seed", str(SEED), "--log", log, "--timeout", "120", *extra], timeout=600)
    check(rc == 0, f"ptrain-run --linear-ae plan, {steps} steps {' '.join(extra)}" + ("" if rc == 0 else ":\n" + text))
    return json.load(open(log)) if rc == 0 else None


# 2. Training.
straight = train(5, ["--checkpoint", os.path.join(work, "straight")])
if straight is None:
    finish()
losses = straight["train_loss"]
print(f"train loss {losses}, val loss {straight['val_loss']}")
check(len(losses) == 5 and losses[-1] < losses[0], f"the loss falls: {losses[0]:.6f} -> {losses[-1]:.6f}")

# 3. Bytes per step.
code, full = M * B * S * D * 4, M * B * S * H * 4
steps = straight["steps"] - straight["start_step"]
traffic = straight["traffic"]
print("traffic per step: " + ", ".join(f"{k} {v['bytes'] // steps}" for k, v in traffic.items()))
for link in ("pp forward 0->1", "pp backward 1->0"):
    got = traffic.get(link, {}).get("bytes", -1)
    check(got == steps * code and traffic[link]["messages"] == steps * M,
          f"{link}: {got // steps if got > 0 else got} bytes in {M} messages per step = {code} "
          f"({full // code}x less than {full})")

# 4. Against the executor.
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), 3, SEED)
executor = executor_losses(BIN, MODEL, out, tokens, 3)
if executor is not None:
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, losses[:3]))
    print(f"executor {executor}, worst relative difference to mpirun {worst:.3e}")
    check(len(executor) == 3 and worst <= 1e-5, "compiled AE plan under mpirun = executor within 1e-5 relative")

# 5. Checkpoints.
encoder = read_checkpoint(os.path.join(work, "straight.stage0")).get("ae/0->1/encoder", b"")
decoder = read_checkpoint(os.path.join(work, "straight.stage1")).get("ae/0->1/decoder", b"")
check(len(encoder) == H * D * 4 and len(decoder) == D * H * 4, "stage 0 saves the encoder, stage 1 the decoder")
if len(encoder) == H * D * 4 and len(decoder) == D * H * 4:
    we, wd = struct.unpack(f"<{H * D}f", encoder), struct.unpack(f"<{D * H}f", decoder)
    apart = max(abs(we[i * D + j] - wd[j * H + i]) for i in range(H) for j in range(D))
    column = math.sqrt(sum(we[i * D] ** 2 for i in range(H)))
    print(f"after 5 steps: max |W_e - W_d^T| {apart:.3e}, |W_e[:, 0]| {column:.6f}")
    check(1e-4 < apart < 0.05, "trained from W_d = W_e^T: apart by more than 1e-4 and less than 0.05")
    check(abs(column - 1) < 0.05, "the encoder's columns are still near unit length")
short = train(3, ["--checkpoint", os.path.join(work, "after3")])
again = train(5, ["--resume", os.path.join(work, "after3"), "--checkpoint", os.path.join(work, "resumed")])
if short and again:
    check(again["train_loss"] == losses[3:], f"resumed steps 4-5 {again['train_loss']} = the straight run's")
    for s in (0, 1):
        a = open(os.path.join(work, f"straight.stage{s}"), "rb").read()
        b = open(os.path.join(work, f"resumed.stage{s}"), "rb").read()
        check(a == b, f"stage {s}: the resumed run's final checkpoint equals the straight run's, byte for byte")

# 6. Errors, each before anything runs or from the pass, with no output left.
for flags, message in ((["--linear-ae", "64"], "needs --pp > 1 (got --pp 1)"),
                       (common + ["--linear-ae", "0"], "--linear-ae 0: the code size must be at least 1"),
                       (common + ["--linear-ae", "129"], "dim 129 exceeds the hidden size 128"),
                       (common + ["--linear-ae-skip-stages", "1"], "--linear-ae-skip-stages 1 without --linear-ae"),
                       (common + ["--linear-ae", "8", "--linear-ae-skip-stages", "1"],
                        "--linear-ae-skip-stages 1: must be in [0, 0]")):
    bad = os.path.join(work, "bad")
    rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, "-o", bad])
    check(rc != 0 and message in text and not os.path.exists(bad), f"ptrain-compile {' '.join(flags[-2:])}: {message}"
          + ("" if rc != 0 and message in text else ":\n" + text))

finish()
