#!/usr/bin/env python3
"""CTest codegen-cpu-parameter-casts: the once-per-step 16-bit parameter cast is bit-equal to the per-call cast
(docs/MixedPrecision.md, "The once-per-step parameter cast").

    parameter_casts_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (models/gpt) is compiled twice per plan, `ptrain-compile --parameter-casts once` (the default: each
parameter rounded to 16 bits once per step, at the step's start) and `--parameter-casts per-call` (in every stage
call, as before), and trained by `ptrain-run` under mpirun for STEPS AdamW steps on the same batches with a
checkpoint. Requires of each plan:
* the stage functions of the `once` step cast no parameter, its steps cast each one (step.mlir);
* the training and validation losses of both runs equal bit for bit (the same ops on the same fp32 values);
* every state of every checkpoint file equal byte for byte (the 16-bit copy is derived, not saved; the master
  weights, moments, scaler and counters are the same bits);
* the compiled `once` step within EXECUTOR_BOUND of the multi-rank executor on the same IR at the first step.
Plans: pp 2 with 4 micro-batches in bf16 and in fp16 (scaler from 2^16), pp 2 fp16 from the scale 2^27 that this
model's binary16 GEMM operands really overflow (steps skipped by the scaler: the next step must cast the kept
parameters, not a stale copy), dp 2 with ZeRO-1 in bf16 (the all-gathered parameters feed the next step's cast),
and tp 2 x pp 2 in bf16. About 2 minutes on 2 cores.
"""

import json
import os
import re
import sys

from e2e import check, corpus, executor_losses, failures, finish, global_batches, read_checkpoint, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 4, 3
EXECUTOR_BOUND = 1e-5  # precision_tp_e2e.py's and loss_scale_e2e.py's bound at the first step
common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--clip-norm", "1.0"]
PLANS = {
    "pp2-bf16": ["--precision", "bf16", "--pp", "2", "--micro-batches", "4"],
    "pp2-fp16": ["--precision", "fp16", "--initial-loss-scale", "65536", "--pp", "2", "--micro-batches", "4"],
    "pp2-fp16-overflow": ["--precision", "fp16", "--initial-loss-scale", str(2 ** 27), "--loss-scale-window", "2",
                          "--pp", "2", "--micro-batches", "2"],
    "dp2-zero1-bf16": ["--precision", "bf16", "--dp", "2", "--zero", "1"],
    "tp2pp2-bf16": ["--precision", "bf16", "--tp", "2", "--pp", "2", "--micro-batches", "2"],
}
data = corpus(source, work)


def functions(step_mlir):
    """{name: body text} of the func.func ops of a step.mlir."""
    text = open(step_mlir).read()
    heads = list(re.finditer(r"^  func\.func @(\w+)\(", text, re.M))
    return {m.group(1): text[m.start():(heads[i + 1].start() if i + 1 < len(heads) else len(text))]
            for i, m in enumerate(heads)}


def parameter_casts(body):
    """The casts in `body` of a value computed from parameter reads through transposes (the IR's SSA names)."""
    derived = set(re.findall(r"(%\w+) = ptrain\.state_read @(?!step\b|optimizer_step\b|loss_scaler\b)", body))
    count = 0
    for line in body.splitlines():
        m = re.match(r"\s*(%\w+) = ptrain\.(transpose|reshape|cast) (%\w+)", line)
        if m and m.group(3) in derived:
            if m.group(2) == "cast":
                count += 1
            else:
                derived.add(m.group(1))
    return count


for name, flags in PLANS.items():
    runs = {}
    for casts in ("once", "per-call"):
        out = os.path.join(work, f"{name}-{casts}")
        rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, "-o", out, "--parameter-casts", casts,
                        *flags, *common])
        check(rc == 0, f"ptrain-compile {name} --parameter-casts {casts}" + ("" if rc == 0 else ":\n" + text[-3000:]))
        if rc:
            break
        log = os.path.join(work, f"{name}-{casts}.json")
        rc, text = run([os.path.join(BIN, "ptrain-run"), out, "--data", data, "--steps", str(STEPS), "--seed",
                        str(SEED), "--val-batches", "1", "--val-every", str(STEPS), "--log", log, "--checkpoint",
                        os.path.join(out, "ck"), "--timeout", "120", "--no-tensorboard", "--no-plots"], timeout=600)
        check(rc == 0, f"ptrain-run {name} {casts}" + ("" if rc == 0 else ":\n" + text[-3000:]))
        if rc:
            break
        runs[casts] = (out, json.load(open(log)))
    if len(runs) != 2:
        continue
    (once, log1), (per_call, log2) = runs["once"], runs["per-call"]
    fns = functions(os.path.join(once, "step.mlir"))
    in_stages = {f: parameter_casts(b) for f, b in fns.items() if not re.search(r"_(train|eval)_step$", f)}
    in_steps = {f: parameter_casts(b) for f, b in fns.items() if re.search(r"_train_step$", f)}
    per_call_stages = sum(parameter_casts(b) for f, b in functions(os.path.join(per_call, "step.mlir")).items()
                          if not re.search(r"_(train|eval)_step$", f))
    print(f"{name}: parameter casts in the stage functions: once {sum(in_stages.values())}, per-call "
          f"{per_call_stages}; in the training steps (once) {in_steps}")
    check(sum(in_stages.values()) == 0 and per_call_stages > 0 and all(v > 0 for v in in_steps.values()),
          f"{name}: the once step's stage functions cast no parameter (per-call's do), each training step does")
    l1, l2 = log1["train_loss"], log2["train_loss"]
    print(f"{name}: losses once {l1}, per-call {l2}; validation {log1.get('val_loss')} {log2.get('val_loss')}")
    check(len(l1) == STEPS and l1 == l2 and log1.get("val_loss") == log2.get("val_loss"),
          f"{name}: the training and validation losses equal bit for bit")
    files1 = sorted(f for f in os.listdir(once) if f.startswith("ck") and not f.endswith(".json"))
    files2 = sorted(f for f in os.listdir(per_call) if f.startswith("ck") and not f.endswith(".json"))
    # State by state: the files' headers and state order follow the step library (the once step reads its states
    # in another order), the states' bytes must not.
    states = [(read_checkpoint(os.path.join(once, f)), read_checkpoint(os.path.join(per_call, f))) for f in files1]
    same = files1 == files2 and files1 and all(a == b and a for a, b in states)
    check(bool(same), f"{name}: every state of the {len(files1)} checkpoint files "
          f"({sum(len(a) for a, _ in states)} states) equal byte for byte")
    plan = json.load(open(os.path.join(once, "plan.json")))
    tokens = global_batches(source, data, os.path.join(work, f"{name}-tokens.bin"), 1, SEED,
                            rows=plan["global_batch"], seq=plan["seq"])
    losses = executor_losses(BIN, MODEL, once, tokens, 1)
    if losses:
        gap = abs(losses[0] - l1[0]) / abs(losses[0])
        print(f"{name}: executor {losses[0]!r}, compiled {l1[0]!r}: relative difference {gap:.2e}")
        check(gap <= EXECUTOR_BOUND, f"{name}: the compiled once step within {EXECUTOR_BOUND} of the executor at step 1")
finish()
