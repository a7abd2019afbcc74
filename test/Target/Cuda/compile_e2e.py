"""The CUDA target without a GPU (CTest `codegen-cuda-compile`, PTRAIN_ENABLE_CUDA only; docs/CodegenCuda.md).

1. ptrain-compile --target cuda of the bundled GPT (AdamW): step.cu is emitted and nvcc builds libstep.so for
   sm_80 and sm_90 (its fat binary names both), every shared library it needs resolves (ldd), it exports the
   entry points of the CPU target, and plan.json is the CPU plan's with "target": "cuda".
2. ptrain-run on that plan: without a usable GPU, exit 1 with the device error (cudaErrorInsufficientDriver
   without a driver, or no device), no traceback; with a GPU, the "not yet supported" error of the launcher
   (a single-rank step has no ptrain_step_train).
3. Multi-rank steps over NCCL: ptrain-compile --target cuda of a pp2 (1F1B, 2 micro-batches), a pp2 GPipe and
   a pp2 interleaved (2 virtual stages; both 4 micro-batches), a dp2 x tp2 plan, a dp2 ZeRO-1 plan (--zero 1:
   ncclReduceScatter of the gradient buckets and ncclAllGather of the updated shards under their op blocks,
   AdamW on the shard), and a tp2 plan with every
   option the CUDA target gained since (--vocab-parallel, --clip-norm 1, --optimizer sgd --momentum 0.9: the
   vocabulary-parallel kernels, the tp all-gather of the row maxima, the global-norm all-reduce, sum_squares /
   clip_scale and SGD on the device); nvcc builds each for sm_80 and sm_90; libstep.so exports the pipeline
   driver and the multi-rank entry points; step.cu names the NCCL calls (all-reduces, the split
   communicators) under the IR's locations, and in the pipelines every send and receive runs on its
   direction's channel (communicator split from the pp group, stream, events): the channel's stream waits on
   the compute stream's event at the start op, the transfer, its done event; each wait is the watchdog over
   that transfer, then the compute stream's wait on its event.
   A compressed pp2 plan (--policy optimus-cc: CB's PowerSGD with LEP on the cool-down backward send 1 -> 0)
   through nvcc: step.cu calls the CUDA PowerSGD encoder and decoder under the ptrain.compress /
   ptrain.decompress op blocks, sends and receives the codes P and Q on the 1 -> 0 channel, and holds the
   residual and the warm-start Q in the device state block and stage 1's state table (init and checkpoints).
   A data-parallel compressed plan (--dp 2 --pp 2 --policy optimus-cc, sc-all=true sc-rank=8: Optimus-CC's SC
   on every gradient, as codegen-cpu-compressed's "sc" plan) through nvcc: each ptrain.compressed_all_reduce_start
   block calls ptrain_nccl_compressed_all_reduce on the dp communicator with its ptrain_codec_t (PowerSGD rank 8
   on the matrices, the exact path on the 1-D gradients), one block per SC site of plan.json's codec states, and
   the stages' state tables hold every SC residual and warm-start Q.
   The optimus-cc pp2 plan also exports the codec telemetry (the CUDA metrics kernel after the encode), whose
   entry points run here without a device (ctypes: the site table, the mode's check, the metrics refused
   before init). Every pipeline destroys its streams at ptrain_step_finalize and gives each rank only its
   stage's states (kStage<s>StateBytes, each below the module's, equal to plan.json's cuda_state_bytes).
   A pp4 plan with --policy optimus-cc --ignore-index 32 --class-weights FILE through nvcc: the fused
   embedding sync is a sub-group all-reduce of stages {0, 3} (createGroup with the members, the split without a color on the
   others) on comm_grid_pp_pp_0_3 in exactly stage 0's and stage 3's optimizer steps; the last stage calls
   the weighted, summed CUDA cross-entropy kernels and the label-weight function (compare / select, gather,
   reduce; no CPU kernel).
4. The world size, without touching a GPU: ptrain-run --np 3 on the pp2 plan is the launcher's error naming
   the plan's 2 ranks; the generated ptrain_step_init under mpirun -np 1 refuses the world of 1 by itself
   (it checks MPI_COMM_WORLD before any device call); ptrain-run with the right world is the device error.
   Torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, no MPI): WORLD_SIZE=1 is the step's own
   error; two ranks meet in the runtime's TCP rendezvous, then stop at the device error.
5. ptrain-run's own torchrun-style launch (--launcher env, the default for CUDA plans; without a GPU, with its
   device probe off): both ranks of the pp2 plan start and stop at the device error, exit 1 within a minute,
   every rank's error named, no process left; --launcher mpirun the same under mpirun; ptrain-run started
   with torchrun's environment runs as that rank (two stop at the device error, WORLD_SIZE=1 is refused).
6. The LLaMA-style fixture (test/Import/ONNX/opset18+/Inputs/llama_tiny.onnx, --signature auto; one rank):
   nvcc builds its AdamW step for sm_80 and sm_90; step.cu calls the CUDA RMS norm, rotary embedding and
   select (the causal mask, an i1 constant in the device block of constants) under their ONNX node names, and
   no CPU kernel; the 16 x 16 mask is generated at set-up as uint8_t (ptrain_cuda_causal_mask, 1-byte elements,
   keep 1, masked 0; issue 23: never printed).
7. Mixed precision (--precision bf16 and fp16, docs/MixedPrecision.md): the pp2 plan's step.cu calls cuBLAS's
   16-bit GEMM (ptrain_cuda_gemm_bf16 / _f16: CUDA_R_16BF / CUDA_R_16F operands, fp32 compute) for every GEMM of
   both stages and no other GEMM, casts with the cast codec's kernels without a residual (PTRAIN_DTYPE_BF16 /
   _F16), and sends 16-bit pipeline
   messages (the send blocks carry half the fp32 plan's bytes); fp16 also calls its loss scaler's kernels
   (ptrain_cuda_loss_scale_f32, ptrain_cuda_grad_unscale_f32, one ptrain_cuda_grad_scaler_update_f32 per stage),
   bf16 none; nvcc builds it for sm_80 and sm_90 (with section 3's checks of every multi-rank plan). Codecs on
   16-bit traffic (docs/Compression.md): the bf16 pp2 plan with MCBench's 4-bit forward and top-k 25% backward
   codecs runs the f32 codec kernels behind the casts: its top-k values are rounded to bf16 and sent as 16,384
   bytes a send (32,768 in fp32), the bf16 message is widened before the quantization encoder; nvcc builds it.
   The tp 2 plans in bf16 and fp16, built by nvcc for sm_80 and sm_90 in section 3: every GEMM of the steps in 16 bits
   (the unsplit @forward, which no step calls, stays fp32), every tp all-reduce of 16-bit values over NCCL
   (PTRAIN_DTYPE_BF16 / _F16; fp16's one-element overflow count of the loss scaler in fp32), and the stage
   function takes the 16-bit parameter copies its step casts once (docs/MixedPrecision.md).
8. The generated kernels (--fuse-elementwise on, docs/GeneratedKernels.md "The CUDA route"): the tp2 step
   embeds PTX for sm_80 and sm_90, loads it at set-up and launches its bias + residual kernel; nvcc builds it
   for both architectures, plan.json names them, and ptxas assembles each image for its architecture, with no
   fma.rn in either.
(What --target cuda refuses, an ignore_index outside int32, is a lit test:
test/Target/Cuda/ptrain-compile-cuda-errors.test.)

Usage: compile_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

ENTRY_POINTS = ("ptrain_step_init", "ptrain_step_save", "ptrain_step_load", "ptrain_step_train_step",
                "ptrain_step_forward", "ptrain_step_states", "ptrain_step_num_states", "ptrain_step_last_error")


def fatbin_archs(lib, scratch_file):
    """The GPU architectures of the ELF images in lib's .nv_fatbin section (there is no cuobjdump here): a
    sequence of fat binaries, each a header (magic 0xBA55ED50, version, header size, payload size) and entries
    (kind 2 = ELF, header size, payload size, ..., the SM version at byte 28 of the entry)."""
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", lib, scratch_file], check=True)
    data = open(scratch_file, "rb").read()
    archs, offset = set(), 0
    while offset + 16 <= len(data):
        magic, _, header, size = struct.unpack_from("<IHHQ", data, offset)
        if magic != 0xBA55ED50:
            break
        entry = offset + header
        while entry < offset + header + size:
            kind, _, entry_header, entry_size = struct.unpack_from("<HHIQ", data, entry)
            if kind == 2:
                archs.add(f"sm_{struct.unpack_from('<I', data, entry + 28)[0]}")
            entry += entry_header + entry_size
        offset += header + size
        offset = (offset + 7) // 8 * 8
    return sorted(archs)


BUILD = None  # the build folder (main's first argument)


def inline_step_text(out):
    """step.cu as ptrain-compile wrote it into `out`, but with every op inline (ptrain-translate --emit-cuda
    --emit-cuda-outline=false on out/step.mlir): the text checks look for each op's block under its ONNX node
    name, while nvcc built the outlined step.cu (identical layers written once, BlockOutliner.h)."""
    path = out.rstrip("/") + ".inline.cu"
    subprocess.run([os.path.join(BUILD, "bin", "ptrain-translate"), "--emit-cuda", "--emit-cuda-outline=false",
                    os.path.join(out, "step.mlir"), "-o", path, f"--emit-cuda-constants={path}.consts.bin"], check=True)
    return open(path).read()


def compile_cmd(build, source, out, *extra):
    return [os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models/gpt/gpt.onnx"),
            "-o", out, *extra]


MULTIRANK_ENTRY_POINTS = ("ptrain_step_init", "ptrain_step_train", "ptrain_step_eval", "ptrain_step_rank",
                          "ptrain_step_finalize", "ptrain_step_abort", "ptrain_step_save", "ptrain_step_load",
                          "ptrain_step_cuda_devices", "ptrain_step_last_error", "ptrain_step_traffic",
                          "ptrain_step_reset_traffic", "ptrain_step_num_links", "ptrain_step_link_name")

# What each multi-rank step.cu must call: the NCCL world over MPI, its groups, and the plan's communication.
MULTIRANK_CALLS = {
    "pp2": ("ptrain_nccl_comm_init(ptrain_world, &nccl_world)", "ptrain_nccl_comm_split(",
            "ptrain_nccl_wait(comm_grid_pp)", "ptrain_nccl_all_reduce(comm_grid_pp, ", "device_forward_stage0(",
            "case 1:\n    return ptrain_step_stage1_train_step(tokens, out_loss);"),
    # ZeRO-1 (--zero 1): the gradients' buckets reduce-scattered and the updated shards all-gathered over NCCL
    # on the dp communicator (issue 23; docs/DistributedOptimizer.md), AdamW on the rank's shard.
    "dp2zero": ("ptrain_nccl_reduce_scatter(comm_grid_dp, ", "ptrain_nccl_all_gather(comm_grid_dp, ",
                "ptrain_nccl_wait(comm_grid_dp)", "PTRAIN_REDUCE_AVG", "ptrain_cuda_adamw_step_f32("),
    "dp2tp2": ("ptrain_nccl_comm_init(ptrain_world, &nccl_world)", "ptrain_nccl_all_reduce(comm_grid_dp, ",
               "ptrain_nccl_all_reduce(comm_grid_tp, ", "ptrain_nccl_wait(comm_grid_dp)", "initStates(path)",
               "PTRAIN_REDUCE_AVG"),
    "tp2vocab": ("ptrain_cuda_vocab_parallel_embedding_fwd_f32(", "ptrain_cuda_vocab_parallel_embedding_bwd_f32(",
                 "ptrain_cuda_vocab_parallel_ce_parts_fwd_f32(", "ptrain_cuda_vocab_parallel_ce_parts_bwd_f32(",
                 "gridCoordinate(ptrain_rank, ", "ptrain_nccl_all_gather(comm_grid_tp, ", "ptrain_cuda_reduce_f32(2, ",
                 "ptrain_cuda_broadcast_to(", "ptrain_cuda_sum_squares_f32(", "ptrain_cuda_clip_scale_f32(",
                 "ptrain_cuda_sgd_step_f32(", "ptrain_nccl_all_reduce(comm_grid_tp, "),
    # CB on link 1 -> 0: P (4*64 x 16) and Q (128 x 16) sent instead of the 4 x 64 x 128 gradient.
    "pp2occ": ("ptrain_nccl_send(comm_pp_1_to_0, ", "ptrain_nccl_recv(comm_pp_1_to_0, ",
               "ptrain_cuda_powersgd_encode_f32(", ", 1, 256, 128, 16, 0, ", "ptrain_cuda_powersgd_decode_f32(",
               ", 16384, 0));", ", 8192, 0));",
               # Codec telemetry: the CPU target's site table, measured by the CUDA kernel.
               'kCodecSiteNames[kNumCodecSites] = {"pp1->0"};', "ptrain_cuda_codec_metrics_f32(g, residual, ",
               "PTRAIN_STEP_CALL(recordCodecSite(0, "),
}
# The bf16 pp2 plan (section 7): the pp2 plan's calls, its GEMMs in bf16 on cuBLAS.
MULTIRANK_CALLS["pp2bf16"] = MULTIRANK_CALLS["pp2"] + ("ptrain_cuda_gemm_bf16(",)
MULTIRANK_CALLS["pp2fp16"] = MULTIRANK_CALLS["pp2"] + ("ptrain_cuda_gemm_f16(",)
# The bf16 pp2 plan with MCBench's codecs on its 16-bit messages (section 7): the f32 codec kernels behind the casts.
MULTIRANK_CALLS["pp2bf16mcb"] = MULTIRANK_CALLS["pp2bf16"] + ("ptrain_cuda_quant_encode_f32(", "ptrain_cuda_topk_encode_f32(",
                                                              "ptrain_cuda_topk_decode_f32(")
# The tp 2 plans in 16 bits (section 7): the tp all-reduces of 16-bit values over NCCL, the GEMMs on cuBLAS.
MULTIRANK_CALLS["tp2bf16"] = ("ptrain_nccl_comm_init(ptrain_world, &nccl_world)", "ptrain_nccl_all_reduce(comm_grid_tp, ",
                              "PTRAIN_DTYPE_BF16, PTRAIN_REDUCE_SUM", "ptrain_cuda_gemm_bf16(")
MULTIRANK_CALLS["tp2fp16"] = ("ptrain_nccl_comm_init(ptrain_world, &nccl_world)", "ptrain_nccl_all_reduce(comm_grid_tp, ",
                              "PTRAIN_DTYPE_F16, PTRAIN_REDUCE_SUM", "ptrain_cuda_gemm_f16(")
TELEMETRY_ENTRY_POINTS = ("ptrain_step_num_codec_sites", "ptrain_step_codec_site_name", "ptrain_step_set_telemetry",
                          "ptrain_step_codec_telemetry")

# The codec calls of the compressed plan, each under the block of its op.
CODEC_OPS = {"ptrain.compress": "ptrain_cuda_powersgd_encode_f32", "ptrain.decompress": "ptrain_cuda_powersgd_decode_f32"}


def state_keys(text):
    """The state table's keys in kStates order and each stage's keys, expanded from the templates, runs and index
    ranges as the generated code expands them when loaded (include/ptrain/Target/Common/StateTable.h)."""
    body = re.search(r"kStateTemplates\[\d+\] = \{(.*?)\n\};", text, re.S)
    templates = re.findall(r'\{"((?:[^"\\]|\\.)*)", "((?:[^"\\]|\\.)*)", (true|false),', body.group(1) if body else "")

    def ints(values):
        return [int(v) for v in values.replace("\n", " ").split(",") if v.strip()]

    runs = re.search(r"kStateRuns\[\d+\] = \{([^}]*)\}", text)
    runs = ints(runs.group(1)) if runs else []
    keys = []
    for r in range(0, len(runs), 5):
        first, period, count, number0, step = runs[r:r + 5]
        for c in range(count):
            for p in range(period):
                prefix, suffix, numbered = templates[first + p]
                keys.append(prefix + (str(number0 + c * step) + suffix if numbered == "true" else ""))
    stages = {}
    for stage, ranges in re.findall(r"kStage(\d+)StateIndicesRanges\[\d+\] = \{([^}]*)\}", text):
        v = ints(ranges)
        stages[int(stage)] = [keys[start + j] for start, length in zip(v[::2], v[1::2]) for j in range(length)]
    return keys, stages


def check_codecs(name, text):
    """The codec ops' blocks: location, op name, then (after the state copies) the CUDA codec call; the states
    of stage 1 (the sender) name the residual and the warm-start Q."""
    failures = []
    for op, call in CODEC_OPS.items():
        found = re.findall(r'\n  // ("[^"\n]+"[^\n]*)\n  // ' + re.escape(op) + r'\n(?:  [^\n]*\n)*?    PTRAIN_STEP_CALL\('
                           + call + r'\(', text)
        print(f"{name}: {op} blocks calling {call}: {len(found)}, e.g. {found[0] if found else None}")
        if not found:
            failures.append(f"{name}: no {op} block calling {call}")
    stage1 = state_keys(text)[1].get(1, [])
    if "pp1->0/residual" not in stage1 or "pp1->0/warm_start_q" not in stage1:
        failures.append(f"{name}: stage 1's state table lacks the residual or the warm-start Q")
    return failures


# The SC plan: the NCCL world, the compressed all-reduces over dp and their watchdog.
MULTIRANK_CALLS["dp2pp2sc"] = ("ptrain_nccl_comm_init(ptrain_world, &nccl_world)",
                               "ptrain_nccl_compressed_all_reduce(comm_grid_dp, &codec, ",
                               "ptrain_nccl_wait(comm_grid_dp)",
                               "{PTRAIN_CODEC_POWERSGD, 0, 0, 0, 1, PTRAIN_DTYPE_F32, 1, 128, 512, 8, 0, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32}",
                               "{PTRAIN_CODEC_POWERSGD, 0, 0, 0, 1, PTRAIN_DTYPE_F32, 1, 1, 128, 1, 0, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32}")


def check_selective_compression(name, text, plan):
    """One ptrain_nccl_compressed_all_reduce block per SC site (a parameter's gradient with its residual and
    warm-start Q in plan.json), each under its op's location, and every SC state in a stage's state table."""
    failures = []
    blocks = re.findall(r'\n  // ("[^"\n]+")[^\n]*\n  // ptrain\.compressed_all_reduce_start\n(?:  [^\n]*\n)*?'
                        r'    static const ptrain_codec_t codec = \{PTRAIN_CODEC_POWERSGD, [^\n]*\n'
                        r'(?:    PTRAIN_STEP_CALL\(ptrain_cuda_copy_bytes\([^\n]*\n){2}'
                        r'    PTRAIN_STEP_CALL\(ptrain_nccl_compressed_all_reduce\(comm_grid_dp, &codec, ', text)
    keys = {s["key"] for s in plan.get("codec_states", []) if s["key"].startswith("sc/")}
    sites = {k[len("sc/"):-len("/grad/residual")] for k in keys if k.endswith("/grad/residual")}
    print(f"{name}: {len(blocks)} compressed all-reduce blocks over dp, {len(sites)} SC sites in plan.json, "
          f"e.g. {blocks[0] if blocks else None}")
    if not sites or len(blocks) != len(sites) or keys != {f"sc/{s}/grad/{k}" for s in sites
                                                          for k in ("residual", "warm_start_q")}:
        failures.append(f"{name}: {len(blocks)} compressed all-reduce blocks for {len(sites)} SC sites "
                        f"({len(keys)} SC codec states)")
    tables = {k for stage in state_keys(text)[1].values() for k in stage}
    missing = sorted(k for k in keys if k not in tables)
    if missing:
        failures.append(f"{name}: SC states missing from the stages' state tables: {missing[:3]}")
    if "ptrain_compressed_all_reduce_start" in text:
        failures.append(f"{name}: step.cu calls the CPU runtime's compressed all-reduce")
    return failures


# Every pipeline plan: the two directions' channels, split from the pp group, with their streams.
PIPELINE_CALLS = (
    "ptrain_nccl_comm_split(comm_grid_pp, ptrain_stage == 0 || ptrain_stage == 1 ? 0 : -1, ptrain_stage, "
    "&comm_pp_0_to_1)",
    "ptrain_nccl_comm_split(comm_grid_pp, ptrain_stage == 1 || ptrain_stage == 0 ? 0 : -1, ptrain_stage, "
    "&comm_pp_1_to_0)",
    "ptrain_cuda_stream_create(&stream_pp_0_to_1)", "ptrain_cuda_stream_create(&stream_pp_1_to_0)",
    "ptrain_cuda_event_create(&ev_done[k])", "if (!channels_connected) {",
    # ptrain_step_finalize destroys the channels' streams and the compute stream.
    "ptrain_cuda_stream_destroy(stream_pp_0_to_1)", "ptrain_cuda_stream_destroy(stream_pp_1_to_0)",
    "ptrain_cuda_stream_destroy(stream));",
    # A rank's d_states holds its stage's states only.
    "ptrain_cuda_malloc(active_state_bytes, &p)", "active_state_bytes = kStage1StateBytes;")
for plan in ("gpipe", "interleaved"):
    MULTIRANK_CALLS[plan] = MULTIRANK_CALLS["pp2"] + PIPELINE_CALLS
for plan in ("pp2", "pp2occ", "dp2pp2sc", "pp2bf16", "pp2fp16", "pp2bf16mcb"):
    MULTIRANK_CALLS[plan] = MULTIRANK_CALLS[plan] + PIPELINE_CALLS

# A send or receive's block: the compute stream's event at the start op, the channel's stream waits on it,
# the transfer on that stream, its done event there, back to the compute stream.
TRANSFER = re.compile(
    r'\n  // ("[^"\n]+")[^\n]*\n  // ptrain\.(send|recv)_start\n(?:  [a-z0-9_]+ \*v\d+ = [^\n]*\n)?  \{\n'
    r'    PTRAIN_STEP_CALL\(ptrain_cuda_event_record\(ev_posted\[(\d+)\], stream\)\);\n'
    r'    PTRAIN_STEP_CALL\(ptrain_cuda_stream_wait_event\((stream_pp_\d+_to_\d+), ev_posted\[\3\]\)\);\n'
    r'    PTRAIN_STEP_CALL\(ptrain_cuda_set_stream\(\4\)\);\n'
    r'    PTRAIN_STEP_CALL\(ptrain_nccl_\2\((comm_pp_\d+_to_\d+), v\d+, \d+, [01]\)\);\n'
    r'    PTRAIN_STEP_CALL\(ptrain_cuda_event_record\(ev_done\[\3\], \4\)\);\n'
    r'    PTRAIN_STEP_CALL\(ptrain_cuda_set_stream\(stream\)\);\n  \}\n')
# Its wait: the watchdog over that transfer (named with its location), then the compute stream's wait.
TRANSFER_WAIT = re.compile(
    r'    PTRAIN_STEP_CALL\(ptrain_nccl_wait_event\((comm_pp_\d+_to_\d+), ev_done\[(\d+)\], "the (?:send|receive) '
    r'of \d+ bytes \(tag \d+\) (?:to|from) stage \d at \\"([^"\\]+)\\""\)\);\n'
    r'    PTRAIN_STEP_CALL\(ptrain_cuda_stream_wait_event\(stream, ev_done\[\2\]\)\);\n')


def check_channels(name, text):
    """The pipeline's sends and receives on their channels' streams, ordered by events (see TRANSFER)."""
    failures = []
    starts = len(re.findall(r'\n  // ptrain\.(?:send|recv)_start\n', text))
    transfers = TRANSFER.findall(text)
    waits = {(comm, k): where for comm, k, where in TRANSFER_WAIT.findall(text)}
    channels = sorted({comm for _, _, _, _, comm in transfers})
    print(f"{name}: {starts} sends and receives, {len(transfers)} on their channel's stream after the compute "
          f"stream's event, {len(waits)} waits on their transfer's event; channels {channels}; e.g. "
          f"{transfers[0][0] if transfers else None} on {transfers[0][4] if transfers else None}")
    if starts == 0 or len(transfers) != starts:
        failures.append(f"{name}: {len(transfers)} of {starts} sends and receives follow the channel pattern")
    if channels != ["comm_pp_0_to_1", "comm_pp_1_to_0"]:
        failures.append(f"{name}: channels {channels}, expected one per direction")
    for where, kind, k, stream, comm in transfers:
        if stream != comm.replace("comm_", "stream_"):
            failures.append(f"{name}: {where} posts on {comm} but on the stream {stream}")
        if (comm, k) not in waits:
            failures.append(f"{name}: {where}'s transfer (ev_done[{k}] on {comm}) has no wait")
        elif waits[(comm, k)] != where.strip('"'):
            failures.append(f"{name}: the wait of ev_done[{k}] names {waits[(comm, k)]}, not {where}")
    step = text[:text.index("extern \"C\"")]
    if "ptrain_nccl_group_start" in step:
        failures.append(f"{name}: an NCCL group in the device functions (each transfer is posted alone)")
    return failures


def ptrain_run(build, what, *args):
    """ptrain-run with `args`: its result and its output, printed."""
    run = subprocess.run([os.path.join(build, "bin", "ptrain-run"), *args], capture_output=True, text=True)
    message = (run.stdout + run.stderr).strip()
    print(f"ptrain-run {what}: exit {run.returncode}: {message}")
    return run, message


def gpu_count(build):
    """The CUDA devices the runtime sees (0 without a driver)."""
    import ctypes
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/cuda/libptrain_runtime_cuda.so"))
    count = ctypes.c_int32(0)
    return count.value if rt.ptrain_cuda_device_count(ctypes.byref(count)) == 0 else 0


def check_multirank(name, out, scratch):
    failures = []
    lib = os.path.join(out, "libstep.so")
    archs = fatbin_archs(lib, os.path.join(scratch, f"fatbin-{name}.bin"))
    print(f"{name}: fat binary of libstep.so: ELF images for {archs}")
    if not {"sm_80", "sm_90"} <= set(archs):
        failures.append(f"{name}: libstep.so's fat binary has images for {archs}, not sm_80 and sm_90")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    for entry in MULTIRANK_ENTRY_POINTS + (TELEMETRY_ENTRY_POINTS if name == "pp2occ" else ()):
        if f" {entry}\n" not in symbols + "\n":
            failures.append(f"{name}: libstep.so does not export {entry}")
    text = inline_step_text(out)
    for call in MULTIRANK_CALLS[name]:
        if call not in text:
            failures.append(f"{name}: step.cu has no {call!r}")
    # Every communication op's block is headed by its IR location and op name, then its NCCL call.
    located = re.findall(r'\n  // ("[^"\n]+"[^\n]*)\n  // (ptrain\.(?:send_start|recv_start|all_reduce_start|tp_all_reduce|'
                         r'tp_all_gather|reduce_scatter_start|all_gather_start))\n'
                         r'(?:  [^\n]*\n)*?    PTRAIN_STEP_CALL\((ptrain_nccl_[a-z_]+)\(', text)
    print(f"{name}: {text.count('PTRAIN_STEP_CALL(ptrain_nccl_')} NCCL calls in step.cu, {len(located)} communication "
          f"ops under their location, e.g. {located[0] if located else None}")
    ops = {op for _, op, _ in located}
    pipeline = name in ("pp2", "gpipe", "interleaved", "pp2occ", "dp2pp2sc", "pp2bf16", "pp2fp16", "pp2bf16mcb")
    want = {"ptrain.send_start", "ptrain.recv_start", "ptrain.all_reduce_start"} if pipeline else \
        {"dp2zero": {"ptrain.reduce_scatter_start", "ptrain.all_gather_start"},
         "tp2bf16": {"ptrain.tp_all_reduce"}, "tp2fp16": {"ptrain.tp_all_reduce"},
         "dp2tp2": {"ptrain.all_reduce_start", "ptrain.tp_all_reduce"},
         "tp2vocab": {"ptrain.all_reduce_start", "ptrain.tp_all_reduce", "ptrain.tp_all_gather"}}[name]
    if pipeline:
        failures += check_channels(name, text)
    if not want <= ops:
        failures.append(f"{name}: no NCCL call under the location of {sorted(want - ops)}")
    if name == "pp2occ":
        failures += check_codecs(name, text)
        failures += check_telemetry_entry_points(name, lib)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    if pipeline:
        failures += check_stage_state_bytes(name, text, plan)
    if plan.get("target") != "cuda" or plan.get("cuda_archs") != ["sm_80", "sm_90"]:
        failures.append(f"{name}: plan.json target {plan.get('target')}, archs {plan.get('cuda_archs')}")
    if name == "dp2pp2sc":
        failures += check_selective_compression(name, text, plan)
    if name == "pp2occ" and (plan.get("policy") != "optimus-cc" or
                             {s["key"] for s in plan.get("codec_states", [])} != {"pp1->0/residual",
                                                                                   "pp1->0/warm_start_q"}):
        failures.append(f"{name}: plan.json policy {plan.get('policy')}, codec states {plan.get('codec_states')}")
    return failures


# The telemetry entry points that need no device (ptrain-run calls them before and between steps): the site
# table, the mode's argument check, and the metrics refused before ptrain_step_init.
TELEMETRY_PROBE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.ptrain_step_last_error.restype = ctypes.c_char_p
lib.ptrain_step_num_codec_sites.restype = ctypes.c_int64
lib.ptrain_step_codec_site_name.restype = ctypes.c_char_p
lib.ptrain_step_codec_site_name.argtypes = [ctypes.c_int64]
lib.ptrain_step_set_telemetry.argtypes = [ctypes.c_int32]
n = lib.ptrain_step_num_codec_sites()
print("sites", n, [lib.ptrain_step_codec_site_name(i).decode() for i in range(n)], lib.ptrain_step_codec_site_name(n))
print("mode 3", lib.ptrain_step_set_telemetry(3), lib.ptrain_step_last_error().decode())
print("mode 2", lib.ptrain_step_set_telemetry(2), "mode 0", lib.ptrain_step_set_telemetry(0))
out = (ctypes.c_double * (6 * n * 2))()
print("before init", lib.ptrain_step_codec_telemetry(out), lib.ptrain_step_last_error().decode())
"""


def check_telemetry_entry_points(name, lib):
    probe = subprocess.run([sys.executable, "-c", TELEMETRY_PROBE, lib], capture_output=True, text=True, timeout=120)
    print(f"{name}: telemetry entry points without a device:\n  " + probe.stdout.strip().replace("\n", "\n  "))
    want = ["sites 1 ['pp1->0'] None",
            "mode 3 1 ptrain_step_set_telemetry: mode 3 is not 0 (off), 1 (capture) or 2 (measure)",
            "mode 2 0 mode 0 0", "before init 1 ptrain_step_codec_telemetry: call ptrain_step_init first"]
    if probe.returncode != 0 or probe.stdout.strip().splitlines() != want:
        return [f"{name}: the telemetry probe printed {probe.stdout!r} (exit {probe.returncode}, {probe.stderr!r}), "
                f"expected {want}"]
    return []


def check_stage_state_bytes(name, text, plan):
    """Each rank's d_states holds its stage's states (kStage<s>StateBytes), reported in plan.json; every stage's
    block is smaller than the module's, and together they hold at least every state once."""
    stages = [int(b) for b in re.findall(r"constexpr int64_t kStage\d+StateBytes = (\d+);", text)]
    module = int(re.search(r"constexpr int64_t kStateBytes = (\d+);", text).group(1))
    reported = plan.get("cuda_state_bytes", {})
    print(f"{name}: device states per rank {stages} bytes (the module's {module}); plan.json {reported}")
    if reported != {"per_stage": stages, "module": module} or len(stages) != plan.get("pp"):
        return [f"{name}: plan.json cuda_state_bytes {reported}, step.cu {stages} / {module}"]
    if not all(b < module for b in stages) or sum(stages) < module:
        return [f"{name}: stage blocks {stages} do not split the module's {module} bytes"]
    return []


def check_fused_sync_and_loss_options(build, source, scratch):
    """pp4 --policy optimus-cc --ignore-index 32 --class-weights through nvcc: Optimus-CC's fused embedding sync
    as a sub-group all-reduce of stages {0, 3} on its own NCCL communicator (split with no color on stages 1 and
    2), and the weighted, summed cross-entropy kernels normalized by the label-weight function (its ignored
    labels masked by the CUDA compare / select)."""
    failures = []
    out = os.path.join(scratch, "pp4fe")
    weights = os.path.join(scratch, "class-weights.txt")
    with open(weights, "w") as f:
        f.write(" ".join(repr(0.5 + 0.25 * (c % 5)) for c in range(256)) + "\n")
    options = ["--pp", "4", "--micro-batches", "4", "--policy", "optimus-cc", "--ignore-index", "32",
               "--class-weights", weights]
    start = time.time()
    subprocess.run(compile_cmd(build, source, out, "--target", "cuda", "--lr", "1e-3", *options), check=True)
    print(f"ptrain-compile --target cuda {' '.join(options[:-1])} FILE: {time.time() - start:.1f} s")
    lib = os.path.join(out, "libstep.so")
    archs = fatbin_archs(lib, os.path.join(scratch, "fatbin-pp4fe.bin"))
    if not {"sm_80", "sm_90"} <= set(archs):
        failures.append(f"pp4fe: libstep.so's fat binary has images for {archs}, not sm_80 and sm_90")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    failures += [f"pp4fe: libstep.so does not export {e}" for e in MULTIRANK_ENTRY_POINTS
                 if f" {e}\n" not in symbols + "\n"]
    # The 256 class weights: read at set-up from step.consts.bin beside libstep.so (issue 23), not printed.
    consts = os.path.join(out, "step.consts.bin")
    step_cu = open(os.path.join(out, "step.cu")).read()
    if os.path.getsize(consts) != 1024 or "[256] = {" in step_cu or \
            'ptrain_read_beside(step_error, "step.consts.bin", 0, 1024, bytes.data())' not in step_cu:
        failures.append(f"pp4fe: the class weights are not read from step.consts.bin ({os.path.getsize(consts)} "
                        "bytes) at set-up, or step.cu prints them")
    text = inline_step_text(out)
    for call in ("static const int64_t members[] = {0, 3};\n      PTRAIN_STEP_CALL(createGroup(in_group, "
                 "&comm_grid_pp_pp_0_3, 0, members, 2));",
                 "ptrain_nccl_comm_split(nccl_world, member ? color : -1, ptrain_rank, out)",
                 "ptrain_nccl_wait(comm_grid_pp_pp_0_3)", "ptrain_status_t device_stage3_loss_weight(",
                 "ptrain_cuda_gather_axis(", "ptrain_cuda_compare_i64(", "ptrain_cuda_select(", ", 256, 1, 32, 1, v"):
        if call not in text:
            failures.append(f"pp4fe: step.cu has no {call!r}")
    # The sub-group all-reduce under its op block, only in the first and last stages' optimizer steps.
    functions = re.findall(r"\nptrain_status_t device_(\w+)\([^)]*\) \{\n(.*?)\n\}\n", text, re.S)
    syncing = sorted(name for name, body in functions if re.search(
        r"\n  // ptrain\.all_reduce_start\n(?:  [^\n]*\n)*?    PTRAIN_STEP_CALL\(ptrain_nccl_all_reduce\("
        r"comm_grid_pp_pp_0_3, ", body))
    print(f"pp4fe: the fused embedding sync on comm_grid_pp_pp_0_3 in {syncing}; "
          f"{text.count('ptrain_cuda_cross_entropy_weighted_fwd_f32(')} weighted cross-entropy forwards, "
          f"{text.count('ptrain_cuda_cross_entropy_weighted_bwd_f32(')} backwards")
    if syncing != ["stage0_optimizer_step", "stage3_optimizer_step"]:
        failures.append(f"pp4fe: the sub-group all-reduce is in {syncing}, not stages 0 and 3's optimizer steps")
    if text.count("ptrain_cuda_cross_entropy_weighted_bwd_f32(") < 1 or "ptrain_cross_entropy_" in text:
        failures.append("pp4fe: no weighted CUDA cross-entropy backward, or a CPU cross-entropy call")
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    if plan.get("target") != "cuda" or plan.get("pp") != 4 or plan.get("policy") != "optimus-cc":
        failures.append(f"pp4fe: plan.json target {plan.get('target')}, pp {plan.get('pp')}, "
                        f"policy {plan.get('policy')}")
    return failures


# Calls ptrain_step_init of a multi-rank CUDA step in a world of 1 (mpirun -np 1): the step's own world check.
WORLD_PROBE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.ptrain_step_last_error.restype = ctypes.c_char_p
lib.ptrain_step_init.argtypes = [ctypes.c_char_p]
status = lib.ptrain_step_init(None)
print(f"status {status}: {lib.ptrain_step_last_error().decode()}", flush=True)
"""


def check_world_size_in_step(lib):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run = subprocess.run(["mpirun", "-np", "1", "--oversubscribe", sys.executable, "-c", WORLD_PROBE, lib],
                         capture_output=True, text=True, env=env, timeout=300)
    message = (run.stdout + run.stderr).strip()
    print(f"ptrain_step_init of the pp2 CUDA step under mpirun -np 1: {message.splitlines()[-1] if message else ''}")
    expected = "the step was compiled for 2 ranks (grid @grid) but MPI_COMM_WORLD has 1"
    if expected not in message or "status 1:" not in message:
        return [f"ptrain_step_init under mpirun -np 1: expected INVALID_ARGUMENT (1) with '{expected}'"]
    return []


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_torchrun(lib, devices):
    """A torchrun-style launch (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK; no mpirun): a world of 1
    for the 2-rank plan is the step's own error before any device call; with the right world, the two ranks
    meet in the runtime's TCP rendezvous and then stop at the device check (without a GPU)."""
    failures = []
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}

    def launch(world):
        port = str(free_port())
        procs = [subprocess.Popen([sys.executable, "-c", WORLD_PROBE, lib], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  env=dict(base, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
                                           MASTER_ADDR="127.0.0.1", MASTER_PORT=port, PTRAIN_COMM_TIMEOUT_S="60"))
                 for r in range(world)]
        return [p.communicate(timeout=120)[0].strip() for p in procs]

    (alone,) = launch(1)
    print(f"ptrain_step_init of the pp2 CUDA step, torchrun-style with WORLD_SIZE=1: {alone.splitlines()[-1]}")
    expected = "compiled for 2 ranks (grid @grid) but WORLD_SIZE is 1; launch it with torchrun --nproc-per-node 2"
    if expected not in alone or "status 1:" not in alone:
        failures.append(f"torchrun-style WORLD_SIZE=1: expected INVALID_ARGUMENT (1) with '{expected}'")
    if devices == 0:
        both = launch(2)
        for rank, out in enumerate(both):
            print(f"ptrain_step_init, torchrun-style rank {rank} of 2: {out.splitlines()[-1]}")
            if "status 7:" not in out or "cudaGetDeviceCount" not in out:
                failures.append(f"torchrun-style rank {rank} of 2: expected the device error (7) after the "
                                "rendezvous, got: " + out)
    return failures


def processes_naming(text):
    """The pids of running processes whose command line contains text (a rank left behind)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                zombie = f.read().split(")")[-1].split()[0] == "Z"
        except OSError:
            continue
        if text in cmdline and not zombie and int(pid) != os.getpid():
            pids.append(int(pid))
    return pids


def check_env_launcher(build, pp2, data):
    """ptrain-run's own torchrun-style launch of the pp2 plan (the default for CUDA plans), without a GPU: with
    the launcher's device probe off (PTRAIN_RUN_DEVICE_PROBE=0) both ranks start, meet in the rendezvous and
    stop at the device error: exit 1 within a minute, each rank's error streamed with its prefix and named in
    the summary, no rank left running. --launcher mpirun still runs the ranks under mpirun (the same device
    error, MPI_Abort). Started by torchrun (RANK/WORLD_SIZE set), ptrain-run is that one rank: two of them
    stop at the device error without launching anything; WORLD_SIZE=1 is the launcher's world error."""
    failures = []
    env = dict(os.environ, PTRAIN_RUN_DEVICE_PROBE="0", PTRAIN_COMM_TIMEOUT_S="60")
    cmd = [os.path.join(build, "bin", "ptrain-run"), pp2, "--data", data, "--data-format", "bytes", "--steps", "1",
           "--no-plots"]
    device_error = "ptrain-run: error: ptrain_step_init failed (status 7): ptrain_cuda_device_count: cudaGetDeviceCount"
    for launcher in ("env", "mpirun"):
        start = time.time()
        run = subprocess.run(cmd + ["--launcher", launcher], capture_output=True, text=True, env=env, timeout=300)
        took, message = time.time() - start, (run.stdout + run.stderr).strip()
        left = processes_naming(pp2)
        print(f"ptrain-run --launcher {launcher} on the pp2 CUDA plan without a GPU: exit {run.returncode} in "
              f"{took:.1f} s, processes left {left}:\n  " + "\n  ".join(message.splitlines()))
        if run.returncode != 1 or "Traceback" in message or took > 60:
            failures.append(f"--launcher {launcher}: exit {run.returncode} in {took:.1f} s, expected 1 within 60 s "
                            "without a traceback")
        if left:
            failures.append(f"--launcher {launcher}: processes {left} still run the plan after ptrain-run ended")
        for rank in range(2):
            if launcher == "env":
                want = (f"[rank {rank}] {device_error}", f"ptrain-run: rank {rank} failed (exit status 1): "
                        f"{device_error}")
            else:
                want = (device_error,)
            for line in want:
                if line not in message:
                    failures.append(f"--launcher {launcher}: rank {rank}: no {line!r}")
        if launcher == "mpirun" and "ends the job with MPI_Abort" not in message:
            failures.append("--launcher mpirun: no rank ended the job with MPI_Abort")

    # Under torchrun: this process is the rank.
    base = {k: v for k, v in env.items() if not k.startswith(("OMPI_", "PMIX_"))}
    port = str(free_port())
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(base, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port)) for r in range(2)]
    for rank, proc in enumerate(procs):
        out = proc.communicate(timeout=120)[0].strip()
        print(f"ptrain-run under torchrun's environment, rank {rank} of 2: exit {proc.returncode}: {out}")
        if proc.returncode != 1 or device_error not in out or "[rank" in out or "Traceback" in out:
            failures.append(f"ptrain-run as torchrun's rank {rank}: expected exit 1 with the device error and "
                            f"no launched ranks, got {proc.returncode}: {out}")
    alone = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           env=dict(base, RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
    print(f"ptrain-run under torchrun's environment with WORLD_SIZE=1: exit {alone.returncode}: "
          f"{alone.stderr.strip()}")
    want = "WORLD_SIZE=1 (torchrun's environment): the step in"
    if alone.returncode != 1 or want not in alone.stderr or "torchrun --nproc-per-node 2" not in alone.stderr:
        failures.append(f"ptrain-run with WORLD_SIZE=1: expected exit 1 with {want!r} and --nproc-per-node 2")
    return failures


def check_llama(build, source, scratch):
    """Section 6: the LLaMA-style fixture's step through nvcc."""
    failures = []
    model = os.path.join(source, "test", "Import", "ONNX", "opset18+", "Inputs", "llama_tiny.onnx")
    out = os.path.join(scratch, "llama")
    start = time.time()
    subprocess.run([os.path.join(build, "bin", "ptrain-compile"), model, "--target", "cuda", "-o", out,
                    "--import-options", "--signature auto"], check=True)
    print(f"ptrain-compile --target cuda of llama_tiny.onnx: {time.time() - start:.1f} s")
    lib = os.path.join(out, "libstep.so")
    archs = fatbin_archs(lib, os.path.join(scratch, "fatbin-llama.bin"))
    print(f"llama: fat binary of libstep.so: ELF images for {archs}")
    if not {"sm_80", "sm_90"} <= set(archs):
        failures.append(f"llama: libstep.so's fat binary has images for {archs}, not sm_80 and sm_90")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    failures += [f"llama: libstep.so does not export {e}" for e in ENTRY_POINTS if f" {e}\n" not in symbols + "\n"]
    text = inline_step_text(out)
    # Each op's block: its ONNX node name, the op, then (after the result pointers) its CUDA call.
    calls = {}
    for loc, op, call in re.findall(r'\n  // ("[^"\n]+")[^\n]*\n  // (ptrain\.(?:rms_norm|rotary_embedding|select))\n'
                                    r'(?:  [^\n]*\n)*?    PTRAIN_STEP_CALL\((ptrain_cuda_[a-z0-9_]+)\(', text):
        calls.setdefault((op, call), []).append(loc)
    print("llama: " + ", ".join(f"{len(locs)} {op} -> {call} (e.g. {locs[0]})" for (op, call), locs in calls.items()))
    for op, call, least in (("ptrain.rms_norm", "ptrain_cuda_rms_norm_fwd_f32", 5),
                            ("ptrain.rotary_embedding", "ptrain_cuda_rotary_embedding_f32", 4),
                            ("ptrain.select", "ptrain_cuda_select", 1)):
        if len(calls.get((op, call), [])) < least:
            failures.append(f"llama: fewer than {least} {op} blocks calling {call} under an ONNX node name")
    if re.search(r"PTRAIN_STEP_CALL\(ptrain_(rms_norm|rotary|select|compare|dropout|gemm)", text):
        failures.append("llama: step.cu calls a CPU kernel")
    if not re.search(r"static const uint8_t keep = 1, masked = 0;\n    PTRAIN_STEP_CALL\(ptrain_cuda_causal_mask\("
                     r"d_constants \+ [0-9]+, 1, 1, 16, 16, 0, &keep, &masked\)\);", text):
        failures.append("llama: the i1 causal mask is not generated as uint8_t (ptrain_cuda_causal_mask) in step.cu")
    return failures


def check_half(scratch, plan, kind, dtype):
    """Section 7: the pp2 plan `plan` in 16-bit (`kind` bf16 or f16, cast dtype `dtype`) against the fp32 one (both
    compiled in section 3)."""
    failures = []
    text, fp32 = (inline_step_text(os.path.join(scratch, name)) for name in (plan, "pp2"))
    gemms = {k: len(re.findall(rf"PTRAIN_STEP_CALL\(ptrain_cuda_gemm_{k}\(", text)) for k in ("bf16", "f16", "f32")}
    casts = len(re.findall(rf"ptrain_cuda_cast_encode_f32\([^;]*nullptr[^;]*{dtype}", text))
    print(f"{plan}: GEMMs {gemms}, {casts} casts to {kind}")
    want = len(re.findall(r"PTRAIN_STEP_CALL\(ptrain_cuda_gemm_f32\(", fp32))
    if gemms[kind] != want or sum(gemms.values()) != gemms[kind]:
        failures.append(f"{plan}: GEMMs {gemms}, expected every one of the fp32 plan's GEMMs in {kind}")
    if casts == 0:
        failures.append(f"{plan}: no cast to {kind} (ptrain_cuda_cast_encode_f32 without a residual)")
    # fp16's loss scaler (docs/MixedPrecision.md): the seed's scale, every gradient unscaled, one update per stage's
    # optimizer step; bf16 has none.
    scaler = {k: len(re.findall(rf"PTRAIN_STEP_CALL\(ptrain_cuda_{k}\(", text))
              for k in ("loss_scale_f32", "grad_unscale_f32", "grad_scaler_update_f32")}
    print(f"{plan}: loss scaler calls {scaler}")
    expected_updates = 2 if kind == "f16" else 0
    if scaler["grad_scaler_update_f32"] != expected_updates or (kind == "f16") != (scaler["grad_unscale_f32"] > 0):
        failures.append(f"{plan}: loss scaler calls {scaler}, expected {expected_updates} updates (one per stage) and "
                        f"{'unscales' if kind == 'f16' else 'no scaler'}")

    def send_bytes(code):
        return sum(int(n) for n in re.findall(r"PTRAIN_STEP_CALL\(ptrain_nccl_send\([^,]+, [^,]+, (\d+),", code))

    sent, sent32 = send_bytes(text), send_bytes(fp32)
    print(f"{plan}: pipeline sends of {sent} bytes (fp32 plan: {sent32})")
    if sent32 == 0 or 2 * sent != sent32:
        failures.append(f"{plan}: the sends carry {sent} bytes, not half the fp32 plan's {sent32}")
    return failures


def check_half_codecs(scratch):
    """Section 7: codecs on 16-bit traffic (docs/Compression.md): the bf16 pp2 plan with MCBench's top-k 25% backward
    codec sends its 8,192 kept values as bf16 (16,384 bytes a send, 32,768 in fp32) rounded by the cast kernel after
    the f32 top-k encoder, and widens the bf16 message before the f32 quantization encoder."""
    failures = []
    text = inline_step_text(os.path.join(scratch, "pp2bf16mcb"))
    rounded = len(re.findall(r"ptrain_cuda_cast_encode_f32\([^;]*, nullptr, 8192, PTRAIN_DTYPE_BF16,", text))
    value_sends = len(re.findall(r"PTRAIN_STEP_CALL\(ptrain_nccl_send\(comm_pp_1_to_0, [^,]+, 16384,", text))
    widened = len(re.findall(r"ptrain_cuda_cast_decode_f32\([^;]*, 32768, PTRAIN_DTYPE_BF16, [^;]*\)\);\n(?:[^\n]*\n)*?"
                             r"[^\n]*ptrain_cuda_quant_encode_f32\(", text))
    print(f"pp2bf16mcb: {rounded} top-k value roundings to bf16, {value_sends} sends of 16,384 bytes on 1 -> 0, "
          f"{widened} widened quantization inputs")
    if rounded < 2 or value_sends < 2 or widened < 1:
        failures.append(f"pp2bf16mcb: {rounded} roundings, {value_sends} bf16 value sends, {widened} widened "
                        "quantization inputs; expected the codecs on the bf16 messages (2 micro-batches)")
    return failures


def check_half_tp(scratch, plan, kind, dtype):
    """Section 7: the tp 2 plan `plan` in 16-bit (`kind` bf16 or f16, NCCL dtype `dtype`), built by nvcc for sm_80 and
    sm_90 in section 3 (docs/MixedPrecision.md, "16-bit TP collectives"): every GEMM on cuBLAS in `kind`, every tp
    all-reduce of 16-bit values (ncclBfloat16 / ncclHalf) and none of fp32 values, and the stage functions take the
    16-bit parameter copies the step casts once ("The once-per-step parameter cast")."""
    failures = []
    text = inline_step_text(os.path.join(scratch, plan))
    gemms = {k: len(re.findall(rf"PTRAIN_STEP_CALL\(ptrain_cuda_gemm_{k}\(", text)) for k in ("bf16", "f16", "f32")}
    tp = re.findall(r"PTRAIN_STEP_CALL\(ptrain_nccl_all_reduce\(comm_grid_tp, [^;]*?(PTRAIN_DTYPE_\w+), ", text)
    print(f"{plan}: GEMMs {gemms}, tp all-reduces by dtype {sorted((d, tp.count(d)) for d in set(tp))}")
    # The unsplit model @forward (no step calls it) stays fp32, as in every 16-bit plan (docs/MixedPrecision.md,
    # "Where the casts go"): its GEMMs are the only fp32 ones.
    mlir = open(os.path.join(scratch, plan, "step.mlir")).read()
    forward = re.search(r"func\.func @forward\(.*?\n  \}[^\n]*\n", mlir, re.S)
    unsplit = len(re.findall(r"= ptrain\.matmul ", forward.group(0))) if forward else 0
    if gemms[kind] == 0 or gemms["f32"] != unsplit or sum(gemms.values()) != gemms[kind] + gemms["f32"]:
        failures.append(f"{plan}: GEMMs {gemms}, expected every GEMM in {kind} but the {unsplit} of the unsplit "
                        f"@forward")
    # fp16's loss scaler sums its one-element overflow count over tp in fp32 (docs/MixedPrecision.md, "The loss
    # scaler in the step"); every other tp all-reduce moves 16-bit values.
    scaler = len(re.findall(r"ptrain_nccl_all_reduce\(comm_grid_tp, \w+, \w+, 1, PTRAIN_DTYPE_F32,", text))
    if not tp or set(tp) - {"PTRAIN_DTYPE_F32"} != {dtype} or tp.count("PTRAIN_DTYPE_F32") != scaler or \
            scaler != (1 if kind == "f16" else 0):
        failures.append(f"{plan}: tp all-reduces of {sorted(set(tp))}, expected only {dtype} (and fp16's one "
                        f"fp32 overflow count)")
    signature = re.search(r"device_forward_stage0\(([^)]*)\)", text)
    if not signature or "uint16_t" not in signature.group(1):
        failures.append(f"{plan}: device_forward_stage0 takes no 16-bit parameter copy: "
                        f"{signature.group(0) if signature else 'not found'}")
    return failures


def check_fused(build, source, scratch):
    """Section 8: the generated kernels (docs/GeneratedKernels.md, "The CUDA route"). The tp2 GPT with
    --fuse-elementwise on (its row-parallel bias + residual add is an elementwise chain): step.cu loads the PTX
    images and launches the kernels, nvcc builds it for sm_80 and sm_90, plan.json names the architectures, and
    ptxas assembles each embedded PTX image for its architecture (the driver JIT-compiles the same text)."""
    failures = []
    out = os.path.join(scratch, "tp2fused")
    start = time.time()
    subprocess.run(compile_cmd(build, source, out, "--target", "cuda", "--lr", "1e-3", "--tp", "2",
                               "--fuse-elementwise", "on"), check=True)
    print(f"ptrain-compile --target cuda --tp 2 --fuse-elementwise on: {time.time() - start:.1f} s")
    text = open(os.path.join(out, "step.cu")).read()
    launches = text.count("ptrain_cuda_kernel_launch(")
    images = re.findall(r'const char kGeneratedPtx_(sm_\d+)\[\] = R"ptx\((.*?)\)ptx";', text, re.S)
    print(f"tp2fused: {launches} generated-kernel launches, PTX images for {[a for a, _ in images]}")
    if launches < 1 or "ptrain_cuda_kernels_load(kGeneratedPtx, kGeneratedPtxSm, 2, &generated_module)" not in text:
        failures.append("tp2fused: step.cu loads or launches no generated kernel")
    if sorted(a for a, _ in images) != ["sm_80", "sm_90"]:
        failures.append(f"tp2fused: PTX images for {[a for a, _ in images]}, not sm_80 and sm_90")
    archs = fatbin_archs(os.path.join(out, "libstep.so"), os.path.join(scratch, "fatbin-fused.bin"))
    if not {"sm_80", "sm_90"} <= set(archs):
        failures.append(f"tp2fused: libstep.so's fat binary has images for {archs}")
    with open(os.path.join(out, "plan.json")) as f:
        generated = json.load(f).get("generated_kernels")
    if generated != {"cuda": ["sm_80", "sm_90"]}:
        failures.append(f"tp2fused: plan.json generated_kernels is {generated}")
    ptxas = os.path.join(os.path.dirname(os.path.realpath(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")), "ptxas")
    for arch, ptx in images:
        path = os.path.join(scratch, f"tp2fused-{arch}.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        run = subprocess.run([ptxas, f"-arch={arch}", path, "-o", path + ".cubin"], capture_output=True, text=True)
        entries = len(re.findall(r"\.entry ptrain_kernel_\d+", ptx))
        print(f"ptxas -arch={arch}: exit {run.returncode}, {entries} entries, "
              f"{os.path.getsize(path + '.cubin') if run.returncode == 0 else 0} bytes of cubin")
        if run.returncode != 0 or entries < 1:
            failures.append(f"tp2fused: ptxas -arch={arch} failed ({run.stderr.strip()}) or no entry")
        if "fma.rn" in ptx:
            failures.append(f"tp2fused: the {arch} PTX contracts a multiply-add (fma.rn)")
    return failures


def main(build, source, scratch):
    global BUILD
    BUILD = build
    failures = []
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)

    # --- 1. The bundled GPT's step through nvcc.
    out = os.path.join(scratch, "cuda")
    start = time.time()
    subprocess.run(compile_cmd(build, source, out, "--target", "cuda", "--lr", "1e-3"), check=True)
    print(f"ptrain-compile --target cuda: {time.time() - start:.1f} s (import, step, --emit-cuda, nvcc)")
    for name in ("step.cu", "libstep.so", "plan.json"):
        if not os.path.isfile(os.path.join(out, name)):
            failures.append(f"{name} missing")
    if os.path.exists(os.path.join(out, "step.cpp")):
        failures.append("step.cpp written for --target cuda")
    lib = os.path.join(out, "libstep.so")
    archs = fatbin_archs(lib, os.path.join(scratch, "fatbin.bin"))
    print(f"fat binary of libstep.so: ELF images for {archs}")
    if not {"sm_80", "sm_90"} <= set(archs):
        failures.append(f"libstep.so's fat binary has images for {archs}, not sm_80 and sm_90")
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True, check=True).stdout
    missing = [line.strip() for line in ldd.splitlines() if "not found" in line]
    if missing:
        failures.append(f"libstep.so: unresolved libraries {missing}")
    for needed in ("libptrain_runtime_cuda.so", "libcublas", "libcudart"):
        if needed not in ldd:
            failures.append(f"libstep.so does not link {needed}")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    for entry in ENTRY_POINTS:
        if f" {entry}\n" not in symbols + "\n":
            failures.append(f"libstep.so does not export {entry}")
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    if plan.get("target") != "cuda" or plan.get("batch") != 4 or plan.get("seq") != 64 or plan.get("vocab") != 256:
        failures.append(f"plan.json: target {plan.get('target')}, batch {plan.get('batch')}, seq {plan.get('seq')}")
    states = len(plan.get("states", []))
    print(f"plan.json: target {plan['target']}, {states} states")
    source_text = inline_step_text(out)
    if source_text.count("ptrain_cuda_gemm_f32(") < 12 or '"/blocks.0/attn/MatMul"' not in source_text:
        failures.append("step.cu: fewer than 12 cuBLAS GEMMs or no ONNX node locations")

    # --- 2. ptrain-run on a CUDA plan.
    run, message = ptrain_run(build, "on the CUDA plan", out, "--data", os.path.join(scratch, "none"), "--steps", "1")
    if run.returncode != 1 or "Traceback" in message:
        failures.append(f"ptrain-run: exit {run.returncode}, expected 1 without a traceback")
    if not any(s in message for s in ("cudaErrorInsufficientDriver", "cudaErrorNoDevice", "no CUDA device",
                                      "not yet supported")):
        failures.append("ptrain-run: the message names neither the device error nor 'not yet supported'")

    # --- 3. Multi-rank plans: pp2 1F1B, pp2 GPipe, pp2 interleaved (2 virtual stages), dp2 x tp2, tp2 with
    # vocabulary parallelism, clipping and SGD, pp2 compressed by optimus-cc, and dp2 x pp2 with SC on every gradient.
    plans = {"pp2": ["--pp", "2", "--micro-batches", "2"],
             "gpipe": ["--pp", "2", "--micro-batches", "4", "--schedule", "gpipe"],
             "interleaved": ["--pp", "2", "--micro-batches", "4", "--schedule", "interleaved", "--virtual-stages", "2"],
             "dp2tp2": ["--dp", "2", "--tp", "2"],
             "dp2zero": ["--dp", "2", "--zero", "1"],
             "tp2vocab": ["--tp", "2", "--vocab-parallel", "--clip-norm", "1", "--optimizer", "sgd", "--momentum",
                          "0.9"],
             "pp2occ": ["--pp", "2", "--micro-batches", "2", "--policy", "optimus-cc"],
             "dp2pp2sc": ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000", "--policy",
                          "optimus-cc", "--compress-options", "sc-all=true sc-rank=8"],
             "pp2bf16": ["--pp", "2", "--micro-batches", "2", "--precision", "bf16"],
             "pp2fp16": ["--pp", "2", "--micro-batches", "2", "--precision", "fp16"],
             "pp2bf16mcb": ["--pp", "2", "--micro-batches", "2", "--precision", "bf16", "--policy", "mcbench",
                            "--compress-options", "fwd-codec=quant:bits=4,granularity=block,block-size=64 "
                            "bwd-codec=topk:ratio=0.25 error-feedback=true"],
             "tp2bf16": ["--tp", "2", "--precision", "bf16"],
             "tp2fp16": ["--tp", "2", "--precision", "fp16"]}
    for name, options in plans.items():
        out = os.path.join(scratch, name)
        start = time.time()
        subprocess.run(compile_cmd(build, source, out, "--target", "cuda", "--lr", "1e-3", *options), check=True)
        print(f"ptrain-compile --target cuda {' '.join(options)}: {time.time() - start:.1f} s")
        failures += check_multirank(name, out, scratch)

    # pp4 with Optimus-CC's fused embedding sync (a sub-group all-reduce), an ignore_index and class weights.
    failures += check_fused_sync_and_loss_options(build, source, scratch)

    # --- 4. A world that does not match the plan, before any GPU is touched.
    pp2 = os.path.join(scratch, "pp2")
    data = os.path.join(source, "models/gpt/gpt.onnx")  # Any file of more than one window of bytes.
    run, message = ptrain_run(build, "--np 3 on the pp2 CUDA plan", pp2, "--data", data, "--data-format", "bytes", "--steps", "1", "--np", "3")
    if run.returncode != 1 or "compiled for dp * pp = 1 * 2 = 2 ranks" not in message or "--np 2" not in message:
        failures.append("ptrain-run --np 3: expected exit 1 naming the plan's 2 ranks and --np 2")
    failures += check_world_size_in_step(os.path.join(pp2, "libstep.so"))
    failures += check_torchrun(os.path.join(pp2, "libstep.so"), gpu_count(build))
    if gpu_count(build) >= 2:  # Then it trains: codegen-cuda-gpu-multirank's part.
        print("ptrain-run on the pp2 CUDA plan: not run here, this machine has 2 GPUs")
    else:
        run, message = ptrain_run(build, "on the pp2 CUDA plan", pp2, "--data", data, "--data-format", "bytes", "--steps", "1")
        if run.returncode != 1 or "Traceback" in message:
            failures.append(f"ptrain-run on pp2: exit {run.returncode}, expected 1 without a traceback")
        if not any(s in message for s in ("cudaErrorInsufficientDriver", "cudaErrorNoDevice", "no CUDA device",
                                          "CUDA device(s)")):
            failures.append("ptrain-run on pp2: the message names no device error")
    if gpu_count(build) == 0:
        failures += check_env_launcher(build, pp2, data)

    # --- 6. The LLaMA-style fixture through nvcc.
    failures += check_llama(build, source, scratch)

    # --- 7. Mixed precision: the bf16 and fp16 pp2 plans of section 3.
    failures += check_half(scratch, "pp2bf16", "bf16", "PTRAIN_DTYPE_BF16")
    failures += check_half(scratch, "pp2fp16", "f16", "PTRAIN_DTYPE_F16")
    failures += check_half_codecs(scratch)
    failures += check_half_tp(scratch, "tp2bf16", "bf16", "PTRAIN_DTYPE_BF16")
    failures += check_half_tp(scratch, "tp2fp16", "f16", "PTRAIN_DTYPE_F16")

    # --- 8. The generated kernels: PTX embedded, launched, built by nvcc, assembled by ptxas.
    failures += check_fused(build, source, scratch)

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
