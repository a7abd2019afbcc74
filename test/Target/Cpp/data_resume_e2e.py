#!/usr/bin/env python3
"""CTest codegen-cpu-data-resume: ptrain-run on token data (python/ptrain/token_data.py, loader.py; DESIGN.md
decision 13), its data position in the checkpoint, and the TensorBoard event file (python/ptrain/tb_events.py).

    data_resume_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (vocabulary 256) at dp = 2 x pp = 2 (2 micro-batches, AdamW lr 1e-3, optimus-cc's CB on the
backward link, so a codec state is resumed too). The data: a Megatron indexed dataset
(python/ptrain/megatron_index.py) of 300 documents of the Python standard library, each file's bytes as uint16 token ids ended by the
end-of-document id 0 (a byte-level tokenization; 0 never occurs in source text), held out by document.
1. 6 straight steps with a checkpoint (the manifest records consumed_samples = 6 x the global batch).
2. 3 steps with a checkpoint, then --resume for steps 4..6: the losses of steps 4..6 and every checkpoint file
   (every stage, every replica) are bit-equal to the straight run's, and the manifest's position equals it.
3. Another --seed draws another order: other losses.
3b. Resume at another dp degree (dp 1 x pp 2, the same compile's flags at --dp 1: python/ptrain/reshard.py) from
   the dp 2 checkpoint after step 3. A dp 1 step's global batch is half the dp 2 one (micro-batches and batch are
   compiled in; the reshard keeps them), so the dp 1 run takes steps 4..9 for the straight run's steps 4..6.
   Bit-equal, by --log-samples (each step's global batch, replica by replica, as the ranks read it): the dp 1
   run's samples of steps 4..9, concatenated, are the straight dp 2 run's of steps 4..6, and its manifest's
   consumed_samples is the straight run's (96). The states: resumed at dp 1 for 0 steps, its checkpoint holds
   every state that is no codec state (plan.json's kinds: parameters, gradient buffers, AdamW moments, step) bit
   for bit as the dp 2 checkpoint's replica 0 file (copied; the link residual is reset and SC's data-parallel
   states dropped, with a warning). Not compared: the parameters after
   further steps, which a dp 1 step updates from 8 samples where the dp 2 step used 16 (another average, not a
   rounding difference), so no tolerance is claimed for them.
3c. --sample-index megatron: 2 steps whose logged samples are Megatron's shuffle index
   (python/ptrain/megatron_sampler.py, itself compared with megatron-core's in python/tests) for 2 x 16 samples;
   resuming the epochs-order checkpoint with it is an error naming the sampler.
3d. --val-data: --data PREFIX (the train files) with --val-data PREFIX (the val files) is the folder's corpus:
   the step-0 validation loss and the first step's loss bit-equal to the straight run's.
4. The same corpus as nanoGPT token files (uint16, data.json) trains 1 step to a finite loss.
5. The TensorBoard event file beside the run log, read back with the tensorboard package's own event reader
   (EventAccumulator, from the project's .venv, scripts/setup-python.sh): train/loss for steps 1..6 equal to the
   run log's (as float32), val/loss, train/lr, train/tokens_per_s and the link bytes. Without .venv outside CI:
   that part is skipped with a message.
6. Errors before any rank starts (exit 1, one message, no traceback): a resume with another corpus (its
   training tokens named), an undeclared folder of .bin files, an id past the vocabulary (named with its
   position), a truncated .idx.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np

from e2e import check, failures, finish, read_checkpoint, run, setup, stdlib_megatron

build, source, work, BIN, MODEL = setup(sys.argv)
from ptrain import megatron_index

mega, docs = stdlib_megatron(work, 300, 285)

flags = ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--policy", "optimus-cc", "--lr", "1e-3",
         "--warmup-steps", "2", "--total-steps", "100", "--target", "cpu", "-o", os.path.join(work, "plan")]
rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags], timeout=600)
check(rc == 0, "ptrain-compile --dp 2 --pp 2 --policy optimus-cc" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()


def ptrain_run(data, steps, *extra):
    return run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "plan"), "--data", data, "--steps", str(steps),
                "--val-batches", "2", "--no-plots", "--timeout", "120", *extra], timeout=600)


ck = lambda name: os.path.join(work, name, "ck")  # noqa: E731
for name in ("straight", "first", "resumed", "seed1", "nano", "dp1", "dp1-0", "megatron", "valdata"):
    os.makedirs(os.path.join(work, name))
log = lambda name: json.load(open(os.path.join(work, name, "log.json")))  # noqa: E731
rc, out = ptrain_run(mega, 6, "--checkpoint", ck("straight"), "--log", os.path.join(work, "straight", "log.json"),
                     "--val-every", "3", "--log-samples")
check(rc == 0, "dp 2 x pp 2 on the Megatron dataset: 6 steps" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
position = json.load(open(ck("straight") + ".json"))["data"]
global_batch = json.load(open(os.path.join(work, "plan", "plan.json")))["global_batch"]
check(position["format"] == "megatron" and position["consumed_samples"] == 6 * global_batch and
      position["sampler"] == "epochs", f"the manifest's data position: {position}")

rc, out = ptrain_run(mega, 3, "--checkpoint", ck("first"), "--log", os.path.join(work, "first", "log.json"))
check(rc == 0, "3 steps with a checkpoint" + ("" if rc == 0 else ":\n" + out))
rc, out = ptrain_run(mega, 6, "--resume", ck("first"), "--checkpoint", ck("resumed"),
                     "--log", os.path.join(work, "resumed", "log.json"), "--val-every", "3")
check(rc == 0, "--resume for steps 4..6" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
straight, first, resumed = log("straight")["train_loss"], log("first")["train_loss"], log("resumed")["train_loss"]
print(f"straight {straight}\nresumed  {first} + {resumed}")
check(first == straight[:3] and resumed == straight[3:], "the resumed run's losses are the straight run's, bit for bit")
files = [f".stage{s}" + ("" if d == 0 else f".dp{d}") for s in (0, 1) for d in (0, 1)]
same = [f for f in files if os.path.isfile(ck("straight") + f) and
        read_checkpoint(ck("straight") + f) == read_checkpoint(ck("resumed") + f)]
check(len(same) == len(files), f"every checkpoint file bit-equal to the straight run's ({len(same)} of {len(files)}: "
      f"{', '.join(files)})")
check(json.load(open(ck("resumed") + ".json"))["data"] == position, "the resumed run's data position is the straight "
      "run's")

rc, out = ptrain_run(mega, 3, "--seed", "1", "--log", os.path.join(work, "seed1", "log.json"))
check(rc == 0 and log("seed1")["train_loss"] != straight[:3], "--seed 1 draws another order: other losses")



def run_records(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def step_samples(path):
    return {r["step"]: r["samples"] for r in run_records(path) if r.get("record") == "step" and "samples" in r}


# 3b. Resume at dp 1 from the dp 2 checkpoint after step 3.
straight_samples = step_samples(os.path.join(work, "straight", "run.jsonl"))
check(sorted(straight_samples) == [1, 2, 3, 4, 5, 6] and all(len(v) == global_batch for v in straight_samples.values()),
      f"--log-samples: 6 steps of {global_batch} samples in the straight run's run log")
dp1_flags = [x if x != "2" or flags[i - 1] != "--dp" else "1" for i, x in enumerate(flags)]
dp1_flags[-1] = os.path.join(work, "plan-dp1")
rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *dp1_flags], timeout=600)
check(rc == 0, "ptrain-compile --dp 1 --pp 2 (the same flags)" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()


def ptrain_run_dp1(steps, *extra):
    return run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "plan-dp1"), "--data", mega, "--steps", str(steps),
                "--val-batches", "2", "--no-plots", "--timeout", "120", *extra], timeout=600)


rc, out = ptrain_run_dp1(3, "--resume", ck("first"), "--checkpoint", ck("dp1-0"),
                         "--run-log", os.path.join(work, "dp1-0", "run.jsonl"))
check(rc == 0 and "was written at dp = 2; resharded to dp = 1" in out, "--resume of the dp 2 checkpoint at dp 1 for 0 "
      "steps: resharded, with the warning" + ("" if rc == 0 else ":\n" + out))
kinds = {st["key"]: st["kind"] for st in json.load(open(os.path.join(work, "plan", "plan.json")))["states"]}
for s in (0, 1):
    old, new = read_checkpoint(ck("first") + f".stage{s}"), read_checkpoint(ck("dp1-0") + f".stage{s}")
    plain = [k for k in old if not kinds[k].startswith("codec_")]
    differ = [k for k in plain if new.get(k) != old[k]]
    moments = sum(kinds[k] == "optimizer_moment" for k in plain)
    check(moments and kinds.get("step") == "step_counter" and not differ,
          f"stage {s}: the {len(plain)} states that are no codec state (parameters, gradients, {moments} AdamW "
          f"moments, step) resharded to dp 1 bit for bit" + (f"; differ: {differ}" if differ else ""))
rc, out = ptrain_run_dp1(9, "--resume", ck("first"), "--checkpoint", ck("dp1"), "--log-samples",
                         "--run-log", os.path.join(work, "dp1", "run.jsonl"))
check(rc == 0, "--resume at dp 1 for steps 4..9" + ("" if rc == 0 else ":\n" + out))
if rc == 0:
    dp1_samples = step_samples(os.path.join(work, "dp1", "run.jsonl"))
    got = [k for step in range(4, 10) for k in dp1_samples.get(step, [])]
    want = [k for step in range(4, 7) for k in straight_samples[step]]
    check(got == want, f"the dp 1 run's samples of steps 4..9 are the straight dp 2 run's of steps 4..6, in order "
          f"({len(got)} of {len(want)})")
    dp1_position = json.load(open(ck("dp1") + ".json"))["data"]
    check(dp1_position["consumed_samples"] == position["consumed_samples"] and dp1_position["seq"] == position["seq"],
          f"the dp 1 run's data position after step 9 is the straight run's after step 6: {dp1_position}")

# 3c. Megatron's sample index.
rc, out = ptrain_run(mega, 2, "--sample-index", "megatron", "--log-samples",
                     "--run-log", os.path.join(work, "megatron", "run.jsonl"))
check(rc == 0, "--sample-index megatron: 2 steps" + ("" if rc == 0 else ":\n" + out))
if rc == 0:
    from ptrain import megatron_sampler, token_data  # noqa: E402
    train = token_data.open_corpus(mega).train
    index = megatron_sampler.MegatronSampler(train.lengths, position["seq"], 2 * global_batch, 0)
    got = step_samples(os.path.join(work, "megatron", "run.jsonl"))
    check([k for step in (1, 2) for k in got.get(step, [])] == [index.sample(p) for p in range(2 * global_batch)],
          "--sample-index megatron: the steps read Megatron's shuffle index in order")
rc, out = ptrain_run(mega, 6, "--resume", ck("first"), "--sample-index", "megatron")
check(rc == 1 and "its sampler is 'epochs'" in out and "Traceback" not in out,
      "resuming an epochs-order checkpoint with --sample-index megatron: refused, naming the sampler:\n  " + out.strip())

# 3d. --val-data.
rc, out = ptrain_run(os.path.join(mega, "train"), 1, "--val-data", os.path.join(mega, "val"),
                     "--log", os.path.join(work, "valdata", "log.json"))
check(rc == 0, "--data PREFIX --val-data PREFIX" + ("" if rc == 0 else ":\n" + out))
if rc == 0:
    ours, ref = log("valdata"), log("straight")
    check(ours["val_loss"][0] == ref["val_loss"][0] and ours["train_loss"][0] == ref["train_loss"][0],
          f"--val-data: the step-0 validation loss and step 1's loss are the folder corpus's "
          f"({ours['val_loss'][0]}, {ours['train_loss'][0]} vs {ref['val_loss'][0]}, {ref['train_loss'][0]})")

# 4. nanoGPT token files of the same documents.
nano = os.path.join(work, "nano-data")
os.makedirs(nano)
for name, part in (("train", docs[:285]), ("val", docs[285:])):
    np.concatenate([np.asarray(d, dtype="<u2") for d in part]).tofile(os.path.join(nano, f"{name}.bin"))
with open(os.path.join(nano, "data.json"), "w") as f:
    json.dump({"format": "nanogpt", "dtype": "uint16", "vocab_size": 256, "eod": 0}, f)
rc, out = ptrain_run(nano, 1, "--log", os.path.join(work, "nano", "log.json"))
check(rc == 0 and np.isfinite(log("nano")["train_loss"][0]), "nanoGPT token files: one step, a finite loss" +
      ("" if rc == 0 else ":\n" + out))

# 5. TensorBoard, read back by the tensorboard package (the project's .venv).
venv = os.path.join(source, ".venv", "bin", "python")
tb = os.path.join(work, "straight", "tensorboard")
READER = """
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
print(json.dumps({tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}))
"""
if os.path.isfile(venv):
    p = subprocess.run([venv, "-c", READER, tb], capture_output=True, text=True)
    check(p.returncode == 0, "tensorboard's EventAccumulator reads the event file" +
          ("" if p.returncode == 0 else ":\n" + p.stderr))
    if p.returncode == 0:
        scalars = json.loads(p.stdout)
        want = [[i + 1, float(np.float32(x))] for i, x in enumerate(straight)]
        check(scalars.get("train/loss") == want, f"train/loss of steps 1..6 equals the run log's: "
              f"{scalars.get('train/loss')}")
        check([s for s, _ in scalars.get("val/loss", [])] == [0, 3, 6], "val/loss at steps 0, 3, 6")
        lrs = [v for _, v in scalars.get("train/lr", [])]
        check(len(lrs) == 6 and abs(lrs[0] - 5e-4) < 1e-9 and abs(lrs[1] - 1e-3) < 1e-9 and lrs[5] < lrs[1],
              f"train/lr: warm-up to 1e-3 over 2 steps, then the cosine: {lrs}")
        check(len(scalars.get("train/tokens_per_s", [])) == 6, "train/tokens_per_s per step")
        links = [t for t in scalars if t.startswith("bytes/pp backward")]
        check(links and all(v > 0 for t in links for _, v in scalars[t]), f"link bytes: {links}")
elif os.environ.get("CI"):
    check(False, f"{venv} missing in CI (scripts/setup-python.sh makes it)")
else:
    print(f"skip the TensorBoard read-back: no {venv} (bash scripts/setup-python.sh)")

# 6. Errors before any rank starts.
other = os.path.join(work, "other")
os.makedirs(other)
for name in ("train", "val"):
    for ext in (".bin", ".idx"):
        shutil.copy(os.path.join(mega, name + ext), os.path.join(other, name + ext))
megatron_index.write(os.path.join(other, "train"), docs[:200], np.uint16)
rc, out = ptrain_run(other, 6, "--resume", ck("first"))
check(rc == 1 and "trained on other data: its train_tokens is" in out and "Traceback" not in out,
      "a resume on another corpus: refused, naming the training tokens:\n  " + out.strip())
bare = os.path.join(work, "bare")
os.makedirs(bare)
shutil.copy(os.path.join(nano, "train.bin"), bare)
shutil.copy(os.path.join(nano, "val.bin"), bare)
rc, out = ptrain_run(bare, 1)
check(rc == 1 and "its format is not declared" in out and "Traceback" not in out,
      "an undeclared folder of .bin files: refused:\n  " + out.strip())
bad = os.path.join(work, "bad")
shutil.copytree(nano, bad)
ids = np.fromfile(os.path.join(bad, "val.bin"), dtype="<u2")
ids[1234] = 300
ids.tofile(os.path.join(bad, "val.bin"))
rc, out = ptrain_run(bad, 1)
check(rc == 1 and "token id 300 at position 1234 is outside the model's vocabulary of 256" in out,
      "an id past the vocabulary: named with its position:\n  " + out.strip())
trunc = os.path.join(work, "trunc")
shutil.copytree(mega, trunc)
with open(os.path.join(trunc, "train.idx"), "r+b") as f:
    f.truncate(os.path.getsize(os.path.join(trunc, "train.idx")) - 8)
rc, out = ptrain_run(trunc, 1)
check(rc == 1 and "train.idx: truncated" in out and "Traceback" not in out, "a truncated .idx:\n  " + out.strip())
finish()
