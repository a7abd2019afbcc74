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
OMPI_ALLOW_RUN_AS_ROOT{,_CONFIRM}=1; OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1 per rank) running `python3 -m
ptrain.run --worker`. Each worker loads libstep.so with ctypes, calls ptrain_step_init (weights from the ONNX model
named in plan.json; MPI and the pipeline communicator), and for every step feeds its replica's micro_batches x batch
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
position (steps done, seed, samples consumed; python/ptrain/manifest.py), as one set: each rank saves a pending
file, rank 0 renames them into place once all are there and writes PATH.json last, so a save that fails on any
rank leaves the earlier checkpoint whole (python/ptrain/checkpoint_set.py). --resume PATH loads such a checkpoint
(every state by key:
parameters, AdamW moments and step, codec residuals and warm-start Q) and continues from its step to step N with
the batches a straight run would draw: the result equals the uninterrupted run's (a checkpoint of other data is
an error naming what differs). Before any rank starts the
manifest is checked against the plan: another compile's checkpoint is an error naming both fingerprints, another
pp or tp an error, a missing or truncated file named, files of different steps (or of another step than PATH.json's)
an error naming them; one of the same plan at another dp is resharded by DESIGN.md decision
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
quote), --log or --memory-log in a folder that does not exist, and a run log or TensorBoard folder under a file
or an unwritable folder; a file a rank cannot write (OSError) is a message naming it. A failed run leaves no run
log that reads like a finished run's: the launcher renames it RUN.jsonl.failed (the steps up to the failure). The
run log is opened at the first step's record, so a run that fails while starting leaves an earlier run's log as
it was.

The modules: this one parses the arguments and dispatches (launcher, torchrun rank or worker); run_plan.py
checks out/, run_data.py the data, run_checkpoint.py the checkpoint files and --resume, run_launch.py starts
the ranks, run_loop.py is the worker's training loop, run_telemetry.py the byte counters, codec telemetry, run
log, TensorBoard scalars, plots and progress bar.
"""

import argparse
import os
import sys

from ptrain import loader, run_loop, token_data
from ptrain.run_launch import launch, prepare, rank_defaults, torchrun_world
from ptrain.run_plan import RunError

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


def as_rank(args, world):
    """Started by torchrun: this process is rank RANK of WORLD_SIZE; nothing is launched."""
    prepare(args, torchrun=world)
    for key, value in rank_defaults({}, args.timeout).items():  # What torchrun's user did not set.
        os.environ.setdefault(key, value)
    args.worker = True  # From here on an error ends this rank like a worker's.
    run_loop.work(args)
    return 0


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
        run_loop.work(args)
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
        # A worker's message starts on a line of its own: rank 0's progress bar (another process) may be mid-line.
        print(f"{chr(10) if args.worker else ''}ptrain-run: error: {message}", file=sys.stderr, flush=True)
        # A worker ends every rank (MPI_Abort), also those stalled in compute or a sleep; if that is not
        # possible it leaves without finalizing MPI, and mpirun then ends the other ranks (no hang). Without
        # mpirun (torchrun, --launcher env) there is no MPI job to abort: the launcher ends the other ranks.
        if args.worker:
            if run_loop._STEP is not None and "OMPI_COMM_WORLD_RANK" in os.environ:
                # Said here, not left to mpirun: Open MPI's own MPI_ABORT banner goes through show_help, which
                # can fail ("Out of resource") and print nothing, e.g. as root in a container.
                print(f"ptrain-run: rank {rank_name()} ends the job with MPI_Abort (error code 1)", file=sys.stderr,
                      flush=True)
                run_loop._STEP.lib.ptrain_step_abort(1)
            os._exit(1)
        return 1


if __name__ == "__main__":
    sys.exit(main())
