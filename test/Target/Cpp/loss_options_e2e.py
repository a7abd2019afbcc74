#!/usr/bin/python3
"""CTest codegen-cpu-loss-options: padding (ignore_index), class weights and explicit labels under mpirun.

    loss_options_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

Needs /usr/bin/python3 with torch (Debian's python3-torch 1.13) and onnx (python3-onnx).

1. A padded corpus: data.py's text with 0 to 24 pad bytes (0) after every line, so the micro-batches and
   replicas of a step hold different numbers of real tokens. ptrain-compile the bundled GPT with SGD (lr 0.5,
   no momentum or decay) and `--ignore-index 0 --class-weights FILE` (w[c] = 0.5 + 0.25 (c mod 5)) on one
   global batch of 16 sequences: one rank with 4 micro-batches, and dp 2 x pp 2 with 2 micro-batches (4 ranks).
2. PyTorch (the same model in float64, python/ptrain_fixtures/models/gpt.py, with the ONNX file's weights) on the same
   global batches: F.cross_entropy(weight=w, ignore_index=0) of the next-token logits over the whole batch,
   the same SGD steps. The 3 step losses of both compiled runs (ptrain-run, mpirun) are within TORCH_TOL
   relative of PyTorch's: the mean is over the global count of counted tokens (sum(w[y]) over every
   micro-batch and replica); so are the multi-rank executor's on the dp2pp2 plan. Controls: the mean of the per-micro-batch means (the 4 micro-batches of 4 rows) and
   the unweighted mean both differ from PyTorch's step-1 loss by more than 10 x TORCH_TOL.
3. Explicit labels under pipeline stages: the bundled GPT with a second input `labels` ([4, 64] int64, unused by
   the graph; --import-options "--signature auto" makes it the step's labels), labels[o] = the next byte, or -100
   where that is a pad byte; --ignore-index -100, pp 2 with 4 micro-batches under mpirun (ptrain-run --labels)
   against the single-rank executor (ptrain-interpret --multi-rank of the one-rank plan with 4 micro-batches,
   --labels-file): the 3 step losses within EXEC_TOL relative; the labels reach the last stage (the plan's
   lowered step takes them) and no token id or label crosses the pipeline.
"""

import math
import os
import random
import struct
import sys

from e2e import check, corpus, failures, finish, run, setup

TORCH_TOL = 1e-6  # relative: f32 kernels (fp64 accumulation) vs PyTorch in f64, 3 SGD steps (measured 7.5e-8)
EXEC_TOL = 1e-5   # relative: MPI step losses vs the executor (f64 ops rounded to f32 vs f32 kernels)
# A large learning rate: the step-2 and step-3 losses depend strongly on the step-1 and step-2 gradients.
STEPS, SEED, LR, ROWS, SEQ = 3, 3, 0.5, 16, 64

build, source, work, BIN, MODEL = setup(sys.argv)
from ptrain import run_data

# 1. The padded corpus, the class weights and the explicit labels.
plain = corpus(source, work)
padded = os.path.join(work, "padded")
labels_dir = os.path.join(work, "labels")
os.makedirs(padded)
os.makedirs(labels_dir)
rng = random.Random(1)
for name in ("train", "val"):
    text = open(os.path.join(plain, f"{name}.bin"), "rb").read()
    out = b"".join(line + b"\n" + b"\0" * rng.randrange(25) for line in text.split(b"\n"))
    open(os.path.join(padded, f"{name}.bin"), "wb").write(out)
    labels = [out[o + 1] if out[o + 1] != 0 else -100 for o in range(len(out) - 1)] + [-100]
    open(os.path.join(labels_dir, f"{name}.labels"), "wb").write(struct.pack(f"<{len(labels)}q", *labels))
open(os.path.join(padded, "data.json"), "w").write('{"format": "bytes"}')  # raw bytes, declared (docs/Data.md)
VOCAB = 256
class_weights = [0.5 + 0.25 * (c % 5) for c in range(VOCAB)]
weights_file = os.path.join(work, "weights.txt")
open(weights_file, "w").write(" ".join(repr(w) for w in class_weights) + "\n")

common = ["--optimizer", "sgd", "--lr", str(LR), "--weight-decay", "0", "--warmup-steps", "1", "--total-steps", "100",
          "--target", "cpu"]
configs = {"ref": ["--micro-batches", "4"], "dp2pp2": ["--dp", "2", "--pp", "2", "--micro-batches", "2"]}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "--ignore-index", "0",
                   "--class-weights", weights_file, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)} --ignore-index 0 --class-weights" +
          ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
step_mlir = open(os.path.join(work, "dp2pp2", "step.mlir")).read()
check("ignore_index = 0" in step_mlir and "_loss_weight" in step_mlir and 'reduction = "sum"' in step_mlir,
      "dp2pp2 step.mlir: the summed, weighted cross-entropy and the label-weight function")
check("ptrain_cross_entropy_weighted_bwd_f32" in open(os.path.join(work, "dp2pp2", "step.cpp")).read(),
      "dp2pp2 step.cpp: the weighted cross-entropy kernels")


def train(name, data, *extra):
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(STEPS),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120", "--no-plots", *extra],
                  timeout=900)
    check(rc == 0, f"ptrain-run {name} {STEPS} steps" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return ptrain_run_log(log) if rc == 0 else None


def ptrain_run_log(path):
    import json
    return json.load(open(path))["train_loss"]


def global_batches(data_dir, what="tokens"):
    """The STEPS global batches ptrain-run draws ([ROWS, SEQ] each): token ids or, for `labels`, the labels."""
    train, val = run_data.read_data(*run_data.data_files(data_dir), SEQ)
    if what == "labels":
        train = run_data.read_labels(labels_dir, data_dir, train, val)[0]
    return [list(run_data.batch(train, ROWS, SEQ, SEED * 1000003 + i)) for i in range(STEPS)]


def write_batches(batches, path):
    with open(path, "wb") as f:
        for ids in batches:
            f.write(struct.pack(f"<{len(ids)}q", *ids))
    return path


def lr_at(t, warmup=1, total=100, min_ratio=0.1):
    """The step's schedule (lib/Interpreter/Optimizer.cpp): linear warm-up, cosine to min_ratio * LR."""
    if t <= warmup:
        return LR * t / warmup
    progress = min(1.0, max(0.0, (t - warmup) / (total - warmup)))
    return LR * min_ratio + LR * (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def torch_losses(batches):
    """PyTorch's weighted, padded next-token losses of STEPS SGD steps, with the controls of step 1."""
    import importlib.util

    import torch
    import torch.nn.functional as F

    from ptrain_fixtures.models.gpt import GPT
    # bench/pytorch/tokens_per_s.py's read_config, the script loaded from its file (it is not on the import path).
    spec = importlib.util.spec_from_file_location("tokens_per_s", os.path.join(source, "bench", "pytorch",
                                                                               "tokens_per_s.py"))
    tokens_per_s = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tokens_per_s)
    read_config = tokens_per_s.read_config
    torch.set_num_threads(1)
    cfg, _, weights = read_config(os.path.join(source, "models", "gpt"))
    model = GPT(cfg).double()
    model.load_state_dict({k: torch.from_numpy(weights[k].astype("float64")) for k in model.state_dict()})
    w = torch.tensor(class_weights, dtype=torch.float64)
    losses, controls = [], {}
    for i, ids in enumerate(batches):
        x = torch.tensor(ids, dtype=torch.int64).view(ROWS, SEQ)
        logits = model(x)[:, :-1].reshape(-1, VOCAB)
        y = x[:, 1:].reshape(-1)
        loss = F.cross_entropy(logits, y, weight=w, ignore_index=0)
        if i == 0:
            with torch.no_grad():
                per_micro = [F.cross_entropy(logits[k * 4 * (SEQ - 1):(k + 1) * 4 * (SEQ - 1)],
                                             y[k * 4 * (SEQ - 1):(k + 1) * 4 * (SEQ - 1)], weight=w, ignore_index=0)
                             for k in range(4)]
                controls["mean of micro-batch means"] = float(sum(per_micro) / 4)
                controls["unweighted"] = float(F.cross_entropy(logits, y, ignore_index=0))
                controls["counted tokens"] = int((y != 0).sum())
        losses.append(float(loss))
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr_at(i + 1) * p.grad
    return losses, controls


def relative(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


reference, controls = torch_losses(global_batches(padded))
print(f"PyTorch: {reference}; step-1 controls {controls}")
check(controls["counted tokens"] < ROWS * (SEQ - 1), "the first batch holds pad tokens (ignored positions)")
for what in ("mean of micro-batch means", "unweighted"):
    gap = abs(controls[what] - reference[0]) / reference[0]
    print(f"control '{what}': {controls[what]:.9g}, {gap:.3e} relative from PyTorch's step-1 loss")
    check(gap > 10 * TORCH_TOL, f"control '{what}' differs by more than 10 x TORCH_TOL")
for name in configs:
    losses = train(name, padded)
    if losses:
        worst = relative(losses, reference)
        print(f"{name}: {losses}; worst relative to PyTorch {worst:.3e}")
        check(len(losses) == STEPS and worst <= TORCH_TOL, f"{name}: the {STEPS} step losses within {TORCH_TOL} of "
              "PyTorch's weighted mean over the global count")

# The multi-rank executor on the dp2pp2 plan: the same global mean (ptrain-interpret --multi-rank).
rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, "dp2pp2", "step.mlir"), "--weights", MODEL,
               "--multi-rank", "--steps", str(STEPS), "--tokens-file",
               write_batches(global_batches(padded), os.path.join(work, "padded-tokens.bin"))], timeout=900)
check(rc == 0, "ptrain-interpret --multi-rank on dp2pp2/step.mlir" + ("" if rc == 0 else ":\n" + out[-3000:]))
if rc == 0:
    executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    worst = relative(executor, reference)
    print(f"dp2pp2 executor: {executor}; worst relative to PyTorch {worst:.3e}")
    check(len(executor) == STEPS and worst <= TORCH_TOL, f"dp2pp2 executor: within {TORCH_TOL} of PyTorch")

# 3. Explicit labels: the bundled GPT with a `labels` input, pp 2 under mpirun against the one-rank executor.
import onnx

model = onnx.load(MODEL)
labels_input = onnx.helper.make_tensor_value_info("labels", onnx.TensorProto.INT64, [4, SEQ])
model.graph.input.append(labels_input)
labelled = os.path.join(work, "gpt_labels.onnx")
onnx.save(model, labelled, save_as_external_data=True, location="gpt_labels.onnx.data")
label_configs = {"labels-ref": ["--micro-batches", "4"], "labels-pp2": ["--pp", "2", "--micro-batches", "4"]}
for name, flags in label_configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), labelled, "--import-options", "--signature auto", *flags,
                   *common, "--ignore-index", "-100", "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile (labels) {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
plan = open(os.path.join(work, "labels-pp2", "step.mlir")).read()
check("labels = true" in plan and '{ptrain.role = "labels"}' in plan,
      "labels-pp2 step.mlir: the lowered steps take the labels")
check(all("xi64" not in line for line in plan.splitlines() if "ptrain.send_start" in line),
      "labels-pp2 step.mlir: no token id or label crosses the pipeline (every send carries floats)")
mpi = train("labels-pp2", padded, "--labels", labels_dir)
rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, "labels-ref", "step.mlir"), "--weights",
               labelled, "--multi-rank", "--steps", str(STEPS),
               "--tokens-file", write_batches(global_batches(padded), os.path.join(work, "tokens.bin")),
               "--labels-file", write_batches(global_batches(padded, "labels"), os.path.join(work, "labels.bin"))],
              timeout=900)
check(rc == 0, "ptrain-interpret --multi-rank on labels-ref/step.mlir" + ("" if rc == 0 else ":\n" + out[-3000:]))
if rc == 0 and mpi:
    executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    worst = relative(mpi, executor)
    print(f"labels: pp2 under mpirun {mpi}; one-rank executor {executor}; worst relative {worst:.3e}")
    check(len(executor) == STEPS and worst <= EXEC_TOL, f"labels-pp2: within {EXEC_TOL} relative of the executor")
finish()
