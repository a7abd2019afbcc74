"""ptrain-run: train a compiled step (ptrain-compile's out/), one process per grid rank (dp x pp x tp): under mpirun
(CPU plans), by its own torchrun-style launcher (CUDA plans), or as one rank of torchrun.

    ptrain-run out/ --data DIR|PREFIX|FILE [--data-format F] [--val-data DIR|PREFIX|FILE]
               [--sample-index epochs|megatron] [--log-samples] --steps N [--val-every K] [--val-batches V] [--np P]
               [--checkpoint PATH] [--resume PATH] [--seed S] [--log run.json] [--timeout SECONDS]
               [--telemetry-every N] [--run-log RUN.jsonl] [--no-plots] [--mpirun-args "ARGS"]
               [--labels DIR] [--launcher env|mpirun] [--tensorboard DIR | --no-tensorboard]

The launcher checks its inputs (out/plan.json, out/libstep.so, the data, the world size; plan.json must equal
the plan embedded in libstep.so, field by field: plan_abi.py), then starts
`mpirun -np <dp * pp * tp of plan.json> --oversubscribe --mca mpi_yield_when_idle 1` (as root with
OMPI_ALLOW_RUN_AS_ROOT{,_CONFIRM}=1; OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1 per rank) running this file with
--worker. Each worker loads libstep.so with ctypes, calls ptrain_step_init (weights from the ONNX model named
in plan.json; MPI and the pipeline communicator), and for every step feeds its replica's micro_batches x batch
sequences of seq tokens and calls ptrain_step_train; its stage runs its row of the schedule. The data's format
is read from its files (python/ptrain/token_data.py, docs/Data.md: Megatron-LM indexed datasets, nanoGPT token
files, raw bytes by declaration; --data-format states it) and memory-mapped; python/ptrain/loader.py orders the
samples (token formats: a seeded permutation per epoch, the samples consumed being the checkpoint's data
position; bytes: windows at starts from random.Random(seed * 1000003 + step), as before). With dp > 1 a step's
batch is the global one, dp times as many rows, of which data-parallel replica d takes rows [d R, (d + 1) R).
Rank r is the grid coordinate (d, s, t) = (r // (pp * tp), (r // tp) % pp, r % tp) over (dp, pp, tp): tp
innermost (Megatron-LM's order); the tp ranks of a stage train on the same rows, each on its parameter
slices. Rank 0 shows a progress bar (tqdm
when importable, else one plain line) with the loss and tokens/s (tokens = micro_batches x batch x seq per
step). Every K steps and after the last, the validation loss is the mean of ptrain_step_eval over V fixed
batches of the held-out data. At the end, ptrain_step_save writes the checkpoint (one file per stage:
PATH.stage<s> when pp > 1; PATH[.stage<s>].tp<t>, tp rank t's part, when tp > 1; with codec states and dp > 1
also PATH[.stage<s>][.tp<t>].dp<d>, replica d's own, since each replica's residuals differ) and PATH.json, the data
position (steps done, seed, samples consumed; python/ptrain/manifest.py). --resume PATH loads such a checkpoint
(every state by key:
parameters, AdamW moments and step, codec residuals and warm-start Q) and continues from its step to step N with
the batches a straight run would draw: the result equals the uninterrupted run's (a checkpoint of other data is
an error naming what differs). Before any rank starts the
manifest is checked against the plan: another compile's checkpoint is an error naming both fingerprints, another
pp or tp an error, a missing file named; one of the same plan at another dp is resharded by DESIGN.md decision
5 (python/ptrain/reshard.py: parameters and moments copied, data-parallel residuals averaged, link residuals
reset) with a warning naming each state not copied. --log writes the losses as JSON (rank 0).

Launchers (--launcher; default mpirun for a CPU plan, env for a --target cuda plan): mpirun as below, or env,
python/ptrain/launcher.py: one process per rank with torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
MASTER_ADDR and MASTER_PORT (a free port), output prefixed "[rank r] ", a failed rank ends the others (2 s for
their own errors, SIGTERM, SIGKILL), Ctrl-C forwarded, no rank outliving the launcher, each failed rank's error
named at the end. A CPU plan of more than one rank needs MPI: refused under env. Started with RANK and
WORLD_SIZE in its environment and not under mpirun (torchrun), ptrain-run is that one rank: the launcher's
checks, then the worker; WORLD_SIZE must be the plan's world.

Explicit labels (a step compiled from an export with a labels input, `--import-options "--signature auto"`;
docs/TrainingStep.md): --labels DIR holds train.labels and val.labels, int64 little-endian, one label per byte
of --data's train.bin / val.bin (so --data must be a folder): the window of seq bytes at offset o is scored
against the labels at o .. o + seq - 1, and ptrain_step_train_labels / ptrain_step_eval_labels receive them
(every rank its replica's rows; only the last stage reads them). A label that is neither the step's
ignore index nor a token id is the runtime's error. A labels step without --labels, or --labels for a step
without labels, is an error before training.

Traffic: the runtime counts the bytes every rank hands to MPI, or to NCCL on a --target cuda plan (docs/Runtime.md,
"Traffic counters"; docs/CodegenCuda.md). Rank 0
prints, after training, the bytes per training step on each link: the inter-stage forward (stage s -> s + 1)
and backward (s -> s - 1) point-to-point traffic summed over data-parallel replicas, and the collectives of
each communicator (dp gradients, pp loss and tied embedding) summed over ranks; validation is not counted.
The log's "traffic" has the totals over all training steps.

Run log and plots (docs/CodegenCpu.md, "Run log and plots"): rank 0 writes a JSON-lines run log (--run-log;
default run.jsonl beside the checkpoint, else in out/): a "run" record (plan, links, codec sites), one "step"
record per training step (train loss, val loss where validated, bytes per link of that step, and on measured
steps the codec telemetry per site: error, residual norm, LEP cosine) and an "end" record. --telemetry-every N
measures every N-th step (0, the default: off; the step before a measured one keeps each site's input for the
LEP cosine). At the end, python/ptrain/plots.py draws the PNGs beside the log (a missing matplotlib is a message).
Rank 0 also writes a TensorBoard event file (python/ptrain/tb_events.py) in tensorboard/ beside the run log
(--tensorboard DIR, --no-tensorboard): loss, validation loss, learning rate, tokens/s, MFU with a cluster file,
bytes per link and codec telemetry, one event per step.

--mpirun-args adds options to the mpirun command after the defaults (e.g. the hosts, rsh agent and TCP interfaces
of the emulated two-node cluster, bench/cluster/run.sh). The log (--log) also has "step_seconds", each training
step's wall time on rank 0 (ptrain_step_train alone), for medians, and "step_cpu_seconds", the CPU time (user +
system, all threads) of rank 0's process in that call, which other load on the machine disturbs less.

A --target cuda plan (docs/CodegenCuda.md, "Multi-rank steps") runs with one process per GPU: after the world
size, the launcher asks the step for the CUDA devices (ptrain_step_cuda_devices, in a child process;
PTRAIN_RUN_DEVICE_PROBE=0 skips it, for the tests) and refuses a world larger than their count (NCCL refuses two
ranks on one device); each rank's ptrain_step_init makes the NCCL communicators on device LOCAL_RANK (the NCCL
id over the runtime's TCP rendezvous), or under mpirun over MPI on device OMPI_COMM_WORLD_LOCAL_RANK.

Errors are messages and a nonzero exit, never a hang: every communication has the runtime's deadline
(PTRAIN_COMM_TIMEOUT_S, --timeout) and names the operation, the peer or group, the size (and a collective's
dtype) and the training step (ptrain_comm_set_step before each step); a rank that fails prints its error,
then ends every rank with ptrain_step_abort (MPI_Abort) and exits nonzero, so a rank that stalls instead of
failing cannot keep the job alive. PTRAIN_RUN_STALL=RANK:STEP (for the tests) makes that rank sleep before
that training step (1-based) instead of posting its operations, a real stalled rank. The launcher refuses,
before mpirun starts, data whose format is not declared or whose files are malformed, a token id outside the
model's vocabulary (the first one, with its position), a split shorter than one sequence, --val-batches
0, a --timeout that is not a positive number, --mpirun-args that do not split into words (an unbalanced
quote), and --log or --memory-log in a folder that does not exist; a
file a rank cannot write (OSError) is a message naming it. A failed run leaves no run log that reads like a
finished run's: the launcher renames it RUN.jsonl.failed (the steps up to the failure).
"""

import argparse
import array
import ctypes
import ctypes.util
import json
import math
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from ptrain import loader, manifest, plan_abi, reshard, tb_events, token_data  # noqa: E402

PLAN_KEYS = ("pp", "micro_batches", "batch", "seq", "vocab", "model", "library")


DATA_FORMATS = """data formats (--data; declared by the files, never guessed from the model; docs/Data.md):
  megatron  Megatron-LM's indexed dataset: --data PREFIX with PREFIX.idx (MMIDIDX header, dtype code, sequence
            lengths, pointers, document index) and PREFIX.bin; the last documents // 20 documents are held out
            for validation (unless --val-data). Or --data DIR with train.idx/train.bin and val.idx/val.bin
            (ptrain-data).
  nanogpt   nanoGPT's token files DIR/train.bin, DIR/val.bin (uint16; uint32 above 65,536 ids), declared by
            DIR/data.json {"format": "nanogpt", "dtype": "uint16", "vocab_size": N[, "eod": ID]} or
            nanoGPT's DIR/meta.pkl (vocab_size).
  bytes     raw bytes, each byte one token id: DIR/data.json {"format": "bytes"} (python/ptrain/data.py writes
            it) beside train.bin and val.bin, or --data-format bytes for a folder or a single file.
Every token id must be below the model's vocabulary (else the first offending id, its position and the
vocabulary are named). Token formats: samples of seq tokens in a seeded order of epochs (--sample-index
epochs), or Megatron-LM GPTDataset's document, sample and shuffle index (--sample-index megatron, Megatron
files), each dp replica reading its rows; the samples consumed are the checkpoint's data position, so --resume
continues on the next batch, also at another dp. --val-data names a separate validation source: a Megatron
PREFIX (all its documents; a --data PREFIX then trains on all of its own), a folder (its val split) or a bytes
file (all of it). Make token files with ptrain-data (a BPE or Unigram tokenizer)."""


class RunError(Exception):
    pass


def load_plan(out_dir):
    if not os.path.isdir(out_dir):
        raise RunError(f"{out_dir}: no such directory (the -o folder of ptrain-compile)")
    path = os.path.join(out_dir, "plan.json")
    try:
        with open(path) as f:
            plan = json.load(f)
    except FileNotFoundError:
        raise RunError(f"{path}: no such file; compile with ptrain-compile --pp P --micro-batches M -o {out_dir}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({e})")
    if not isinstance(plan, dict):
        raise RunError(f"{path}: expected a JSON object")
    if plan.get("target") == "cuda" and "pp" not in plan:
        check_cuda_plan(out_dir)
    missing = [k for k in PLAN_KEYS if k not in plan]
    if missing:
        raise RunError(f"{path}: missing {', '.join(missing)} (a pipeline plan of ptrain-compile is needed: "
                       "--pp or --micro-batches)")
    for k in ("pp", "micro_batches", "batch", "seq", "vocab"):
        if not isinstance(plan[k], int) or plan[k] < 1:
            raise RunError(f"{path}: '{k}' must be a positive integer, not {plan[k]!r}")
    lib = os.path.join(out_dir, "libstep.so")
    if not os.path.isfile(lib):
        raise RunError(f"{lib}: no such file")
    check_library(lib)
    try:  # plan.json against the plan embedded in libstep.so: a hand-edited seq must not read past a buffer.
        plan_abi.check(plan, path, lib)
    except plan_abi.PlanError as e:
        raise RunError(str(e))
    plan["library"] = os.path.abspath(lib)
    if not os.path.isfile(plan["model"]):
        raise RunError(f"{path}: the model {plan['model']} does not exist")
    return plan


# Loads a --target cuda libstep.so in a child process (a broken library must not take the launcher down) and
# asks it for the CUDA devices (ptrain_step_cuda_devices; ptrain_step_init of an older single-rank step): prints
# the count, or the step's error and exits 1.
CUDA_PROBE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.ptrain_step_last_error.restype = ctypes.c_char_p
count = ctypes.c_int32(0)
if hasattr(lib, "ptrain_step_cuda_devices"):
    status, call = lib.ptrain_step_cuda_devices(ctypes.byref(count)), "ptrain_step_cuda_devices"
    if status == 0 and count.value < 1:
        print("no CUDA device (cudaGetDeviceCount = 0)")
        sys.exit(1)
else:
    lib.ptrain_step_init.argtypes = [ctypes.c_char_p]
    status, call, count.value = lib.ptrain_step_init(None), "ptrain_step_init", 1
if status != 0:
    print(f"{call} failed (status {status}): {lib.ptrain_step_last_error().decode()}")
    sys.exit(1)
print(count.value)
"""


def cuda_devices(lib):
    """The CUDA devices a --target cuda step sees; a RunError with the driver's message when it cannot start."""
    probe = subprocess.run([sys.executable, "-c", CUDA_PROBE, os.path.abspath(lib)], capture_output=True, text=True)
    detail = (probe.stdout + probe.stderr).strip().splitlines()
    if probe.returncode != 0:
        raise RunError(f"{lib}: this step was compiled with --target cuda and cannot start on this machine: "
                       f"{detail[-1] if detail else f'exit status {probe.returncode}'}")
    return int(detail[-1])


def check_cuda_plan(out_dir):
    """A single-rank --target cuda step (docs/CodegenCuda.md): without a usable GPU, the device error
    (cudaErrorInsufficientDriver without a driver, no device); with one, the launcher's error (it has no
    ptrain_step_train: drive its entry points through ctypes)."""
    lib = os.path.join(out_dir, "libstep.so")
    if not os.path.isfile(lib):
        raise RunError(f"{lib}: no such file")
    check_library(lib)
    cuda_devices(lib)
    raise RunError(f"{lib}: training a single-rank --target cuda step with ptrain-run is not yet supported (it has "
                   "no ptrain_step_train; call ptrain_step_train_step through ctypes, docs/CodegenCuda.md, or "
                   "compile with --pp/--dp/--tp/--micro-batches)")


def check_library(lib):
    """Rejects a libstep.so that is not a whole 64-bit little-endian ELF file before any rank loads it: dlopen
    fails on garbage with a traceback per rank, and on a truncated library it maps pages past the end of the
    file and the rank dies of SIGBUS. Whole means every segment and the section header table lie inside it."""
    size = os.path.getsize(lib)
    with open(lib, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise RunError(f"{lib}: not a 64-bit little-endian ELF shared library; compile it again with "
                           "ptrain-compile")
        phoff, shoff = struct.unpack_from("<QQ", head, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 0x36)
        end = max(phoff + phnum * phentsize, shoff + shnum * shentsize)
        if end <= size and phentsize >= 56:
            f.seek(phoff)
            table = f.read(phnum * phentsize)
            for i in range(phnum):  # Elf64_Phdr: p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, ...
                _, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                end = max(end, offset + filesz)
    if end > size:
        raise RunError(f"{lib}: truncated ({size} bytes, its ELF headers need {end}); compile it again with "
                       "ptrain-compile")


def data_files(data):
    """(train, val) paths of a bytes corpus (test/Target/Cpp/e2e.py): a folder holds train.bin and val.bin
    (data.py); a file is the training data and its folder's val.bin, if any, the held-out data (else None: the
    file's last 10%)."""
    if os.path.isdir(data):
        return os.path.join(data, "train.bin"), os.path.join(data, "val.bin")
    val = os.path.join(os.path.dirname(os.path.abspath(data)), "val.bin")
    return data, (val if os.path.isfile(val) and os.path.abspath(val) != os.path.abspath(data) else None)


def read_data(train_path, val_path, seq):
    """The bytes of a bytes corpus's (train, val) files (data_files): without val_path, the last 10% of train."""
    with open(train_path, "rb") as f:
        train = f.read()
    if val_path:
        with open(val_path, "rb") as f:
            val = f.read()
    else:
        cut = len(train) * 9 // 10
        train, val = train[:cut], train[cut:]
    for name, d in (("training", train), ("validation", val)):
        if len(d) < seq + 1:
            raise RunError(f"the {name} data has {len(d)} bytes, fewer than one window of {seq + 1}")
    return train, val


def open_data(data, data_format=None, val_data=None):
    """The corpus of --data and --val-data (python/ptrain/token_data.py: its format read from its files); memory
    maps only."""
    try:
        return token_data.open_corpus(data, data_format, val_data)
    except token_data.DataError as e:
        raise RunError(str(e))


def data_inputs(data):
    """The files --data reads: what no output may overwrite."""
    if os.path.isdir(data):
        names = ("train.bin", "val.bin", "train.idx", "val.idx", token_data.DECLARATION, "meta.pkl")
        return [os.path.join(data, f) for f in names if os.path.isfile(os.path.join(data, f))]
    return [p for p in (data, data + ".idx", data + ".bin", *data_files(data)) if p and os.path.isfile(p)]


# The bytes format's window sampler (python/ptrain/loader.py): test/Target/Cpp/e2e.py draws the same batches.
window_starts, batch = loader.window_starts, loader.window_batch


def read_labels(labels_dir, data, train, val):
    """--labels DIR: (train labels, val labels) as int64 arrays of the lengths of the train and val data."""
    if not os.path.isdir(data):
        raise RunError(f"--labels {labels_dir}: needs --data to be a folder (train.bin and val.bin), got {data}")
    out = []
    for name, d in (("train", train), ("val", val)):
        path = os.path.join(labels_dir, f"{name}.labels")
        if not os.path.isfile(path):
            raise RunError(f"--labels {labels_dir}: no {name}.labels (int64 little-endian, one per byte of "
                           f"{name}.bin)")
        labels = array.array("q")
        with open(path, "rb") as f:
            raw = f.read()
        if len(raw) != 8 * len(d):
            raise RunError(f"{path}: {len(raw)} bytes; {name}.bin has {len(d)} bytes, so it needs {8 * len(d)} "
                           "(one int64 label per byte)")
        labels.frombytes(raw)
        if sys.byteorder != "little":
            labels.byteswap()
        out.append(labels)
    return out


# --- the launcher -------------------------------------------------------------------------------------------

def check_outputs_are_not_inputs(args, plan):
    """What the run writes (--log, the run log, --memory-log's rank files, the checkpoint's files) must not be
    what it reads: --log out/plan.json replaced the plan after training, --checkpoint out/libstep.so (pp = 1)
    the library the ranks run, --checkpoint MODEL.onnx the initial weights."""
    inputs = {os.path.join(args.out, "plan.json"): "the plan's plan.json",
              os.path.join(args.out, plan["library"]): "the plan's library",
              plan["model"]: "the model of the plan (its initial weights)"}
    inputs.update({path: "training or validation data" for path in data_inputs(args.data)})
    if args.val_data:
        inputs.update({path: "validation data" for path in data_inputs(args.val_data)})
    outputs = [("--log", args.log), ("--run-log" if args.run_log else "the run log", run_log_path(args))]
    if args.memory_log:
        outputs += [("--memory-log", f"{args.memory_log}.rank{r}.json")
                    for r in range(plan.get("dp", 1) * plan["pp"] * plan.get("tp", 1))]
    if args.checkpoint:
        outputs += [("--checkpoint", stage_path(args.checkpoint, plan, s, t, d))
                    for d in range(plan.get("dp", 1)) for s in range(plan["pp"]) for t in range(plan.get("tp", 1))]
        outputs.append(("--checkpoint", args.checkpoint + ".json"))
    for flag, path in outputs:
        if not path or not os.path.exists(path):
            continue
        for other, role in inputs.items():
            if os.path.exists(other) and os.path.samefile(path, other):
                raise RunError(f"{flag} writes {path}, which is {role}: choose another path")


def torchrun_world():
    """WORLD_SIZE when this process was started by torchrun (or any launcher setting RANK and WORLD_SIZE) and
    not by mpirun: then ptrain-run is that one rank and launches nothing."""
    env = os.environ
    if "RANK" not in env or "WORLD_SIZE" not in env or "OMPI_COMM_WORLD_SIZE" in env:
        return None
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    except ValueError:
        raise RunError(f"RANK={env['RANK']!r}, WORLD_SIZE={env['WORLD_SIZE']!r}: expected integers (torchrun's "
                       "environment)")
    if world < 1 or not 0 <= rank < world:
        raise RunError(f"RANK={rank}, WORLD_SIZE={world}: expected 0 <= RANK < WORLD_SIZE (torchrun's environment)")
    return world


def prepare(args, torchrun=None):
    """Checks everything a rank would find out too late (module docstring); returns (plan, world, launcher). Under
    torchrun (its WORLD_SIZE given) the world must be the plan's, and a --target cpu step must be alone."""
    plan = load_plan(args.out)
    # An undeclared format, too little data, or ids that are no token of the model is the launcher's error, not
    # every rank's (python/ptrain/token_data.py; every token is read once, here).
    corpus = open_data(args.data, args.data_format, args.val_data)
    try:
        token_data.check(corpus, plan["vocab"], plan["seq"])
    except token_data.DataError as e:
        raise RunError(str(e))
    if args.sample_index != "epochs" or args.log_samples:
        if corpus.format == "bytes":
            raise RunError(f"--{'sample-index' if args.sample_index != 'epochs' else 'log-samples'}: the bytes format "
                           "draws windows (no sample index); use a token format (megatron, nanogpt)")
    if args.sample_index != "epochs":  # Built once here too: an error is the launcher's, not every rank's.
        try:
            loader.make_sampler(corpus, plan["seq"], args.seed, args.sample_index, run_samples(args, plan))
        except loader.SampleIndexError as e:
            raise RunError(str(e))
    if args.labels:
        if corpus.format != "bytes":
            raise RunError(f"--labels {args.labels}: explicit labels go with the bytes format (one per byte of "
                           f"train.bin / val.bin); --data {args.data} is {corpus.format}")
        read_labels(args.labels, args.data, corpus.train.tokens, corpus.val.tokens)
    dp, tp = plan.get("dp", 1), plan.get("tp", 1)
    world = dp * plan["pp"] * tp
    grid = (f"dp * pp = {dp} * {plan['pp']}" if tp == 1 else f"dp * pp * tp = {dp} * {plan['pp']} * {tp}")
    cuda = plan.get("target") == "cuda"
    if torchrun is not None:
        if torchrun != world:
            raise RunError(f"WORLD_SIZE={torchrun} (torchrun's environment): the step in {args.out} was compiled for "
                           f"{grid} = {world} ranks; launch it with torchrun --nproc-per-node {world} (one process "
                           "per GPU), or with ptrain-run alone")
        if not cuda and world > 1:
            raise RunError(f"the step in {args.out} is a --target cpu step of {world} ranks: it communicates over MPI "
                           "and cannot run under torchrun (RANK/WORLD_SIZE without mpirun); run ptrain-run without "
                           "torchrun (it starts mpirun), or compile with --target cuda")
    np_ = world if args.np is None else args.np
    if np_ != world:
        raise RunError(f"--np {np_}: the step in {args.out} was compiled for {grid} = {world} ranks (one per "
                       f"pipeline stage, data-parallel replica and tensor-parallel part); use --np {world}")
    launcher = args.launcher or ("env" if cuda else "mpirun")
    if torchrun is None and launcher == "env" and not cuda and world > 1:
        raise RunError(f"--launcher env: the step in {args.out} is a --target cpu step of {world} ranks, and the CPU "
                       "step communicates over MPI: only a world of 1 runs without mpirun; use --launcher mpirun "
                       "(the default for CPU plans), or compile with --target cuda")
    if launcher == "env" and args.mpirun_args:
        raise RunError(f"--mpirun-args '{args.mpirun_args}': only with --launcher mpirun (this run launches with "
                       f"{'torchrun' if torchrun is not None else '--launcher env'})")
    # One process per GPU: NCCL refuses two ranks on one device ("Duplicate GPU detected"). Under torchrun each
    # rank's ptrain_step_init finds its device (the machine may be one of several). PTRAIN_RUN_DEVICE_PROBE=0
    # (the tests) leaves the device error to the ranks themselves.
    if cuda and torchrun is None and os.environ.get("PTRAIN_RUN_DEVICE_PROBE", "1") != "0":
        devices = cuda_devices(plan["library"])
        if devices < world:
            raise RunError(f"{args.out} was compiled with --target cuda for {world} ranks, one process per GPU, but "
                           f"this machine has {devices} CUDA device(s) (NCCL refuses two ranks on one device); "
                           f"use a machine with {world} GPUs or compile with --target cpu")
    if args.resume:
        _, old_dp, replicas = resume_position(args, plan)
        resume_consumed(args, plan, corpus)
        if old_dp != dp:
            lines = reshard_warnings(args, plan, old_dp, replicas)
            if os.environ.get("RANK", "0") == "0" or torchrun is None:
                print(f"ptrain-run: warning: --resume {args.resume} was written at dp = {old_dp}; resharded to dp = "
                      f"{dp} (DESIGN.md decision 5): parameters, moments and the other states copied from replica 0"
                      + (", and:" if lines else "; no state reset") + "".join(f"\n  {x}" for x in lines),
                      file=sys.stderr, flush=True)
    if args.checkpoint:
        # Checked before training, not found out by ptrain_step_save after the last step.
        folder = os.path.dirname(os.path.abspath(args.checkpoint))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise RunError(f"--checkpoint {args.checkpoint}: the folder {folder} does not exist or is not "
                           "writable")
    if args.steps < 0 or (args.val_every is not None and args.val_every < 1):
        raise RunError("--steps must be >= 0 and --val-every >= 1")
    if args.val_batches < 1:
        raise RunError(f"--val-batches {args.val_batches}: must be >= 1 (the validation loss is their mean)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise RunError(f"--timeout {args.timeout}: must be a positive number of seconds")
    # Files written after training: their folders are checked now, not found missing after the last step.
    for flag, path in (("--log", args.log), ("--memory-log", args.memory_log)):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder and (not os.path.isdir(folder) or not os.access(folder, os.W_OK)):
            raise RunError(f"{flag} {path}: the folder {folder} does not exist or is not writable")
    if args.telemetry_every < 0:
        raise RunError(f"--telemetry-every {args.telemetry_every}: must be >= 0 (0: off)")
    check_outputs_are_not_inputs(args, plan)
    return plan, world, launcher


def rank_defaults(env, timeout):
    """The environment of every rank: one BLAS thread (ranks share the cores), the communication deadline."""
    env.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PTRAIN_COMM_TIMEOUT_S": str(timeout)})
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    return env


MPIRUN_OWN_EXIT_S = 1.0  # after Ctrl-C: time for an mpirun that got the same SIGINT to end its ranks itself
MPIRUN_TERM_S = 5.0  # then SIGTERM (mpirun forwards it to its ranks); SIGKILL if it still runs this much later


def call_mpirun(cmd, env, own_exit_s=MPIRUN_OWN_EXIT_S, term_s=MPIRUN_TERM_S):
    """Runs cmd (mpirun and its arguments) to its end and returns its exit status (negative: the signal).

    A KeyboardInterrupt (SIGINT to this process: Ctrl-C, or kill -INT of the launcher alone) at any point stops
    mpirun before it is re-raised: own_exit_s seconds for mpirun to exit by itself (a terminal's Ctrl-C reached
    it too), then SIGTERM, then SIGKILL term_s seconds later; mpirun is reaped, so it leaves no zombie. SIGINT is
    blocked while mpirun is started: subprocess.call, used before, had a window in Popen() between mpirun's exec
    and the point where it could stop it, and a SIGINT there (a loaded machine delays the launcher right after
    the fork) left mpirun running, and with it the launcher's stdout/stderr, while the launcher said it had
    stopped it. mpirun starts with the signal mask the launcher had (restored in the child before exec) and
    SIGINT's default action (exec resets the launcher's handler)."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    proc = None
    try:
        proc = subprocess.Popen(cmd, env=env, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, mask))
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a SIGINT that came meanwhile is raised here
        return proc.wait()
    except KeyboardInterrupt:
        if proc is not None:
            stop_process(proc, own_exit_s, term_s)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def stop_process(proc, own_exit_s, term_s):
    """Waits own_exit_s seconds for proc to exit, then SIGTERM, SIGKILL after term_s more (or at a second
    Ctrl-C), and reaps it."""
    for sig, wait_s in ((None, own_exit_s), (signal.SIGTERM, term_s), (signal.SIGKILL, None)):
        if sig is not None and proc.poll() is None:
            proc.send_signal(sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:  # impatient: no more waiting
            proc.kill()
            proc.wait()
            return


def launch(args):
    plan, world, launcher = prepare(args)
    try:
        mpirun_args = shlex.split(args.mpirun_args)
    except ValueError as e:  # e.g. an unbalanced quote: shlex's message, not a traceback
        raise RunError(f"--mpirun-args '{args.mpirun_args}': {e}")
    env = rank_defaults(dict(os.environ), args.timeout)
    worker = [sys.executable, os.path.abspath(__file__), "--worker", *args.argv]
    if launcher == "mpirun":
        mpirun = shutil.which("mpirun")
        if not mpirun:
            raise RunError("mpirun not found (Debian: openmpi-bin)")
        cmd = [mpirun, "-np", str(world), "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
               "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS", "-x", "PTRAIN_COMM_TIMEOUT_S",
               *mpirun_args, *worker]
    log = run_log_path(args)
    # A log this run wrote: none before, or a different one (file timestamps come from a coarse clock, so they
    # are compared with the old file's, not with time.time()).
    before = os.stat(log).st_mtime_ns if os.path.isfile(log) else None
    if launcher == "env":  # torchrun-style: one process per rank, supervised here (python/ptrain/launcher.py)
        from ptrain import launcher as env_launcher
        status = env_launcher.run_ranks(worker, world, env)  # forwards Ctrl-C itself; 130 after one
    else:
        try:
            status = call_mpirun(cmd, env)
        except KeyboardInterrupt:
            # Ctrl-C (SIGINT): call_mpirun has stopped mpirun, and its ranks end with it; the interrupted run's
            # log is renamed below like a failed run's.
            status = 128 + signal.SIGINT
            print("ptrain-run: interrupted (SIGINT): mpirun and its ranks are stopped", file=sys.stderr, flush=True)
    if status != 0 and os.path.isfile(log) and os.stat(log).st_mtime_ns != before:
        # No run log that reads like a finished run's: the steps up to the failure stay readable beside it.
        os.replace(log, log + ".failed")
        print(f"ptrain-run: the run failed (exit status {status}); its run log up to the failure is {log}.failed",
              file=sys.stderr, flush=True)
    return status


def as_rank(args, world):
    """Started by torchrun: this process is rank RANK of WORLD_SIZE; nothing is launched."""
    prepare(args, torchrun=world)
    for key, value in rank_defaults({}, args.timeout).items():  # What torchrun's user did not set.
        os.environ.setdefault(key, value)
    args.worker = True  # From here on an error ends this rank like a worker's.
    work(args)
    return 0


def per_replica_states(plan):
    """Whether the dp replicas hold different states: codec states (error-feedback residuals of pipeline links,
    TP sites and dp gradients) are what each replica's own data lost, so every replica keeps its own."""
    return plan.get("dp", 1) > 1 and bool(plan.get("codec_states"))


def stage_path(path, plan, stage, tp_rank=0, replica=0):
    """The checkpoint file of a pipeline stage: PATH itself at pp = 1, else PATH.stage<s>; with tp > 1 each
    tensor-parallel rank's part of it, PATH[.stage<s>].tp<t>; dp replica d > 0's own copy,
    PATH[.stage<s>][.tp<t>].dp<d>, when the replicas hold different states (per_replica_states)."""
    path = path if plan["pp"] == 1 else f"{path}.stage{stage}"
    path = path if plan.get("tp", 1) == 1 else f"{path}.tp{tp_rank}"
    return path if replica == 0 or not per_replica_states(plan) else f"{path}.dp{replica}"


def resume_position(args, plan):
    """The step a checkpoint was saved after and the grid that wrote it: (step, old dp, old replicas with files
    of their own). Checks its manifest PATH.json against the plan (python/ptrain/manifest.py: another plan's
    checkpoint names both fingerprints; another dp is resharded, another pp or tp is an error), the seed, and
    that every file it needs exists."""
    check_files(args, plan, 1, 1)
    try:
        position = manifest.read(args.resume)
        if position is None:
            raise RunError(f"--resume {args.resume}: cannot read the data position {args.resume}.json (no such file; "
                           "ptrain-run --checkpoint writes it)")
        start, seed = int(position["step"]), int(position["seed"])
    except manifest.ManifestError as e:
        raise RunError(f"--resume {args.resume}: {e}")
    except (ValueError, KeyError, TypeError) as e:
        raise RunError(f"--resume {args.resume}: cannot read the data position {args.resume}.json ({e})")
    try:
        manifest.check(position, plan, os.path.join(args.out, "plan.json"), args.resume,
                       plan_abi.read_embedded(plan["library"]) or {}, other_dp=True)
    except manifest.ManifestError as e:
        raise RunError(f"--resume {args.resume}: {e}")
    if seed != args.seed:
        raise RunError(f"--resume {args.resume}: the checkpoint was trained with --seed {seed}, not {args.seed}")
    if start > args.steps:
        raise RunError(f"--resume {args.resume}: the checkpoint is after step {start}, beyond --steps {args.steps}")
    dp = plan.get("dp", 1)
    old_dp = position.get("dp", dp)
    if old_dp == dp:
        replicas = dp if per_replica_states(plan) else 1
    else:  # Another degree: the old run's own files (an older manifest without per_replica: the files there).
        per_replica = position.get("per_replica", os.path.isfile(old_path(args.resume, plan, 0, 0, 1, True)))
        replicas = old_dp if per_replica and old_dp > 1 else 1
    check_files(args, plan, old_dp, replicas)
    return start, old_dp, replicas


def resume_consumed(args, plan, corpus):
    """The training samples a checkpoint's run consumed (its manifest's "data" position, python/ptrain/loader.py),
    after checking that it was trained on this data: the same format, training tokens and sequence length. The
    bytes format's position is the step (0 here)."""
    position = manifest.read(args.resume) or {}
    data = position.get("data")
    where = f"--resume {args.resume}: {args.resume}.json"
    if data is None:
        if corpus.format == "bytes":
            return 0
        raise RunError(f"{where} records no data position (a checkpoint of a run on the bytes format, before "
                       f"DESIGN.md decision 13); --data {args.data} is {corpus.format}")
    ours = dict(corpus.describe(), seq=plan["seq"], sampler="windows" if corpus.format == "bytes" else
                args.sample_index)
    if ours["sampler"] == "megatron":
        ours["index_samples"] = run_samples(args, plan)
    for key in ("format", "train_tokens", "seq", "sampler", "index_samples"):
        if key not in ours or (key == "sampler" and key not in data):  # Older manifests: their own sampler.
            continue
        if data.get(key) != ours[key]:
            raise RunError(f"{where}: the checkpoint was trained on other data: its {key} is {data.get(key)!r}, "
                           f"--data {args.data} has {ours[key]!r}" + (
                               " (--sample-index megatron builds its index for --steps x the global batch: resume "
                               "with the first run's --steps)" if key == "index_samples" else ""))
    if corpus.format == "bytes":
        return 0
    consumed = data.get("consumed_samples")
    if not isinstance(consumed, int) or consumed < 0:
        raise RunError(f"{where}: 'consumed_samples' must be a non-negative integer, not {consumed!r}")
    return consumed


def run_samples(args, plan):
    """The training samples the run asks for: --steps x the global batch (Megatron's train_samples)."""
    return args.steps * plan.get("dp", 1) * plan["micro_batches"] * plan["batch"]


def check_files(args, plan, old_dp, replicas):
    for d in range(replicas):
        for s in range(plan["pp"]):
            for t in range(plan.get("tp", 1)):
                path = old_path(args.resume, plan, s, t, d, replicas > 1)
                if not os.path.isfile(path):
                    raise RunError(f"--resume {args.resume}: no checkpoint file {path}" +
                                   (f" (replica {d} of the checkpoint's dp = {old_dp})" if replicas > 1 else ""))


def old_path(checkpoint, plan, stage, tp_rank, replica, per_replica):
    """A checkpoint file of (stage, tp rank, replica) of a run at the plan's pp and tp (stage_path), whose
    replicas d > 0 wrote files of their own when per_replica."""
    path = stage_path(checkpoint, dict(plan, dp=1), stage, tp_rank)
    return f"{path}.dp{replica}" if replica > 0 and per_replica else path


def reshard_warnings(args, plan, old_dp, replicas):
    """The states a resume at another dp does not copy verbatim (python/ptrain/reshard.py), one line each."""
    from ptrain import export
    headers = {}
    for d in range(replicas):
        for s in range(plan["pp"]):
            for t in range(plan.get("tp", 1)):
                path = old_path(args.resume, plan, s, t, d, replicas > 1)
                try:
                    headers[path] = export.read_header(path)
                except export.ExportError as e:
                    raise RunError(f"--resume {args.resume}: {e}")
    try:
        return reshard.report(plan, args.resume, headers, old_dp, replicas)
    except reshard.ReshardError as e:
        raise RunError(str(e))


# --- the worker (one per rank) ------------------------------------------------------------------------------

class Step:
    """libstep.so through ctypes."""

    def __init__(self, path):
        # OpenMPI's components resolve libmpi's symbols: load it globally first.
        for name in ("libmpi.so.40", ctypes.util.find_library("mpi")):
            if name:
                try:
                    ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
                    break
                except OSError:
                    pass
        try:
            self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:  # e.g. libptrain_runtime.so moved away: dlopen's message, not a traceback.
            raise RunError(f"cannot load {path}: {e}")
        L = self.lib
        L.ptrain_step_last_error.restype = ctypes.c_char_p
        for name in ("ptrain_step_train", "ptrain_step_eval"):
            getattr(L, name).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
        # A step compiled with explicit labels (docs/TrainingStep.md) has the _labels entries.
        self.takes_labels = hasattr(L, "ptrain_step_train_labels")
        if self.takes_labels:
            for name in ("ptrain_step_train_labels", "ptrain_step_eval_labels"):
                getattr(L, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
        L.ptrain_step_init.argtypes = [ctypes.c_char_p]
        L.ptrain_step_save.argtypes = [ctypes.c_char_p]
        L.ptrain_step_rank.argtypes = [ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32)]
        L.ptrain_step_abort.argtypes = [ctypes.c_int32]
        # The runtime's (libstep.so's dependency): names the training step in communication errors.
        self.set_step = getattr(L, "ptrain_comm_set_step", None)
        if self.set_step is not None:
            self.set_step.argtypes = [ctypes.c_int64]
        self.has_traffic = hasattr(L, "ptrain_step_traffic")
        if self.has_traffic:
            L.ptrain_step_num_links.restype = ctypes.c_int64
            L.ptrain_step_link_name.restype = ctypes.c_char_p
            L.ptrain_step_link_name.argtypes = [ctypes.c_int64]
            L.ptrain_step_traffic.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        self.has_telemetry = hasattr(L, "ptrain_step_codec_telemetry")
        if self.has_telemetry:
            L.ptrain_step_num_codec_sites.restype = ctypes.c_int64
            L.ptrain_step_codec_site_name.restype = ctypes.c_char_p
            L.ptrain_step_codec_site_name.argtypes = [ctypes.c_int64]
            L.ptrain_step_set_telemetry.argtypes = [ctypes.c_int32]
            L.ptrain_step_codec_telemetry.argtypes = [ctypes.POINTER(ctypes.c_double)]

    def check(self, status, what):
        if status != 0:
            raise RunError(f"{what} failed (status {status}): {self.lib.ptrain_step_last_error().decode()}")

    def loss(self, fn, tokens, labels=None):
        out = ctypes.c_float()
        if labels is not None:  # ptrain_step_train_labels / ptrain_step_eval_labels
            fn += "_labels"
            self.check(getattr(self.lib, fn)(ctypes.addressof(tokens), ctypes.addressof(labels), ctypes.byref(out)),
                       fn)
        else:
            self.check(getattr(self.lib, fn)(ctypes.addressof(tokens), ctypes.byref(out)), fn)
        return float(out.value)


class Traffic:
    """The runtime's byte counters of every rank, accumulated over training steps only: pause() before a
    validation adds what was sent since the last resume(), resume() after it zeroes the counters. Both are
    called by every rank at the same point (ptrain_step_traffic is collective)."""

    def __init__(self, step, world, tp=1):
        self.step, self.world, self.tp = step, world, tp
        self.links = [step.lib.ptrain_step_link_name(i).decode() for i in range(step.lib.ptrain_step_num_links())]
        self.totals = [0] * (world * len(self.links) * 2)

    def pause(self):
        """Adds the counts since the last resume() to the totals; returns them."""
        counts = (ctypes.c_int64 * len(self.totals))()
        self.step.check(self.step.lib.ptrain_step_traffic(counts), "ptrain_step_traffic")
        self.totals = [a + b for a, b in zip(self.totals, counts)]
        return list(counts)

    def take(self, pp):
        """The bytes per link label of the training step just done (pause() then resume())."""
        counts = self.pause()
        self.resume()
        return {label: entry["bytes"] for label, entry in self.per_link(pp, counts).items()}

    def resume(self):
        self.step.check(self.step.lib.ptrain_step_reset_traffic(), "ptrain_step_reset_traffic")

    def per_link(self, pp, counts=None):
        """{label: {"bytes", "messages"}} of `counts` (default: the totals): point-to-point links per stage pair
        (summed over dp replicas and tp ranks), collectives per communicator (summed over ranks). Rank r is
        stage (r // tp) % pp (grid (dp, pp, tp), row-major)."""
        counts = self.totals if counts is None else counts
        out = {}
        for r in range(self.world):
            s = (r // self.tp) % pp
            for i, link in enumerate(self.links):
                if link == "pp forward":
                    label = f"pp forward {s}->{s + 1}" if s + 1 < pp else None
                elif link == "pp backward":
                    label = f"pp backward {s}->{s - 1}" if s > 0 else None
                else:
                    label = link
                if label is None:
                    continue
                entry = out.setdefault(label, {"bytes": 0, "messages": 0})
                base = (r * len(self.links) + i) * 2
                entry["bytes"] += counts[base]
                entry["messages"] += counts[base + 1]
        order = lambda label: (0 if " forward " in label else 1 if " backward " in label else 2, label)
        return {k: out[k] for k in sorted(out, key=order)}


class Telemetry:
    """Codec telemetry of the generated step (docs/CodegenCpu.md, "Codec telemetry"): mode(i) before training
    step i (0-based) measures steps i + 1 = N, 2N, ... and captures the step before each (the LEP cosine needs the
    previous input at each site); read() after a measured step gathers every rank's sites (collective)."""

    FIELDS = 6  # compressions, error, residual norm, LEP cosine, cosines, input norm (EmitTelemetry.cpp)

    def __init__(self, step, world, every):
        self.step, self.world, self.every = step, world, every
        self.sites = [step.lib.ptrain_step_codec_site_name(i).decode()
                      for i in range(step.lib.ptrain_step_num_codec_sites())]

    def measured(self, i):
        return self.every > 0 and (i + 1) % self.every == 0

    def set_mode(self, i):
        mode = 2 if self.measured(i) else 1 if self.measured(i + 1) else 0
        self.set(mode)

    def set(self, mode):
        self.step.check(self.step.lib.ptrain_step_set_telemetry(mode), "ptrain_step_set_telemetry")

    def read(self):
        """{site: {compressions, error, residual_norm, lep_cos (None without a cosine), input_norm}}, the mean
        over the ranks that compressed at the site (data-parallel replicas)."""
        n = len(self.sites) * self.FIELDS
        out = (ctypes.c_double * (self.world * n))()
        self.step.check(self.step.lib.ptrain_step_codec_telemetry(out), "ptrain_step_codec_telemetry")
        result = {}
        for j, site in enumerate(self.sites):
            rows = [out[r * n + j * self.FIELDS:r * n + (j + 1) * self.FIELDS] for r in range(self.world)]
            rows = [f for f in rows if f[0] > 0]
            if not rows:
                continue
            cos = [f for f in rows if f[4] > 0]
            mean = lambda k, fs=rows: sum(f[k] for f in fs) / len(fs)
            result[site] = {"compressions": int(sum(f[0] for f in rows)), "error": mean(1), "residual_norm": mean(2),
                            "lep_cos": mean(3, cos) if cos else None, "input_norm": mean(5)}
        return result


def run_log_path(args):
    """--run-log, else run.jsonl beside the checkpoint, else in out/."""
    if args.run_log:
        return args.run_log
    if args.checkpoint:
        return os.path.join(os.path.dirname(os.path.abspath(args.checkpoint)), "run.jsonl")
    return os.path.join(args.out, "run.jsonl")


def tensorboard_dir(args):
    """--tensorboard, else tensorboard/ beside the run log."""
    return args.tensorboard or os.path.join(os.path.dirname(os.path.abspath(run_log_path(args))), "tensorboard")


class Scalars:
    """The TensorBoard scalars of a run log "step" record (python/ptrain/tb_events.py): train/loss, val/loss,
    train/lr (the step's learning rate from the runtime's own ptrain_lr_warmup_cosine at the plan's lr, warm-up,
    total steps and min_lr_ratio, as the generated optimizer calls it: docs/CodegenCpu.md), train/tokens_per_s,
    train/mfu (model FLOP/s over the peak of the plan's cluster file: 6 N FLOPs per token for N parameters, Kaplan
    et al. 2020, "Scaling Laws for Neural Language Models", section 2.1; only with a cluster file), bytes/<link>
    (bytes of the step on each link) and codec/<site>/<field> (telemetry of measured steps)."""

    def __init__(self, step, plan):
        self.lr = None
        fn = getattr(step.lib, "ptrain_lr_warmup_cosine", None)
        if fn is not None and plan.get("optimizer", "none") != "none" and "min_lr_ratio" in plan:
            fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_float,
                           ctypes.POINTER(ctypes.c_float)]
            warmup, total, peak = plan["warmup_steps"], plan["total_steps"], plan["lr"]

            def lr(t):  # the op's 1-based step t (EmitOptimizer.cpp: s = t <= warmup ? t - 1 : t)
                out = ctypes.c_float()
                status = fn(t - 1 if t <= warmup else t, warmup, total, peak, peak * plan["min_lr_ratio"],
                            ctypes.byref(out))
                return out.value if status == 0 else None
            self.lr = lr
        self.flops_per_token, self.peak = None, None
        params = sum(math.prod(s.get("shape", [])) for s in plan.get("states", []) if s.get("kind") == "parameter")
        cluster = plan.get("cluster")
        if params and isinstance(cluster, str) and os.path.isfile(cluster):
            try:
                with open(cluster) as f:
                    device_peak = json.load(f)["gpu"]["peak_flops"]["f32"]
                world = plan.get("dp", 1) * plan["pp"] * plan.get("tp", 1)
                self.flops_per_token, self.peak = 6 * params, float(device_peak) * world
            except (OSError, ValueError, KeyError, TypeError):
                pass

    def of(self, rec):
        out = {"train/loss": rec.get("train_loss"), "val/loss": rec.get("val_loss")}
        if "tokens_per_s" in rec:
            out["train/tokens_per_s"] = rec["tokens_per_s"]
            if self.peak:
                out["train/mfu"] = self.flops_per_token * rec["tokens_per_s"] / self.peak
        if self.lr and "train_loss" in rec:
            out["train/lr"] = self.lr(rec["step"])
        for link, n in rec.get("bytes", {}).items():
            out[f"bytes/{link}"] = n
        for site, fields in rec.get("codec", {}).items():
            for k, v in fields.items():
                out[f"codec/{site}/{k}"] = v
        return out


def write_plots(path):
    try:
        from ptrain.plots import PlotError, plot_run
    except ImportError as e:
        print(f"ptrain-run: plots skipped: {e}", flush=True)
        return
    try:
        for p in plot_run(path):
            print(f"plot: {p}", flush=True)
    except PlotError as e:
        print(f"ptrain-run: plots skipped: {e}", flush=True)


def print_traffic(per_link, steps, library="MPI"):
    width = max(len(k) for k in per_link)
    print(f"traffic per training step (bytes handed to {library}, all ranks; runtime counters, {steps} steps):",
          flush=True)
    for label, entry in per_link.items():
        print(f"  {label:<{width}}  {entry['bytes'] / steps:>14,.0f} B  {entry['messages'] / steps:>6.1f} "
              f"{'messages' if ' forward' in label or ' backward' in label else 'operations'}", flush=True)


class Bar:
    """tqdm when importable, else a one-line bar redrawn with \\r."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.n = total, enabled, 0
        self.tqdm = None
        if enabled:
            try:
                from tqdm import tqdm
                self.tqdm = tqdm(total=total, unit="step", dynamic_ncols=True)
            except ImportError:
                pass

    def update(self, text):
        self.n += 1
        if not self.enabled:
            return
        if self.tqdm is not None:
            self.tqdm.set_postfix_str(text, refresh=False)
            self.tqdm.update(1)
            return
        width = 30
        fill = width * self.n // max(self.total, 1)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {self.n}/{self.total} {text}")
        sys.stderr.flush()

    def write(self, text):
        if not self.enabled:
            return
        if self.tqdm is not None:
            self.tqdm.write(text)
        else:
            sys.stderr.write("\n" + text + "\n")
            sys.stderr.flush()

    def close(self):
        if self.tqdm is not None:
            self.tqdm.close()
        elif self.enabled:
            sys.stderr.write("\n")


_STEP = None  # the worker's Step, for ptrain_step_abort after an error


def stall(rank, step):
    """PTRAIN_RUN_STALL=RANK:STEP: that rank sleeps before that training step (a stalled rank, for the tests)."""
    spec = os.environ.get("PTRAIN_RUN_STALL")
    if not spec:
        return
    try:
        stall_rank, stall_step = (int(x) for x in spec.split(":"))
    except ValueError:
        raise RunError(f"PTRAIN_RUN_STALL={spec!r}: expected RANK:STEP")
    if (rank, step) == (stall_rank, stall_step):
        print(f"ptrain-run: rank {rank} stalls before step {step} at t={time.time():.3f} (PTRAIN_RUN_STALL)",
              file=sys.stderr, flush=True)
        time.sleep(3600)


def work(args):
    plan = load_plan(args.out)
    rows, seq = plan["micro_batches"] * plan["batch"], plan["seq"]
    corpus = open_data(args.data, args.data_format, args.val_data)  # The launcher checked its ids (token_data.check).
    step = Step(plan["library"])
    global _STEP
    _STEP = step
    if step.takes_labels != bool(args.labels):
        raise RunError(f"{plan['library']}: the step was compiled with explicit labels: pass --labels DIR"
                       if step.takes_labels else
                       f"--labels {args.labels}: the step in {args.out} scores the shifted tokens (no labels input)")
    train_labels, val_labels = (read_labels(args.labels, args.data, corpus.train.tokens, corpus.val.tokens)
                                if args.labels else (None, None))
    step.check(step.lib.ptrain_step_init(plan["model"].encode()), "ptrain_step_init")
    rank, stage = ctypes.c_int32(), ctypes.c_int32()
    step.check(step.lib.ptrain_step_rank(ctypes.byref(rank), ctypes.byref(stage)), "ptrain_step_rank")
    rank0 = rank.value == 0
    # The grid is (dp, pp, tp), row-major (tp innermost): replica rank // (pp * tp), tp part rank % tp.
    dp, tp = plan.get("dp", 1), plan.get("tp", 1)
    replica, tp_rank = rank.value // (plan["pp"] * tp), rank.value % tp
    start, old_dp, replicas = resume_position(args, plan) if args.resume else (0, dp, 1)
    feed = loader.Loader(corpus, rows, seq, args.seed, replica, dp, start,
                         resume_consumed(args, plan, corpus) if args.resume else 0, args.sample_index,
                         run_samples(args, plan))
    val_batches = [feed.val(j) for j in range(args.val_batches)]
    val_label_batches = [batch(val_labels, rows, seq, 7919 * (args.seed + 1) + j, replica, dp) if args.labels
                         else None for j in range(args.val_batches)]

    if args.resume:
        if old_dp == dp:
            path = stage_path(args.resume, plan, stage.value, tp_rank, replica)
            step.check(step.lib.ptrain_step_load(path.encode()), f"ptrain_step_load({path})")
        else:  # DESIGN.md decision 5 (python/ptrain/reshard.py); the launcher printed what is not copied.
            try:
                reshard.load(step, [old_path(args.resume, plan, stage.value, tp_rank, d, replicas > 1)
                                    for d in range(replicas)])
            except reshard.ReshardError as e:
                raise RunError(f"--resume {args.resume}: {e}")
    traffic = Traffic(step, dp * plan["pp"] * tp, tp) if step.has_traffic else None
    telemetry = Telemetry(step, dp * plan["pp"] * tp, args.telemetry_every) if step.has_telemetry else None
    if args.telemetry_every and not telemetry and rank0:
        print("ptrain-run: --telemetry-every: the step has no codec site (compile with --policy)", flush=True)

    def validate():
        if traffic:
            traffic.pause()
        if telemetry:
            telemetry.set(0)  # Validation's compressions (forward codecs) are not training's.
        v = sum(step.loss("ptrain_step_eval", b, y) for b, y in zip(val_batches, val_label_batches)) / len(val_batches)
        if traffic:
            traffic.resume()
        return v

    run_log = None
    if rank0:
        path = run_log_path(args)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        run_log = open(path, "w")

    board = None
    if rank0 and not args.no_tensorboard:
        board = tb_events.EventWriter(tensorboard_dir(args))
    scalars = Scalars(step, plan)

    def record(rec):
        if run_log:
            run_log.write(json.dumps(rec) + "\n")
            run_log.flush()
        if board and rec.get("record") == "step":
            board.scalars(rec["step"], scalars.of(rec))

    log = {"plan": {k: plan[k] for k in PLAN_KEYS if k not in ("library",)}, "steps": args.steps, "start_step": start,
           "seed": args.seed, "tokens_per_step": dp * rows * seq, "train_loss": [], "val_loss": [], "step_seconds": [],
           "step_cpu_seconds": []}
    log["plan"]["dp"] = dp
    log["plan"]["tp"] = tp
    log["plan"]["policy"] = plan.get("policy", "none")
    record({"record": "run", "plan": log["plan"], "steps": args.steps, "start_step": start, "seed": args.seed,
            "tokens_per_step": log["tokens_per_step"], "telemetry_every": args.telemetry_every,
            "links": list(traffic.per_link(plan["pp"]).keys()) if traffic else [],
            "codec_sites": telemetry.sites if telemetry else []})
    bar = Bar(args.steps - start, rank0)
    v = validate()
    log["val_loss"].append([start, v])
    record({"record": "step", "step": start, "val_loss": v})
    bar.write(f"step {start}: val loss {v:.4f}")
    elapsed = 0.0
    for i in range(start, args.steps):
        tokens = feed.train(i)
        labels = batch(train_labels, rows, seq, args.seed * 1000003 + i, replica, dp) if args.labels else None
        if telemetry:
            telemetry.set_mode(i)
        if step.set_step is not None:
            step.set_step(i + 1)
        stall(rank.value, i + 1)
        t0, c0 = time.perf_counter(), time.process_time()
        loss = step.loss("ptrain_step_train", tokens, labels)
        dt = time.perf_counter() - t0
        log["step_cpu_seconds"].append(time.process_time() - c0)
        elapsed += dt
        if not math.isfinite(loss):
            raise RunError(f"step {i + 1}: the loss is {loss}")
        log["train_loss"].append(loss)
        log["step_seconds"].append(dt)
        rec = {"record": "step", "step": i + 1, "train_loss": loss, "tokens_per_s": dp * rows * seq / dt}
        if args.log_samples:  # The global batch, replica by replica (each rank read its own: Loader.train_samples).
            rec["samples"] = [k for d in range(dp) for k in feed.train_samples(i, d)]
        if traffic:
            rec["bytes"] = traffic.take(plan["pp"])
        if telemetry and telemetry.measured(i):
            rec["codec"] = telemetry.read()
        bar.update(f"loss {loss:.4f} {dp * rows * seq / dt:,.0f} tok/s")
        if args.val_every and (i + 1) % args.val_every == 0 and i + 1 != args.steps:
            v = validate()
            log["val_loss"].append([i + 1, v])
            rec["val_loss"] = v
            bar.write(f"step {i + 1}: val loss {v:.4f}")
        if i + 1 == args.steps:
            v = validate()
            log["val_loss"].append([args.steps, v])
            rec["val_loss"] = v
        record(rec)
    if args.steps > start:
        bar.close()
        log["tokens_per_s"] = dp * rows * seq * (args.steps - start) / elapsed
        if rank0:
            print(f"step {args.steps}: train loss {log['train_loss'][-1]:.4f}, val loss {v:.4f}, "
                  f"{log['tokens_per_s']:,.0f} tok/s", flush=True)
        if traffic:
            log["traffic"] = traffic.per_link(plan["pp"])
            if rank0:
                print_traffic(log["traffic"], args.steps - start, "NCCL" if plan.get("target") == "cuda" else "MPI")
    # The dp replicas hold the same parameters and moments: replica 0 saves them, and every other replica its
    # own copy too when the plan has codec states, which differ between replicas (per_replica_states).
    if args.checkpoint and (replica == 0 or per_replica_states(plan)):
        path = stage_path(args.checkpoint, plan, stage.value, tp_rank, replica)
        step.check(step.lib.ptrain_step_save(path.encode()), f"ptrain_step_save({path})")
        if rank0:
            # The manifest: the data position (--resume) and what ptrain-export checks the files against.
            # files: each file's suffix after PATH (a renamed checkpoint stays valid).
            files = [stage_path(args.checkpoint, plan, s, t)[len(args.checkpoint):] for s in range(plan["pp"])
                     for t in range(tp)]
            embedded = plan_abi.read_embedded(plan["library"]) or {}
            with open(args.checkpoint + ".json", "w") as f:  # python/ptrain/manifest.py
                json.dump({"step": args.steps, "seed": args.seed, "dp": dp, "pp": plan["pp"], "tp": tp,
                           "plan_fingerprint": embedded.get("fingerprint"),
                           "reshard_fingerprint": manifest.reshard_fingerprint(embedded),
                           "per_replica": per_replica_states(plan), "files": files,
                           "data": feed.position(args.steps)}, f)
            print(f"checkpoint: {args.checkpoint}" + ("" if plan["pp"] == 1 else ".stage<s>") +
                  ("" if tp == 1 else ".tp<t>") + (" (and .dp<d> per replica d > 0)" if per_replica_states(plan)
                                                   else ""), flush=True)
    if args.log and rank0:
        with open(args.log, "w") as f:
            json.dump(log, f, indent=1)
    if run_log:
        record({"record": "end", "steps": args.steps, "tokens_per_s": log.get("tokens_per_s"),
                "traffic": log.get("traffic", {})})
        run_log.close()
        print(f"run log: {run_log.name}", flush=True)
    if board:
        board.close()
        print(f"TensorBoard: {board.path}", flush=True)
    if args.memory_log:  # Every rank: what its heap storage really occupies (python/ptrain/memory.py).
        from ptrain import memory
        measured = memory.measure(step.lib, stage.value)
        with open(f"{args.memory_log}.rank{rank.value}.json", "w") as f:
            json.dump({"rank": rank.value, "stage": stage.value, **measured}, f, indent=1)
    step.check(step.lib.ptrain_step_finalize(), "ptrain_step_finalize")
    if run_log and not args.no_plots:  # After finalize: the other ranks do not wait on rank 0's plotting.
        write_plots(run_log.name)


def parser():
    p = argparse.ArgumentParser(prog="ptrain-run", description=__doc__.split("\n\n")[0],
                                epilog=DATA_FORMATS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="the output folder of ptrain-compile (plan.json, libstep.so)")
    p.add_argument("--data", required=True, metavar="DIR|PREFIX|FILE",
                   help="the training data, its format declared by its files (docs/Data.md): a Megatron-LM indexed "
                        "dataset (PREFIX of PREFIX.idx/PREFIX.bin, or a folder of train.idx/.bin and val.idx/.bin); "
                        "nanoGPT token files (a folder of train.bin and val.bin, uint16 or uint32, with data.json "
                        '{"format": "nanogpt", "dtype": ..., "vocab_size": ...} or nanoGPT\'s meta.pkl); or raw '
                        'bytes, each byte one token id (data.json {"format": "bytes"}, as python/ptrain/data.py '
                        "writes it, or --data-format bytes)")
    p.add_argument("--val-data", default=None, metavar="DIR|PREFIX|FILE",
                   help="a separate validation source of --data's format: a Megatron PREFIX (all its documents; a "
                        "--data PREFIX then trains on all of its own instead of holding out its last documents), a "
                        "folder (its val split: val.idx/.bin or val.bin) or a bytes file (all of it)")
    p.add_argument("--sample-index", choices=loader.SAMPLE_INDEXES, default="epochs",
                   help="the training order of a token format: epochs (a seeded permutation of consecutive samples "
                        "per epoch; the default) or megatron (Megatron-LM GPTDataset's document, sample and shuffle "
                        "index for --steps x the global batch samples and --seed; Megatron files; docs/Data.md)")
    p.add_argument("--log-samples", action="store_true",
                   help="record each step's global batch (the sample numbers, replica by replica) in the run log")
    p.add_argument("--data-format", choices=token_data.FORMATS, default=None,
                   help="the format --data must have (default: what its files declare); bytes also declares an "
                        "undeclared folder or file to be raw bytes")
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="the folder of the TensorBoard event file (default: tensorboard/ beside the run log)")
    p.add_argument("--no-tensorboard", action="store_true", help="write no TensorBoard event file")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--val-every", type=int, default=None)
    p.add_argument("--val-batches", type=int, default=4, help="held-out batches per validation")
    p.add_argument("--np", type=int, default=None,
                   help="ranks (default and only value: dp * pp * tp of plan.json)")
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--resume", default=None,
                   help="continue from a checkpoint of --checkpoint (its step and seed are in PATH.json)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", default=None, help="write the losses as JSON (rank 0)")
    p.add_argument("--timeout", type=float, default=120.0, help="communication deadline in seconds")
    p.add_argument("--telemetry-every", type=int, default=0,
                   help="measure the codec telemetry every N training steps (0: off)")
    p.add_argument("--run-log", default=None,
                   help="the JSON-lines run log (default: run.jsonl beside the checkpoint, else in out/)")
    p.add_argument("--no-plots", action="store_true", help="do not draw the run log's PNGs at the end")
    p.add_argument("--memory-log", default=None,
                   help="each rank writes PATH.rank<r>.json: the resident bytes of its states and arenas at the end")
    p.add_argument("--launcher", choices=("env", "mpirun"), default=None,
                   help="how the ranks start: env (one process per rank with torchrun's RANK/WORLD_SIZE/MASTER_ADDR/"
                        "MASTER_PORT; the default for --target cuda plans) or mpirun (the default for CPU plans, "
                        "whose step communicates over MPI)")
    p.add_argument("--mpirun-args", default="",
                   help='more mpirun options, after the defaults (e.g. "--host a:1,b:1 --mca btl tcp,self")')
    p.add_argument("--labels", default=None, metavar="DIR",
                   help="explicit labels: DIR/train.labels and DIR/val.labels, int64 little-endian, one per byte of "
                        "--data's train.bin / val.bin (a step compiled with a labels input)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


def rank_name():
    return os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "?"))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = [a for a in argv if a != "--worker"]
    try:
        if not args.worker:
            world = torchrun_world()
            return launch(args) if world is None else as_rank(args, world)
        work(args)
        return 0
    except KeyboardInterrupt:  # Ctrl-C, or the env launcher's forwarded SIGINT: no traceback per rank.
        print(f"ptrain-run: rank {rank_name()}: interrupted" if args.worker else "ptrain-run: interrupted",
              file=sys.stderr, flush=True)
        if args.worker:
            os._exit(130)
        return 130
    except (RunError, OSError) as e:
        # An OSError (a log or checkpoint that cannot be written) is a message naming the file, no traceback.
        message = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename else e
        print(f"ptrain-run: error: {message}", file=sys.stderr, flush=True)
        # A worker ends every rank (MPI_Abort), also those stalled in compute or a sleep; if that is not
        # possible it leaves without finalizing MPI, and mpirun then ends the other ranks (no hang). Without
        # mpirun (torchrun, --launcher env) there is no MPI job to abort: the launcher ends the other ranks.
        if args.worker:
            if _STEP is not None and "OMPI_COMM_WORLD_RANK" in os.environ:
                # Said here, not left to mpirun: Open MPI's own MPI_ABORT banner goes through show_help, which
                # can fail ("Out of resource") and print nothing, e.g. as root in a container.
                print(f"ptrain-run: rank {rank_name()} ends the job with MPI_Abort (error code 1)", file=sys.stderr,
                      flush=True)
                _STEP.lib.ptrain_step_abort(1)
            os._exit(1)
        return 1


if __name__ == "__main__":
    sys.exit(main())
