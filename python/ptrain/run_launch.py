"""ptrain-run's launcher (python/ptrain/run.py): everything a rank would find out too late is checked first
(prepare), then the ranks start, under mpirun or the env launcher (python/ptrain/launcher.py), each running
`python3 -m ptrain.run --worker` with the folder holding this package first on PYTHONPATH."""

import math
import os
import shlex
import shutil
import signal
import subprocess
import sys

from ptrain import loader, token_data
from ptrain.run_checkpoint import reshard_warnings, resume_consumed, resume_position, stage_path
from ptrain.run_data import data_inputs, open_data, read_labels, run_samples
from ptrain.run_plan import RunError, cuda_devices, load_plan
from ptrain.run_telemetry import run_log_path, tensorboard_dir

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
    # Folders the run makes: what exists of their path must be folders this user can write into.
    made = [("--run-log" if args.run_log else "the run log", os.path.dirname(os.path.abspath(run_log_path(args))))]
    if not args.no_tensorboard:
        made.append(("--tensorboard" if args.tensorboard else "the TensorBoard folder", tensorboard_dir(args)))
    for flag, folder in made:
        check_creatable_folder(flag, folder)
    if args.telemetry_every < 0:
        raise RunError(f"--telemetry-every {args.telemetry_every}: must be >= 0 (0: off)")
    check_outputs_are_not_inputs(args, plan)
    return plan, world, launcher


def check_creatable_folder(flag, folder):
    """RunError unless `folder` is a folder, or can be made (os.makedirs): its nearest existing ancestor is a
    writable folder, not a file."""
    existing = os.path.abspath(folder)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise RunError(f"{flag} {folder}: {existing} is not a folder")
    if not os.access(existing, os.W_OK):
        raise RunError(f"{flag} {folder}: the folder {existing} is not writable")


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
    # Each rank runs this package's ptrain-run as a module: the folder holding it goes first on PYTHONPATH (an
    # installed package is found there too), and mpirun passes it on like the other variables.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    worker = [sys.executable, "-m", "ptrain.run", "--worker", *args.argv]
    if launcher == "mpirun":
        mpirun = shutil.which("mpirun")
        if not mpirun:
            raise RunError("mpirun not found (Debian: openmpi-bin)")
        cmd = [mpirun, "-np", str(world), "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
               "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS", "-x", "PTRAIN_COMM_TIMEOUT_S",
               "-x", "PYTHONPATH", *mpirun_args, *worker]
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
