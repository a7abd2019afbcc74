"""ptrain-compile: an ONNX model to a compiled training step (DESIGN.md, L4).

    ptrain-compile model.onnx [--optimizer adamw|sgd|none [--momentum MU]] [--clip-norm C] [--precision fp32|bf16|fp16]
                   [--ignore-index N] [--class-weights FILE]
                   [--lr 3e-4 --warmup-steps 100 --total-steps 2000]
                   [--dp D [--deterministic-dp | --zero 1]] [--tp T [--vocab-parallel [--vocab-multiple K]]]
                   [--pp P --micro-batches M [--schedule 1f1b|gpipe|interleaved [--virtual-stages V]]
                    [--linear-ae DIM [--linear-ae-skip-stages K]]]
                   [--policy none|optimus-cc|... [--cluster FILE] [--compress-options "cb-rank=8 sc=false"]]
                   [--report REPORT.json] --target cpu -o out/

runs, writing every intermediate into out/:

    ptrain-translate --import-onnx model.onnx [--import-options]  -> out/forward.mlir   (L0 model graph)
    ptrain-opt --ptrain-pipeline="dp=.. tp=.. pp=.. micro-batches=.. ..."   -> out/step.mlir   (L1 training step)
      (one option set, lib/Pipelines/TrainingPipeline.cpp, docs/Pipeline.md), which runs
      --ptrain-build-training-step=... alone for a single-rank step, and
      with --pp P > 1 or --micro-batches M > 1 (the pipeline): --ptrain-split-stages="pp=P"
      --ptrain-build-training-step="micro-batches=M ..." --ptrain-schedule="micro-batches=M schedule=1f1b"
      with --linear-ae DIM, between the split and the step: --ptrain-insert-linear-ae="dim=DIM skip-stages=K"
        (MCBench's trainable encoder H x DIM / decoder DIM x H on every stage boundary from K on; the pipeline
        sends B x S x DIM codes; the weights start from their orthogonal ptrain.init, docs/Compression.md)
      with --policy P other than none (docs/Compression.md), between the schedule and the lowering:
        --ptrain-critical-path="cluster=FILE" (default clusters/h200-node.json) --ptrain-compress="policy=P OPTIONS"
        --ptrain-lower-to-runtime (per-stage @stage<s>_train_step / _eval_step with explicit sends and receives;
          compress/decompress and compressed all-reduces with keyed codec states where the policy put them)
        --ptrain-widen-half-codecs (a bf16 / fp16 plan's codec ops on 16-bit messages onto the f32 kernels)
        --ptrain-verify-plan (abstract execution of every rank: no deadlock, no mismatched communication)
      with --report FILE (a pipeline or parallel step): --ptrain-report="json=FILE" before the lowering, the timing
        analysis' prediction of this plan on the cluster (docs/TimingModel.md); with --policy none it runs
        --ptrain-critical-path itself (bench/cluster: the predicted iteration time of each compiled plan)
      with --dp D > 1: --ptrain-build-training-step="dp=D [bucket-bytes=N]" (gradients averaged over dp); with
        --zero 1 also "zero=1": ZeRO-1, the distributed optimizer (buckets reduce-scattered over dp, AdamW on
        each rank's 1 / D shard with shard-sized moments, parameters all-gathered; docs/DistributedOptimizer.md)
      with --deterministic-dp: "deterministic-dp=true" (the gradients and losses summed as one pairwise tree over
        the global micro-batches, the same bits at every dp with dp x M fixed; docs/Runtime.md)
      with --tp T > 1, first: --ptrain-raise --ptrain-shard-tp="tp=T" (Megatron's column/row-parallel layers;
        a head count or width that T does not divide is the pass's error naming the ONNX node); with
        --vocab-parallel [--vocab-multiple K]: "tp=T vocab-parallel=true [vocab-multiple=K]" (the embedding, LM
        head and cross-entropy split over the vocabulary, padded to a multiple of T K)
    ptrain-translate --emit-cpp out/step.mlir            -> out/step.cpp       (L4, docs/CodegenCpu.md)
      (with --emit-verify-plan=false: the pipeline above has just verified the plan; run by hand, --emit-cpp and
      --emit-cuda verify a lowered plan first, lib/Target/Common/VerifyPlanBeforeEmit.h)
      (with --emit-cpp-constants=out/step.consts.bin: the large constants that are not generated at init;
      with --fuse-elementwise on, --emit-cpp-kernels=out/kernels.o --emit-cpp-kernels-cpu=<--kernels-cpu>: the
      elementwise chains' kernels generated through MLIR and LLVM, docs/GeneratedKernels.md)
    c++ -std=c++17 -O2 -shared -fPIC step.cpp [kernels.o] -lptrain_runtime -> out/libstep.so
      (plus the build's step_flags.json: -fsanitize=... in a PTRAIN_SANITIZE build, docs/Sanitizers.md)
    with --target cuda (single- and multi-rank steps over NCCL, pipeline codecs; docs/CodegenCuda.md) instead:
      ptrain-translate --emit-cuda out/step.mlir         -> out/step.cu (--emit-cuda-constants=out/step.consts.bin;
      with --fuse-elementwise on, --emit-cuda-kernels=sm_80,sm_90: the elementwise chains' kernels as PTX, in step.cu)
      nvcc -std=c++17 -O2 -shared sm_80 + sm_90 step.cu -lptrain_runtime_cuda -lcublas -lcudart -> out/libstep.so
    out/memory_plan.json (a pipeline step): --ptrain-memory-plan's plan per rank (states, stash, temporaries;
                   with --report also added to the report beside the critical-path model's peak)
    out/phases.json (and a table on stdout): each phase's wall time and its tool's peak RSS
    out/auto.json (--policy auto): the search's explanation, --ptrain-compress's auto-report (each seed's and
                   each move's modelled time and predicted quality cost; docs/Compression.md "auto-report")
    out/plan.json: model path, batch, sequence, vocabulary, entry points, results, state keys, the policy, its
                   options and cluster, and the codec states (residuals, warm-start Q) the policy added: the
                   module's facts from ptrain-translate --emit-plan-json out/step.mlir (a walk over the step's
                   plan state, lib/Target/PlanJson), the paths and options from this driver (docs/Plan.md);
                   the same facts (without the paths) and their SHA-256 fingerprint are embedded in libstep.so
                   as the ELF section .ptrain_plan (plan_abi.py), which ptrain-run compares with plan.json

The tools, the runtime library and the headers are found from --build-dir/--source-dir, else
PTRAIN_BUILD_DIR/PTRAIN_SOURCE_DIR (the wrapper <build>/bin/ptrain-compile, configured by CMake from
tools/python-tool.in, sets them), else the build of the ptrain-translate on PATH (python/ptrain/build_dirs.py).
Every failing step ends the run with its tool's message and a nonzero status, and leaves out/ as it was: the run
writes into a staging folder out/.ptrain-compile-<pid>/ (the --report file too) and replaces the files above in
out/ only when every step has succeeded (an earlier run's files this run does not write are removed then, other
files stay); a failed or interrupted run (SIGINT, SIGTERM: the running tool's process group is killed) removes
the staging folder, and out/ itself if this run made it.
A pipeline step runs under mpirun with dp * pp * tp ranks (ptrain-run, python/ptrain/run.py); rank r is the
grid coordinate (r // (pp * tp), (r // tp) % pp, r % tp) over (dp, pp, tp): tp innermost, as in Megatron-LM.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ptrain import build_dirs, plan_abi, staging


class CompileError(Exception):
    pass


INTERRUPTS = {signal.SIGINT, signal.SIGTERM}  # what main's handlers turn into Interrupted


class Interrupted(Exception):
    """SIGINT or SIGTERM reached ptrain-compile (main's handlers raise it; the staging folder is removed)."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_interrupted(signum, _frame):
    raise Interrupted(signum)


def kill_process_group(child):
    """SIGKILL to a phase's tool and everything it started (run() puts each in its own session), then reaps it."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(child.pid, 0)
    except ChildProcessError:
        pass


# Every phase of this run: (what, wall seconds, the tool's peak RSS in bytes), in order (out/phases.json).
PHASES = []


def run(cmd, what):
    """Runs one phase's tool; records its wall time and peak RSS (os.wait4's ru_maxrss, the child alone)."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Its own process group, so that an interrupted ptrain-compile takes the tool and its children (c++ runs
        # cc1plus, as, ld) down with it instead of leaving them writing into out/. SIGINT and SIGTERM are held
        # while the child starts (a signal inside Popen would lose its pid), and unblocked in the child.
        child = None
        held = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
        try:
            try:
                child = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True,
                                         preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, held))
            except OSError as e:  # --cxx /no/such/c++, a build without its tools
                raise CompileError(f"{what}: cannot run {cmd[0]} ({e.strerror})")
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            if child is not None:
                kill_process_group(child)
            raise
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        proc = subprocess.CompletedProcess(cmd, child.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))
    PHASES.append({"phase": what, "wall_s": round(time.monotonic() - started, 3),
                   "peak_rss_bytes": usage.ru_maxrss * 1024})  # Linux: KiB
    if proc.returncode != 0:
        raise CompileError(
            f"{what} failed (exit {proc.returncode}): {' '.join(shlex.quote(c) for c in cmd)}\n"
            f"{proc.stderr.strip()}")
    # A step's warnings (e.g. a policy that compresses nothing) reach the user; remarks stay in the tools.
    for line in proc.stderr.splitlines():
        if ": warning: " in line:
            print(f"ptrain-compile: {line}", file=sys.stderr)
    return proc.stdout


# plan.json's fields in file order (docs/Plan.md, "plan.json"). The module's facts come from
# `ptrain-translate --emit-plan-json` (lib/Target/PlanJson: the grid, schedule, entry points, shapes and states,
# read by a walk over the step's plan state); the rest are the driver's: paths, the target and its build, and the
# options it was given. A field the emitter adds that is not listed here follows the listed ones.
PLAN_FIELDS = ("model", "target", "optimizer", "lr", "warmup_steps", "total_steps", "min_lr_ratio", "library",
               "dp", "zero", "pp", "tp", "micro_batches", "schedule", "virtual_stages", "policy", "compress_options",
               "cluster", "entry_points", "cuda_archs", "cuda_state_bytes", "constants_file", "generated_kernels",
               "batch", "seq", "vocab", "states", "train_step_results", "vocab_parallel", "linear_ae", "deterministic_dp", "codec_states",
               "replica_batch", "global_batch")


def check_zero_options(args):
    """--zero 1 (docs/DistributedOptimizer.md): what the ZeRO-1 step is built for, each refusal naming the options.
    The pass checks the same (zero=1 needs dp > 1 and AdamW); the driver also refuses what only it
    knows: --deterministic-dp. Every policy compiles for --target cpu: quantized buckets (mcbench's dp-codec),
    PowerSGD per gradient (optimus-cc's SC, auto's search); --target cuda emits the reduce-scatter and all-gather
    over NCCL (docs/CodegenCuda.md) and refuses the quantized reduce-scatter by name (--emit-cuda)."""
    if not args.zero:
        return
    if args.deterministic_dp:
        raise CompileError(f"--zero {args.zero} --deterministic-dp: the distributed optimizer's reduce-scatter sums "
                           "in MPI's order, not the pairwise tree over the global micro-batches; choose one")
    if args.dp < 2:
        raise CompileError(f"--zero {args.zero} shards the optimizer state over data-parallel replicas and needs "
                           f"--dp > 1 (got --dp {args.dp})")
    if args.optimizer != "adamw":
        raise CompileError(f"--zero {args.zero} shards AdamW's moments and needs --optimizer adamw (got --optimizer "
                           f"{args.optimizer})")


def module_plan(bin_dir, step, target):
    """The module's part of plan.json: ptrain-translate --emit-plan-json of the lowered step."""
    text = run([os.path.join(bin_dir, "ptrain-translate"), "--emit-plan-json", f"--plan-json-target={target}", step],
               "reading the plan of the training step")
    try:
        facts = json.loads(text)
    except ValueError as e:
        raise CompileError(f"ptrain-translate --emit-plan-json {step}: not a JSON object ({e})")
    if not isinstance(facts, dict):
        raise CompileError(f"ptrain-translate --emit-plan-json {step}: not a JSON object")
    return facts


def compose_plan(driver, facts):
    """plan.json from the driver's fields and the module's, in PLAN_FIELDS order; a field from both is an error
    (one source for each)."""
    both = sorted(set(driver) & set(facts))
    if both:
        raise CompileError(f"plan.json: {', '.join(both)} given by both the driver and --emit-plan-json")
    fields = {**driver, **facts}
    plan = {k: fields[k] for k in PLAN_FIELDS if k in fields}
    plan.update({k: v for k, v in facts.items() if k not in plan})
    return plan


def main(argv=None):
    p = argparse.ArgumentParser(prog="ptrain-compile", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="ONNX model (its external data next to it)")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd", "none"])
    p.add_argument("--momentum", type=float, default=0.0, help="SGD heavy-ball momentum in [0, 1)")
    p.add_argument("--clip-norm", type=float, default=0.0,
                   help="global-norm gradient clipping (Megatron-LM clip_grad); 0: off")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="bf16 / fp16: GEMMs read 16-bit operands and accumulate in fp32 (the runtime's "
                        "ptrain_gemm_bf16 / ptrain_gemm_f16); the layer-norm, softmax, GELU and residual-add outputs "
                        "stored in the 16-bit type (statistics in fp32; --fp32-activations keeps them fp32); fp32 "
                        "master weights, moments, checkpoint, loss, gradients and their sums; pipeline messages in "
                        "the 16-bit type "
                        "(docs/MixedPrecision.md); on CUDA cuBLAS 16-bit GEMMs with fp32 compute")
    p.add_argument("--fp32-activations", action="store_true",
                   help="bf16 / fp16: keep the activations between the non-GEMM ops (layer norm, softmax, GELU "
                        "and residual-add outputs) fp32 instead of storing them in the 16-bit type; only the GEMM "
                        "operands and messages are 16-bit (the step before slice 2 of docs/MixedPrecision.md, "
                        "\"16-bit activations\")")
    p.add_argument("--parameter-casts", default="once", choices=["once", "per-call"],
                   help="bf16 / fp16 pipelines: cast each parameter to 16 bits once per step, at its start, and "
                        "pass the copies to the stage functions (once, Megatron-LM's 16-bit model copy), or in "
                        "every stage call (per-call: no 16-bit copy held across the step); the same losses bit for "
                        "bit (docs/MixedPrecision.md, \"The once-per-step parameter cast\")")
    p.add_argument("--initial-loss-scale", type=float, default=None,
                   help="fp16's dynamic loss scaler (Megatron-LM's DynamicGradScaler, in the step: the loss "
                        "gradient times the scale, gradients unscaled and checked, a step with an inf/NaN skipped): "
                        "the first scale (default 2^32)")
    p.add_argument("--min-loss-scale", type=float, default=None,
                   help="fp16's dynamic loss scaler: the smallest scale (default 1)")
    p.add_argument("--loss-scale-window", type=int, default=None,
                   help="fp16's dynamic loss scaler: clean steps before the scale doubles (default 1000)")
    p.add_argument("--hysteresis", type=int, default=None,
                   help="fp16's dynamic loss scaler: overflowing steps before the scale halves (default 2)")
    p.add_argument("--ignore-index", type=int, default=None,
                   help="the label the loss does not count (PyTorch's ignore_index: a pad token id of the shifted "
                        "tokens, or -100 in explicit labels); the mean is over the step's counted positions")
    p.add_argument("--class-weights", default=None, metavar="FILE",
                   help="a text file of one weight per vocabulary entry (whitespace or comma separated): the loss "
                        "is sum(w[y] nll) / sum(w[y]) (torch.nn.functional.cross_entropy's weight)")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--warmup-steps", type=int, default=100)
    p.add_argument("--total-steps", type=int, default=2000)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--pp", type=int, default=1, help="pipeline stages (ranks under mpirun)")
    p.add_argument("--micro-batches", type=int, default=1, help="micro-batches per step")
    p.add_argument("--dp", type=int, default=1,
                   help="data-parallel replicas (ranks under mpirun: dp * pp; gradients averaged over dp)")
    p.add_argument("--tp", type=int, default=1,
                   help="tensor-parallel ranks per layer (Megatron-LM; ranks under mpirun: dp * pp * tp)")
    p.add_argument("--vocab-parallel", action="store_true",
                   help="with --tp: Megatron's vocabulary-parallel embedding, LM head and cross-entropy "
                        "(--ptrain-shard-tp vocab-parallel=true); the step never gathers the logits")
    p.add_argument("--vocab-multiple", type=int, default=None,
                   help="with --vocab-parallel: pad the vocabulary to a multiple of tp * K (default 1)")
    p.add_argument("--deterministic-dp", action="store_true",
                   help="sum gradients and losses as one pairwise tree over the global micro-batches, so that "
                        "dp x micro-batches = G gives the same bits at every dp (dp and micro-batches powers of two, "
                        "--policy none; docs/Runtime.md)")
    p.add_argument("--bucket-bytes", type=int, default=None,
                   help="largest data-parallel all-reduce bucket in bytes (default: the pass's, 25 MiB)")
    p.add_argument("--zero", type=int, default=0, choices=[0, 1],
                   help="ZeRO stage: 1 shards AdamW's state over dp (Megatron's distributed optimizer); needs --dp > 1")
    p.add_argument("--schedule", default="1f1b", choices=["1f1b", "gpipe", "interleaved"], help="pipeline schedule")
    p.add_argument("--virtual-stages", type=int, default=1,
                   help="model chunks per pipeline stage (--schedule interleaved; micro-batches a multiple of pp)")
    p.add_argument("--linear-ae", type=int, default=None, metavar="DIM",
                   help="with --pp > 1: MCBench's linear autoencoder on every pipeline stage boundary, trained with "
                        "the model (--ptrain-insert-linear-ae dim=DIM); the stages send DIM instead of the hidden "
                        "size per position")
    p.add_argument("--linear-ae-skip-stages", type=int, default=None, metavar="K",
                   help="with --linear-ae: leave the boundaries after the first K stages without one (default 0)")
    p.add_argument("--policy", default="none",
                   help="compression policy of --ptrain-compress (none, optimus-cc, or any policy the pass knows); "
                        "needs --pp, --dp or --tp > 1")
    p.add_argument("--cluster", default=None,
                   help="cluster description for --ptrain-critical-path (default: clusters/h200-node.json)")
    p.add_argument("--compress-options", default="",
                   help='more --ptrain-compress options, e.g. "cb-rank=8 sc=false cb-sends=all"')
    p.add_argument("--report", default=None,
                   help="also write the timing analysis' report (JSON) of the compiled plan on --cluster")
    p.add_argument("--import-options", default="",
                   help='more ptrain-translate --import-onnx options, e.g. "--bind batch_size=2,seq_len=8 '
                        '--signature auto" for an export with symbolic dims and extra inputs')
    p.add_argument("--trainable", default=None, metavar="REGEX",
                   help="train the initializers whose whole name matches REGEX (POSIX extended), whatever the "
                        "importer's rule says (ptrain-translate --trainable; docs/ImportONNX.md)")
    p.add_argument("--frozen", default=None, metavar="REGEX",
                   help="hold the initializers whose whole name matches REGEX constant: no gradient, no optimizer "
                        "state (ptrain-translate --frozen; wins over --trainable)")
    p.add_argument("--fuse-elementwise", default="off", choices=["off", "on"],
                   help="outline the step's elementwise chains into kernels generated through MLIR and LLVM: "
                        "object code linked into libstep.so (--target cpu, with the codec encoders and AdamW), or "
                        "PTX for sm_80 and sm_90 embedded in the CUDA step and launched on its stream (--target "
                        "cuda, the elementwise chains; docs/GeneratedKernels.md); off: the runtime's kernel per op")
    p.add_argument("--kernels-cpu", default="native",
                   help="the CPU the generated kernels are compiled for (an LLVM CPU name, e.g. x86-64-v3 or "
                        "skylake-avx512; default native: this machine's)")
    p.add_argument("--ort-training-model", default=None, metavar="FILE",
                   help="onnxruntime's training artifact of the model (training_model.onnx): train exactly the "
                        "initializers its requires_grad list names (ptrain-translate --ort-training-model)")
    p.add_argument("--cxx", default=os.environ.get("CXX", "c++"), help="host C++ compiler")
    p.add_argument("--nvcc", default=os.environ.get("NVCC"),
                   help="CUDA compiler for --target cuda (default: $NVCC, nvcc on PATH, /usr/local/cuda/bin/nvcc)")
    p.add_argument("--build-dir", default=None,
                   help="the ptrain build (bin/, lib/Runtime/; default: $PTRAIN_BUILD_DIR, else the build of the "
                        "ptrain-translate on PATH)")
    p.add_argument("--source-dir", default=None,
                   help="the ptrain source tree (include/; default: $PTRAIN_SOURCE_DIR, else the build's)")
    args = p.parse_args(argv)
    args.build_dir = build_dirs.build_dir(args.build_dir)
    args.source_dir = build_dirs.source_dir(args.source_dir, args.build_dir)
    previous = {s: signal.signal(s, raise_interrupted) for s in INTERRUPTS}
    try:
        compile_model(args)
    except CompileError as e:
        print(f"ptrain-compile: error: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        print(f"ptrain-compile: interrupted ({e}); -o {args.output} is as it was before this run", file=sys.stderr)
        return 128 + e.signum
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0


def check_deterministic_dp(args, pipeline):
    """--deterministic-dp's constraints (--ptrain-build-training-step deterministic-dp and the pipeline's options
    check them too), named before anything is built."""
    if not args.deterministic_dp:
        return
    where = f"--deterministic-dp (--dp {args.dp} --micro-batches {args.micro_batches})"
    power = lambda n: n > 0 and n & (n - 1) == 0  # noqa: E731
    if not pipeline:
        raise CompileError(f"{where}: needs a pipeline or parallel step (--dp, --tp, --pp or --micro-batches > 1)")
    if not power(args.dp) or not power(args.micro_batches):
        raise CompileError(f"{where}: --dp and --micro-batches must be powers of two (the pairwise tree over the "
                           "global micro-batches)")
    if args.policy != "none":
        raise CompileError(f"{where}: --policy {args.policy}: a codec's error feedback depends on how the "
                           "micro-batches are split between replicas; use --policy none")
    if args.schedule == "interleaved":
        raise CompileError(f"{where}: --schedule interleaved is not supported (use 1f1b or gpipe)")
    if args.linear_ae is not None:
        raise CompileError(f"{where}: --linear-ae is not supported")
    if args.target != "cpu":
        raise CompileError(f"{where}: --target {args.target}: the CPU target only (the CUDA code generator has no "
                           "all-gather over dp yet)")


def compile_model(args):
    if args.pp < 1 or args.micro_batches < 1 or args.dp < 1 or args.tp < 1:
        raise CompileError(f"--dp {args.dp} --tp {args.tp} --pp {args.pp} --micro-batches {args.micro_batches}: "
                           "each must be at least 1")
    if args.vocab_parallel and args.tp < 2:
        raise CompileError(f"--vocab-parallel needs --tp > 1 (got --tp {args.tp})")
    if args.vocab_multiple is not None and not args.vocab_parallel:
        raise CompileError(f"--vocab-multiple {args.vocab_multiple} without --vocab-parallel")
    if args.vocab_multiple is not None and args.vocab_multiple < 1:
        raise CompileError(f"--vocab-multiple {args.vocab_multiple}: must be at least 1")
    if args.bucket_bytes is not None and args.bucket_bytes < 0:
        raise CompileError(f"--bucket-bytes {args.bucket_bytes}: must be at least 0")
    pipeline = args.pp > 1 or args.micro_batches > 1 or args.dp > 1 or args.tp > 1
    check_deterministic_dp(args, pipeline)
    check_zero_options(args)
    check_schedule_options(args)
    check_linear_ae_options(args)
    if args.target == "cuda" and args.kernels_cpu != "native":
        raise CompileError(f"--kernels-cpu {args.kernels_cpu}: the CPU of --target cpu's generated kernels; --target "
                           f"cuda's are PTX for {' and '.join('sm_' + a for a in CUDA_ARCHS)} "
                           "(docs/GeneratedKernels.md)")
    if args.momentum != 0.0 and args.optimizer != "sgd":
        raise CompileError(f"--momentum {args.momentum}: an option of --optimizer sgd (got --optimizer "
                           f"{args.optimizer})")
    if pipeline and args.optimizer == "none":
        raise CompileError(f"--optimizer {args.optimizer}: a pipeline or parallel step (--dp/--tp/--pp/"
                           "--micro-batches > 1) needs --optimizer adamw or sgd")
    # Micro-batches alone run on one rank: nothing is sent, so a policy would compress nothing, silently.
    if args.policy != "none" and args.pp == 1 and args.dp == 1 and args.tp == 1:
        raise CompileError(f"--policy {args.policy}: compression needs traffic between ranks (--pp, --dp or --tp "
                           f"> 1); --pp 1 --dp 1 --tp 1 --micro-batches {args.micro_batches} runs on one rank")
    if args.policy == "none" and args.compress_options.strip():
        raise CompileError(f"--compress-options '{args.compress_options}' without --policy")
    if args.policy == "none" and args.cluster is not None and args.report is None:
        raise CompileError(f"--cluster {args.cluster} without --policy or --report (only --ptrain-critical-path, "
                           "run for a compression policy or a report, reads the cluster)")
    if args.report is not None and not pipeline:
        raise CompileError(f"--report {args.report}: the timing analysis needs a pipeline or parallel step (--pp, "
                           "--dp, --tp or --micro-batches > 1)")
    if not args.build_dir or not args.source_dir:
        raise CompileError("cannot locate the ptrain " + ("source tree" if args.build_dir else "build") + ": " +
                           build_dirs.HOW.format(tool="ptrain-compile") + (", and --source-dir SOURCE (or "
                           "PTRAIN_SOURCE_DIR=SOURCE)" if args.build_dir else ""))
    bin_dir = os.path.join(args.build_dir, "bin")
    if not os.path.isfile(os.path.join(bin_dir, "ptrain-translate")):
        raise CompileError(f"--build-dir {args.build_dir}: not a ptrain build (no bin/ptrain-translate in it)")
    runtime_dir = os.path.join(args.build_dir, "lib", "Runtime")
    include_dir = os.path.join(args.source_dir, "include")
    if not os.path.isfile(args.model):
        raise CompileError(f"{args.model}: no such file")
    cluster = None
    if args.policy != "none" or args.report is not None:
        cluster = os.path.abspath(args.cluster or os.path.join(args.source_dir, "clusters", "h200-node.json"))
        if not os.path.isfile(cluster):
            raise CompileError(f"--cluster {cluster}: no such file")
    try:
        args.import_argv = shlex.split(args.import_options)
    except ValueError as e:  # e.g. an unbalanced quote
        raise CompileError(f"--import-options '{args.import_options}': {e}")
    for flag in ("trainable", "frozen", "ort_training_model"):
        if getattr(args, flag) is not None:
            args.import_argv.append(f"--{flag.replace('_', '-')}={getattr(args, flag)}")
    out = args.output
    if os.path.lexists(out) and not os.path.isdir(out):
        raise CompileError(f"-o {out}: exists and is not a folder")
    if args.report is not None:
        check_report_path(args, cluster, out)
    created = not os.path.isdir(out)
    try:
        os.makedirs(out, exist_ok=True)
        stage = tempfile.mkdtemp(prefix=f".ptrain-compile-{os.getpid()}-", dir=out)
    except OSError as e:
        raise CompileError(f"-o {out}: cannot create the output folder ({e.strerror})")
    # Every output is written into the staging folder and moved into out/ only when all steps have succeeded, so a
    # failed or interrupted run leaves out/ (an earlier plan, its checkpoints and logs) and --report as they were.
    try:
        write_outputs(args, stage, out, pipeline, cluster, bin_dir, runtime_dir, include_dir)
        write_phases(stage)
        publish_outputs(args, stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if created and not os.listdir(out):
            os.rmdir(out)
        raise


def check_report_path(args, cluster, out):
    """--report must not name an input or another output: --report MODEL.onnx replaced the model with the JSON
    report (and a failed compile then removed it)."""
    inputs = {args.model: "the model", cluster: "the cluster description"}
    if args.class_weights:
        inputs[args.class_weights] = "the --class-weights file"
    try:  # the model's external data (its weights); python3-onnx is optional here
        import onnx
        folder = os.path.dirname(os.path.abspath(args.model))
        for init in onnx.load(args.model, load_external_data=False).graph.initializer:
            for entry in init.external_data:
                if entry.key == "location":
                    inputs[os.path.join(folder, entry.value)] = f"external data of the model {args.model}"
    except Exception:  # no onnx package, or a model the importer will name the problem of
        pass
    inputs.update({os.path.join(out, name): f"{name}, an output of -o" for name in OUTPUTS})
    for path, role in inputs.items():
        if path and os.path.abspath(path) == os.path.abspath(args.report) or (
                path and os.path.exists(path) and os.path.exists(args.report) and os.path.samefile(path, args.report)):
            raise CompileError(f"--report {args.report}: is {role}; name another file for the report")
    folder = os.path.dirname(os.path.abspath(args.report))
    if not os.path.isdir(folder) and folder != os.path.abspath(out):  # -o is made by the run
        raise CompileError(f"--report {args.report}: no folder {folder} to write it in")


def check_schedule_options(args):
    """--schedule interleaved and --virtual-stages come together (the passes' errors name their own options)."""
    if args.virtual_stages < 1:
        raise CompileError(f"--virtual-stages {args.virtual_stages}: must be at least 1")
    if args.schedule == "interleaved" and (args.virtual_stages < 2 or args.pp < 2):
        raise CompileError(f"--schedule interleaved needs --pp >= 2 and --virtual-stages >= 2 (model chunks per "
                           f"stage), got --pp {args.pp} --virtual-stages {args.virtual_stages}")
    if args.virtual_stages > 1 and args.schedule != "interleaved":
        raise CompileError(f"--virtual-stages {args.virtual_stages} needs --schedule interleaved (got --schedule "
                           f"{args.schedule})")


def check_linear_ae_options(args):
    """--linear-ae needs stage boundaries (--pp > 1); the pass itself checks DIM against the hidden size."""
    if args.linear_ae_skip_stages is not None and args.linear_ae is None:
        raise CompileError(f"--linear-ae-skip-stages {args.linear_ae_skip_stages} without --linear-ae")
    if args.linear_ae is None:
        return
    if args.linear_ae < 1:
        raise CompileError(f"--linear-ae {args.linear_ae}: the code size must be at least 1")
    if args.pp < 2:
        raise CompileError(f"--linear-ae {args.linear_ae}: the autoencoder sits on pipeline stage boundaries; it "
                           f"needs --pp > 1 (got --pp {args.pp})")
    skip = args.linear_ae_skip_stages or 0
    if skip < 0 or skip >= args.pp * args.virtual_stages - 1:
        raise CompileError(f"--linear-ae-skip-stages {skip}: must be in [0, {args.pp * args.virtual_stages - 2}] "
                           f"(a boundary of the {args.pp * args.virtual_stages} stages must remain)")


OUTPUTS = ("forward.mlir", "step.mlir", "step.cpp", "step.consts.bin", "kernels.o", "step.cu", "libstep.so",
           "plan.json", "memory_plan.json", "phases.json", "auto.json")

# The GPU architectures of --target cuda (docs/CodegenCuda.md): A100 and H100/H200.
CUDA_ARCHS = ("80", "90")


def find_nvcc(args):
    if args.nvcc is not None and not (os.path.isfile(args.nvcc) and os.access(args.nvcc, os.X_OK)):
        raise CompileError(f"--nvcc {args.nvcc}: not an executable file (or $NVCC)")
    for candidate in (args.nvcc, shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise CompileError("--target cuda: nvcc not found (pass --nvcc, set NVCC, or install the CUDA toolkit under "
                       "/usr/local/cuda)")


def build_cuda_library(args, source, lib, runtime_dir, include_dir):
    """nvcc of step.cu into libstep.so: C++17, -O2, sm_80 and sm_90, linking libptrain_runtime_cuda (and through
    it libptrain_runtime), cuBLAS and cudart."""
    cuda_runtime_dir = os.path.join(runtime_dir, "cuda")
    if not os.path.isfile(os.path.join(cuda_runtime_dir, "libptrain_runtime_cuda.so")):
        raise CompileError(f"--target cuda: {cuda_runtime_dir}/libptrain_runtime_cuda.so not found; configure "
                           "ptrain with -DPTRAIN_ENABLE_CUDA=ON (needs the CUDA toolkit)")
    nvcc = find_nvcc(args)
    cuda_lib_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "lib64")
    gencode = [f"--generate-code=arch=compute_{a},code=sm_{a}" for a in CUDA_ARCHS]
    run([nvcc, "-std=c++17", "-O2", "-shared", "-Xcompiler=-fPIC,-Wall,-Werror", "-Werror", "all-warnings",
         *gencode, f"-I{include_dir}", source, "-o", lib,
         f"-L{cuda_runtime_dir}", "-lptrain_runtime_cuda", f"-L{runtime_dir}", "-lptrain_runtime", "-lcublas",
         "-lcudart", f"-Xlinker=-rpath,{cuda_runtime_dir}", f"-Xlinker=-rpath,{runtime_dir}",
         f"-Xlinker=-rpath,{cuda_lib_dir}", "-Xlinker=--no-undefined"],
        "compiling step.cu with nvcc")


def read_class_weights(path):
    """The --class-weights file: floats separated by whitespace or commas (the pass checks the count and values)."""
    try:
        text = open(path).read()
    except OSError as e:
        raise CompileError(f"--class-weights {path}: {e.strerror}")
    try:
        weights = [float(x) for x in re.split(r"[\s,]+", text.strip()) if x]
    except ValueError as e:
        raise CompileError(f"--class-weights {path}: {e}")
    if not weights:
        raise CompileError(f"--class-weights {path}: no weights in the file")
    return weights


def step_flags(runtime_dir):
    """The host compiler flags the build tree asks for in <runtime_dir>/step_flags.json (lib/Runtime/CMakeLists.txt):
    -fsanitize=... in a PTRAIN_SANITIZE build, so libstep.so is checked like the runtime it links; none otherwise.
    A build tree without the file (older builds) adds none; a malformed one is an error naming it."""
    path = os.path.join(runtime_dir, "step_flags.json")
    if not os.path.isfile(path):
        return []
    try:
        with open(path) as f:
            flags = json.load(f)["cxxflags"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CompileError(f"{path}: cannot read the build's step flags ({e})")
    if not isinstance(flags, list) or not all(isinstance(x, str) for x in flags):
        raise CompileError(f"{path}: 'cxxflags' must be a list of strings")
    return flags


STAGED_REPORT = "report.json"  # --report's file while staged (not an output of -o)


def publish_outputs(args, stage, out):
    """Moves a successful run's files from the staging folder into out/ (the same file system: each a rename),
    after removing the earlier run's outputs that this run did not write (e.g. kernels.o of a fused plan), and
    --report to its path (possibly on another file system). Signals are held off meanwhile, so that out/ never
    holds half of two plans."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
    try:
        if args.report is not None:
            shutil.move(os.path.join(stage, STAGED_REPORT), args.report)
        staging.publish(stage, out, OUTPUTS)
        shutil.rmtree(stage)
    except OSError as e:
        raise CompileError(f"-o {out}: cannot move the outputs into place ({e})")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def write_outputs(args, out, final_out, pipeline, cluster, bin_dir, runtime_dir, include_dir):
    """Every output into `out` (the staging folder); `final_out` is where publish_outputs moves them (plan.json's
    library path names it)."""
    forward = os.path.join(out, "forward.mlir")
    step = os.path.join(out, "step.mlir")
    cpp = os.path.join(out, "step.cpp")
    lib = os.path.join(out, "libstep.so")

    try:
        # --check-external-data: a missing or short weights file is ptrain-compile's error (naming the initializer,
        # the file and the byte range), not first ptrain-run's.
        run([os.path.join(bin_dir, "ptrain-translate"), "--import-onnx", args.model, "--check-external-data",
             *args.import_argv,
             "--mlir-print-debuginfo", "-o", forward],
            "ONNX import")
    except CompileError as e:
        # The importer names its own options (--bind, --signature, --constant-input); ptrain-compile takes them in
        # one option.
        hint = re.search(r"(--bind|--signature|--constant-input)( [^;)\n]*)?", str(e))
        if hint and hint.group(1) not in args.import_options:
            raise CompileError(f"{e}\n(ptrain-compile passes importer options with --import-options, e.g. "
                               f"--import-options \"{hint.group(0).strip()}\")")
        raise
    # One option set for every pass of the step (ptrain-opt --ptrain-pipeline, lib/Pipelines, docs/Pipeline.md).
    options = (f"optimizer={args.optimizer} lr={args.lr!r} warmup-steps={args.warmup_steps} "
               f"total-steps={args.total_steps} min-lr-ratio={args.min_lr_ratio!r} "
               f"weight-decay={args.weight_decay!r}")
    if args.optimizer == "sgd":
        options += f" momentum={args.momentum!r}"
    if args.clip_norm != 0.0:
        options += f" clip-norm={args.clip_norm!r}"
    if args.precision != "fp32":
        options += f" precision={args.precision}"
    if args.fp32_activations:
        options += " half-activations=false"  # the pass rejects it with precision=fp32
    # fp16's loss scaler: the pass validates them (and rejects them without --precision fp16).
    for flag in ("initial_loss_scale", "min_loss_scale", "loss_scale_window", "hysteresis"):
        if getattr(args, flag) is not None:
            options += f" {flag.replace('_', '-')}={getattr(args, flag)!r}"
    if args.ignore_index is not None:
        options += f" ignore-index={args.ignore_index}"
    if args.class_weights is not None:
        options += " class-weights=" + ",".join(repr(w) for w in read_class_weights(args.class_weights))
    opt = os.path.join(bin_dir, "ptrain-opt")
    if pipeline:
        options += (f" dp={args.dp} tp={args.tp} pp={args.pp} virtual-stages={args.virtual_stages}"
                    f" micro-batches={args.micro_batches} schedule={args.schedule}")
        if args.bucket_bytes is not None:
            options += f" bucket-bytes={args.bucket_bytes}"
        if args.deterministic_dp:
            options += " deterministic-dp=true"
        if args.zero:
            options += f" zero={args.zero}"
        if args.parameter_casts != "once":
            options += f" parameter-casts={args.parameter_casts}"
        if args.vocab_parallel:
            options += " vocab-parallel=true" + (f" vocab-multiple={args.vocab_multiple}" if args.vocab_multiple else "")
        if args.linear_ae is not None:
            options += f" linear-ae-dim={args.linear_ae} linear-ae-skip-stages={args.linear_ae_skip_stages or 0}"
        if args.policy != "none":
            compress_options = args.compress_options.strip()
            if args.policy == "auto" and "auto-report" not in compress_options:
                compress_options += f" auto-report={os.path.abspath(os.path.join(out, 'auto.json'))}"
            options += f" policy={args.policy} compress-options={{{compress_options.strip()}}}"
        if cluster is not None:
            options += f" cluster={cluster}"
        if args.report is not None:
            options += f" report={os.path.abspath(os.path.join(out, STAGED_REPORT))}"
        memory_plan = os.path.join(out, "memory_plan.json")
        options += f" memory-plan={os.path.abspath(memory_plan)}"
    run([opt, forward, f"--ptrain-pipeline={options}", "--mlir-print-debuginfo", "-o", step],
        "building the pipeline training step" if pipeline else "building the training step")
    if pipeline and args.report is not None:
        add_memory_plan_to_report(os.path.join(out, STAGED_REPORT), memory_plan)
    if args.target == "cuda":
        source = os.path.join(out, "step.cu")
        # As on the CPU: the large constants that are not generated are read at set-up from step.consts.bin.
        # --fuse-elementwise=on: the generated kernels' PTX for every architecture, embedded in step.cu (KernelPtx.h).
        kernel_flags = ([f"--emit-cuda-kernels={','.join('sm_' + a for a in CUDA_ARCHS)}"]
                        if args.fuse_elementwise == "on" else [])
        run([os.path.join(bin_dir, "ptrain-translate"), "--emit-cuda", "--emit-verify-plan=false", step, "-o", source,
             f"--emit-cuda-constants={os.path.join(out, 'step.consts.bin')}", *kernel_flags], "CUDA emission")
        build_cuda_library(args, source, lib, runtime_dir, include_dir)
    else:
        # The large constants that are not generated are read at init from step.consts.bin beside libstep.so.
        # --fuse-elementwise=on: ptrain-translate also writes the generated kernels' object (KernelObject.h).
        kernels = []
        if args.fuse_elementwise == "on":
            kernels = [os.path.join(out, "kernels.o")]
            kernel_flags = [f"--emit-cpp-kernels={kernels[0]}", f"--emit-cpp-kernels-cpu={args.kernels_cpu}"]
        else:
            kernel_flags = []
        run([os.path.join(bin_dir, "ptrain-translate"), "--emit-cpp", "--emit-verify-plan=false", step, "-o", cpp,
             f"--emit-cpp-constants={os.path.join(out, 'step.consts.bin')}", *kernel_flags], "C++ emission")
        run([args.cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", *step_flags(runtime_dir),
             f"-I{include_dir}", cpp, *kernels,
             "-o", lib, f"-L{runtime_dir}", "-lptrain_runtime", f"-Wl,-rpath,{runtime_dir}", "-Wl,--no-undefined"],
            "compiling step.cpp")
    # The driver's fields of plan.json; the module's come from ptrain-translate --emit-plan-json (PLAN_FIELDS).
    driver = {"model": os.path.abspath(args.model), "target": args.target, "optimizer": args.optimizer,
              "lr": args.lr, "warmup_steps": args.warmup_steps, "total_steps": args.total_steps,
              "library": os.path.abspath(os.path.join(final_out, "libstep.so"))}
    if pipeline:
        driver.update({"min_lr_ratio": args.min_lr_ratio, "policy": args.policy,
                       "compress_options": args.compress_options.strip(), "cluster": cluster})
        if args.zero:  # absent: 0, so that the plans of plain data parallelism keep their bytes and fingerprints
            driver["zero"] = args.zero
        if args.vocab_parallel:
            driver["vocab_parallel"] = {"multiple": args.vocab_multiple or 1}
        if args.linear_ae is not None:
            driver["linear_ae"] = {"dim": args.linear_ae, "skip_stages": args.linear_ae_skip_stages or 0}
        if args.deterministic_dp:
            driver["deterministic_dp"] = True
    # The large constants libstep.so reads at init from beside itself (docs/CodegenCpu.md, "Constants"), either target.
    driver["constants_file"] = "step.consts.bin"
    if args.target == "cuda":
        driver["cuda_archs"] = [f"sm_{a}" for a in CUDA_ARCHS]
        if args.fuse_elementwise == "on":  # absent when off, so that unfused plans keep their bytes
            driver["generated_kernels"] = {"cuda": [f"sm_{a}" for a in CUDA_ARCHS]}
    else:
        if args.fuse_elementwise == "on":  # absent when off, so that unfused plans keep their bytes
            driver["generated_kernels"] = {"cpu": args.kernels_cpu}
    write_plan(out, lib, compose_plan(driver, module_plan(bin_dir, step, args.target)))


def add_memory_plan_to_report(report_path, memory_plan_path):
    """The report's `memory_plan`: per rank the planned peak (--ptrain-memory-plan, on the lowered step) beside
    the critical-path model's (the report's stages[s].memory.peak_bytes); printed as a table too."""
    with open(report_path) as f:
        report = json.load(f)
    with open(memory_plan_path) as f:
        ranks = json.load(f)["ranks"]
    analysed = {st["stage"]: st["memory"]["peak_bytes"] for st in report.get("stages", [])}
    print("memory per rank (MiB)   planned peak   analysed peak   states   stash (micro-batches)   temporaries")
    for r in ranks:
        r["analysed_peak_bytes"] = analysed.get(r["stage"])
        mib = 1 << 20
        a = r["analysed_peak_bytes"]
        print(f"  stage {r['stage']:<16}{r['peak_bytes'] / mib:>12.2f}{(a or 0) / mib:>16.2f}"
              f"{r['state_bytes'] / mib:>9.2f}{r['stash_bytes'] / mib:>9.2f} ({r['max_stashed']})"
              f"{r['temporaries_bytes'] / mib:>22.2f}")
    report["memory_plan"] = ranks
    with open(report_path, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


def write_phases(out):
    """out/phases.json and a table on stdout: each phase's wall time and its tool's peak RSS (issue 23, item 4)."""
    with open(os.path.join(out, "phases.json"), "w") as f:
        json.dump({"phases": PHASES}, f, indent=2)
        f.write("\n")
    print(f"{'ptrain-compile phases':<40}  wall s   peak RSS MiB")
    for p in PHASES:
        print(f"  {p['phase']:<38}{p['wall_s']:>8.2f}{p['peak_rss_bytes'] / (1 << 20):>15.1f}")


def write_plan(out, lib, plan):
    """out/plan.json, and the same facts embedded in libstep.so (plan_abi.py) for ptrain-run to check."""
    try:
        plan_abi.embed(lib, plan)
    except plan_abi.PlanError as e:
        raise CompileError(str(e))
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
