"""ptrain-run's worker, one per rank (python/ptrain/run.py): libstep.so through ctypes (Step) and the training loop
(work): init, resume, the steps with their validation, telemetry and run log, the checkpoint and its manifest."""

import ctypes
import ctypes.util
import json
import math
import os
import sys
import time

from ptrain import checkpoint_set, loader, manifest, plan_abi, reshard, tb_events
from ptrain.run_checkpoint import old_path, per_replica_states, resume_consumed, resume_position, stage_path
from ptrain.run_data import batch, open_data, read_labels, run_samples
from ptrain.run_plan import PLAN_KEYS, RunError, load_plan
from ptrain.run_telemetry import Bar, RunLog, Scalars, Telemetry, Traffic, print_traffic, run_log_path, \
    tensorboard_dir, write_plots

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
    # Before ptrain_step_init (MPI_Init, which every rank reaches): every pending checkpoint file this run writes is
    # younger (checkpoint_set.commit; 1 s of margin for the file system's coarse clock).
    started = time.time()
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
                                    for d in range(replicas)], replica, dp)
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

    run_log = RunLog(run_log_path(args)) if rank0 else None

    board = None
    if rank0 and not args.no_tensorboard:
        board = tb_events.EventWriter(tensorboard_dir(args))
    scalars = Scalars(step, plan)

    def record(rec):
        if run_log:
            run_log.write(rec)
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
    # One set of files, committed together (python/ptrain/checkpoint_set.py): each rank saves a pending file,
    # rank 0 renames them all into place once every one is there, then writes the manifest.
    if args.checkpoint and (replica == 0 or per_replica_states(plan)):
        path = stage_path(args.checkpoint, plan, stage.value, tp_rank, replica)
        pending = path + checkpoint_set.PENDING
        step.check(step.lib.ptrain_step_save(pending.encode()), f"ptrain_step_save({pending})")
        if rank0:
            # The manifest: the data position (--resume) and what ptrain-export checks the files against.
            # files: each file's suffix after PATH (a renamed checkpoint stays valid).
            files = [stage_path(args.checkpoint, plan, s, t)[len(args.checkpoint):] for s in range(plan["pp"])
                     for t in range(tp)]
            embedded = plan_abi.read_embedded(plan["library"]) or {}
            checkpoint_set.commit(args.checkpoint, plan, args.steps, {  # python/ptrain/manifest.py
                "step": args.steps, "seed": args.seed, "dp": dp, "pp": plan["pp"], "tp": tp,
                "plan_fingerprint": embedded.get("fingerprint"),
                "reshard_fingerprint": manifest.reshard_fingerprint(embedded),
                "per_replica": per_replica_states(plan), "files": files,
                "data": feed.position(args.steps)}, started - 1.0, args.timeout)
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
        measured = memory.measure(step.lib, stage.value, plan)
        with open(f"{args.memory_log}.rank{rank.value}.json", "w") as f:
            json.dump({"rank": rank.value, "stage": stage.value, **measured}, f, indent=1)
    step.check(step.lib.ptrain_step_finalize(), "ptrain_step_finalize")
    if run_log and not args.no_plots:  # After finalize: the other ranks do not wait on rank 0's plotting.
        write_plots(run_log.name)
