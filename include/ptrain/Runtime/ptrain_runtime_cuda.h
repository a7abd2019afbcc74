/*===- ptrain_runtime_cuda.h - The ptrain CUDA runtime ------------*- C -*-===//
//
// libptrain_runtime_cuda: the CUDA half of the runtime (DESIGN.md decision 9),
// built when PTRAIN_ENABLE_CUDA is ON (docs/Runtime.md, "The CUDA runtime").
// It links libptrain_runtime (the error buffer, MPI for the NCCL bootstrap,
// rand-k's position rule) and follows its conventions: every call returns a
// ptrain_status_t and, on failure, sets the message read with
// ptrain_last_error(); a CUDA, cuBLAS or NCCL failure is PTRAIN_ERROR_DEVICE
// naming the call and the library's error string.
//
// Memory: every tensor argument is a DEVICE pointer unless listed below as a
// host pointer. Kernels run on this thread's current stream
// (ptrain_cuda_set_stream; default the legacy stream 0) in order, so the caller
// never synchronizes between runtime calls on one stream.
//
// ptrain_cuda_device_count(out_count)     cudaGetDeviceCount; without a driver
//                                         it is a DEVICE error (no crash)
// ptrain_cuda_set_stream(stream)          a cudaStream_t (NULL: stream 0) for
//                                         this thread's later calls
// ptrain_cuda_synchronize()               waits for the current stream
//
// --- Codecs: the CPU calls' parameter lists, semantics and codes -----------
// ptrain_cuda_cast_encode/decode_f32, ptrain_cuda_quant_encode/decode_f32,
// ptrain_cuda_topk_encode/decode_f32, ptrain_cuda_randk_encode/decode_f32,
// ptrain_cuda_powersgd_encode/decode_f32 compute what ptrain_cast_encode_f32
// etc. compute (ptrain_runtime.h, "Codecs with fused error feedback"), with
// the same codes: bit for bit for casts, quantization (codes, scales, zero
// points and residuals), top-k and rand-k; PowerSGD within a stated tolerance
// (cuBLAS GEMMs, a different summation order). Host pointers: rand-k's
// `counter` (the int64 codec state; its positions are drawn on the host by
// the CPU rule and copied). Calls whose errors depend on the data (a
// non-finite value in quantization, an index out of range in top-k decode, a
// rand-k draw) synchronize the stream to report them.
//
// --- Codec telemetry (cuda/CodecMetrics.cu) --------------------------------
// ptrain_cuda_codec_metrics_f32(g, residual, new_residual, decoded,
//                               previous_g, n, out_g_copy, out_metrics)
//   ptrain_codec_metrics_f32 (ptrain_runtime.h: the same arguments, checks
//   and aliasing rules) on DEVICE tensors; out_metrics is a HOST pointer, so
//   the call waits for the stream. The six fp64 sums are block reductions:
//   the CPU call's values within fp64 rounding (another summation order).
//
// --- NCCL communicators (cuda/Nccl.cpp) ------------------------------------
// ptrain_nccl_comm_init(bootstrap, out_comm)
//   Collective over the MPI communicator `bootstrap` (ptrain_comm_init): rank 0
//   draws an ncclUniqueId, an all-gather through `bootstrap` hands it to every
//   rank, and each calls ncclCommInitRankConfig (nonblocking) with its
//   bootstrap rank and size, on device LOCAL_RANK (or
//   OMPI_COMM_WORLD_LOCAL_RANK) modulo the device count, else rank modulo
//   the device count. The deadline is the bootstrap's (PTRAIN_COMM_TIMEOUT_S).
// ptrain_nccl_comm_init_rendezvous(rendezvous, out_comm)
//   The same over a torchrun-style rendezvous (ptrain_rendezvous_init_env:
//   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no MPI): rank 0's unique id
//   broadcast over its TCP connections, the rendezvous' rank and size, the
//   device LOCAL_RANK modulo the device count. The deadline is
//   PTRAIN_COMM_TIMEOUT_S (default 300 s).
// ptrain_nccl_comm_split(parent, color, key, out_comm)
//   ncclCommSplit: one sub-communicator per grid axis group. Collective over
//   every rank of the parent; ranks with the same color form one
//   communicator, ordered by key; color -1 (NCCL_SPLIT_NOCOLOR) joins none
//   and gets NULL. Inherits the parent's deadline.
// ptrain_nccl_comm_destroy(comm)            finalize + destroy (abort if aborted)
// ptrain_nccl_comm_rank / _size / _set_timeout(comm, ...)
// ptrain_nccl_group_start(), ptrain_nccl_group_end()
//   ncclGroupStart / ncclGroupEnd: the sends and receives between them are
//   posted together (a pipeline edge's send and receive of one step).
// ptrain_nccl_send / ptrain_nccl_recv(comm, buf, num_bytes, peer)
// ptrain_nccl_all_reduce(comm, send, recv, count, dtype, op)
// ptrain_nccl_all_gather(comm, send, recv[size * count], count, dtype)
// ptrain_nccl_reduce_scatter(comm, send[size * count], recv[count], count, dtype, op)
//   Enqueued on the current stream (send == recv reduces in place). Sums
//   take F32, F64, F16, BF16 (AVG is ncclAvg); all-gather any dtype.
// ptrain_nccl_compressed_all_reduce(comm, codec, input, residual, state, out, op)
//   ptrain_compressed_all_reduce_start (ptrain_runtime.h) over NCCL: the host
//   descriptor `codec`, DEVICE tensors input, residual (NULL without error
//   feedback), out, and the DEVICE state (PowerSGD's warm-start Q, or the
//   rand-k int64 counter, read and advanced through the host before anything
//   is posted). Every phase (PowerSGD's all-reduces of P and Q around the
//   orthogonalization, rand-k's all-reduce of the values, the cast's
//   all-to-all + fp32 sums + all-gather, top-k's and quantization's
//   all-gather + decode + sum in rank order) is enqueued on the current
//   stream before it returns; ptrain_nccl_wait(comm) is its watchdog. Codes,
//   results and traffic (bytes handed to NCCL, one operation) are the CPU's.
// ptrain_nccl_wait(comm)
//   The watchdog: waits for everything enqueued on comm since the last wait,
//   polling cudaEventQuery and ncclCommGetAsyncError. An asynchronous NCCL
//   error, or the deadline passing, calls ncclCommAbort and returns COMM or
//   DEADLINE_EXCEEDED with a message naming the pending operations (op,
//   count, dtype, peer); the communicator is then unusable (every later call
//   on it is a COMM error naming the abort). Never hangs past the deadline.
// ptrain_nccl_wait_event(comm, event, what)
//   The watchdog of ONE operation on comm: polls the event recorded after it
//   (cudaEventQuery) and ncclCommGetAsyncError until the event completes;
//   an error or the deadline aborts comm, and the message names `what` (the
//   generated step passes the transfer and its IR location). The pipeline's
//   sends and receives, each on its own stream, are waited on this way.
// ptrain_nccl_p2p_traffic(comm, peer, out_bytes, out_messages)
//   The bytes and messages this rank has enqueued to rank `peer` of comm
//   (ptrain_nccl_send) since its creation or the last reset, counted when
//   enqueued (the MPI communicators' ptrain_comm_p2p_traffic).
// ptrain_nccl_collective_traffic(comm, out_bytes, out_operations)
//   The bytes of this rank's buffer in every collective on comm (count x
//   element size) and the number of collectives enqueued.
// ptrain_nccl_reset_traffic(comm)             zeroes both counters
//
// --- Compiled steps (--emit-cuda, docs/CodegenCuda.md) ---------------------
// ptrain_cuda_malloc(num_bytes, out_ptr) / ptrain_cuda_free(ptr)
//                                         cudaMalloc / cudaFree
// ptrain_cuda_stream_create(out_stream)   a non-blocking cudaStream_t
// ptrain_cuda_stream_destroy(stream)      cudaStreamDestroy (its pending work
//                                         still completes); NULL does nothing
//                                         (never the legacy stream 0); when it
//                                         is this thread's current stream, the
//                                         current stream becomes NULL
// ptrain_cuda_event_create(out_event) / ptrain_cuda_event_destroy(event)
//                                         a cudaEvent_t without timing
// ptrain_cuda_event_record(event, stream) cudaEventRecord on `stream` (not
//                                         the current stream: the pipeline's
//                                         communication streams)
// ptrain_cuda_stream_wait_event(stream, event)
//                                         cudaStreamWaitEvent: `stream`'s
//                                         later work waits for the event
// ptrain_cuda_copy_to_device(host_src, num_bytes, out)   H2D on the stream
// ptrain_cuda_copy_to_host(src, num_bytes, host_out)     D2H, then waits for
//                                         the stream: host_out is valid
// ptrain_cuda_copy_bytes(src, num_bytes, out) / ptrain_cuda_zero_bytes(out, n)
//                                         D2D copy / memset on the stream
// ptrain_cuda_kernels_load(ptx_images, sm_versions, num_images, out_module)
//   The generated kernels' PTX (docs/GeneratedKernels.md, "The CUDA route"):
//   the image of the highest sm_versions[i] <= the device's compute
//   capability, JIT-compiled by the driver (cuModuleLoadDataEx, the entry
//   points from cudaGetDriverEntryPointByVersion). Errors (DEVICE): no image
//   for the device ("compiled for sm_80, sm_90; device 0 is sm_75"), a
//   driver too old for the PTX ISA version (names both), the JIT's log.
// ptrain_cuda_kernel_function(module, name, out_function)
//   cuModuleGetFunction; the error names the kernel and the image's arch.
// ptrain_cuda_kernel_launch(function, blocks, threads, params)
//   cuLaunchKernel on the current stream, grid (blocks, 1, 1), block
//   (threads, 1, 1), params as kernelParams; errors name the kernel and arch.
// ptrain_cuda_gemm_f32, _binary_f32, _sum_to_f32, _unary_f32, _add_i64,
// _cast_i64_i32, _gelu{,_tanh}_{fwd,bwd}_f32, _permute_f32, _slice,
// _insert_slice, _layer_norm_{fwd,bwd}_f32, _softmax_{fwd,bwd}_f32,
// _embedding_{fwd,bwd}_f32, _cross_entropy_fwd_f32
//   The parameter lists and semantics of the CPU calls without the _cuda
//   (ptrain_runtime.h): tensors are DEVICE pointers, every dims / offsets /
//   perm array is a HOST array. GEMM: cuBLAS, fp32 compute (no TF32). Row
//   statistics in double. Embedding backward accumulates (atomicAdd).
// ptrain_cuda_gemm_bf16(trans_a, trans_b, batch, m, n, k, alpha, a, stride_a,
//     b, stride_b, beta, c, stride_c)
//   ptrain_gemm_bf16 on the device (--precision bf16): A and B bf16 bit
//   patterns, C fp32; cuBLAS with CUDA_R_16BF operands and CUBLAS_COMPUTE_32F
//   (tensor-core products, fp32 accumulation). The casts around it are the
//   cast codec's calls without a residual: ptrain_cuda_cast_encode_f32(x,
//   NULL, n, PTRAIN_DTYPE_BF16, out) and ptrain_cuda_cast_decode_f32, which
//   round as ptrain_cast_f32_bf16 / _bf16_f32 do.
// ptrain_cuda_gemm_f16(trans_a, trans_b, batch, m, n, k, alpha, a, stride_a,
//     b, stride_b, beta, c, stride_c)
//   ptrain_gemm_f16 on the device (--precision fp16): A and B IEEE binary16
//   bit patterns, C fp32; cuBLAS with CUDA_R_16F operands and
//   CUBLAS_COMPUTE_32F. Casts: the cast codec's calls with PTRAIN_DTYPE_F16.
// ptrain_cuda_cross_entropy_bwd_f32(dloss, ...)   dloss is a DEVICE pointer
//   to the upstream gradient (the CPU call takes the float).
// ptrain_cuda_cross_entropy_weighted_{fwd,bwd}_f32
//   ptrain_cross_entropy_weighted_{fwd,bwd}_f32 (class weights, a device
//   [vocab] array or NULL; an exact ignore_index or none; reduction sum or
//   mean) on device tensors, dloss a DEVICE pointer as above. A target
//   outside the vocabulary that is not ignored is skipped and reported by
//   ptrain_cuda_check_indices.
// ptrain_cuda_adamw_step_f32(param, grad, m, v, n, step, warmup, total,
//     max_lr, min_lr, beta1, beta2, eps, wd, out_param, out_m, out_v)
//   ptrain_adamw_step_f32 at the lr of ptrain_lr_warmup_cosine, both read
//   from the DEVICE step counter `step` (1-based t; the schedule is taken at
//   t - 1 while t <= warmup, else t); out of place (outputs may alias inputs).
// ptrain_cuda_reduce_f32, _broadcast_to, _cast_elements, _gather_axis,
// _log_softmax_f32
//   ptrain_reduce_f32 etc. (ptrain_runtime.h) on device tensors. A float that
//   does not fit in int64 (cast) or a gather index out of range is written as
//   0 and reported by ptrain_cuda_check_indices.
// ptrain_cuda_sgd_step_f32(param, grad, buf, n, step, warmup, total, max_lr,
//     min_lr, momentum, wd, out_param, out_buf)
//   ptrain_sgd_step_f32 at the schedule of the DEVICE step counter, as
//   AdamW; out of place; buf and out_buf both NULL without momentum.
// ptrain_cuda_sum_squares_f32(x, n, out_sum)   sum of x^2 in fp64, rounded
//   once into the DEVICE float out_sum.
// ptrain_cuda_clip_scale_f32(sum_squares, max_norm, out_scale)
//   min(1, max_norm / (sqrt(*sum_squares) + 1e-6)) on the device.
// ptrain_cuda_loss_scale_f32, ptrain_cuda_grad_unscale_f32,
// ptrain_cuda_grad_scaler_update_f32
//   fp16's loss scaler: ptrain_loss_scale_f32 etc. (ptrain_runtime.h) with
//   the state, scale and flag in DEVICE memory (cuda/GradScaler.cu).
// ptrain_cuda_vocab_parallel_embedding_{fwd,bwd}_f32,
// ptrain_cuda_vocab_parallel_ce_parts_{fwd,bwd}_f32
//   cpu/VocabParallel.cpp's kernels with int32 DEVICE ids / labels; the
//   embedding backward overwrites out_dtable. Ids and labels outside their
//   range are skipped and reported by ptrain_cuda_check_indices.
// ptrain_cuda_compare_f32, _compare_i64, _logical_u8, _select
//   ptrain_compare_f32 etc. (ptrain_runtime.h) on device tensors: masks are
//   uint8_t 0 / 1 per element, the CPU target's layout; dims HOST arrays.
// ptrain_cuda_rms_norm_fwd_f32, ptrain_cuda_rotary_embedding_f32
//   ptrain_rms_norm_fwd_f32 (a block per row, the sum of squares in fp64) /
//   ptrain_rotary_embedding_f32 (bit for bit) on device tensors.
// ptrain_cuda_dropout_f32(x, n, ratio, seed, counter, mid, inner, part,
//     parts, row_offset, row_elems, out)
//   ptrain_dropout_global_f32's mask bit for bit, the counter a DEVICE
//   int64: row_elems == 0: step = *counter, base = 0; else the counter packs
//   step + 2^32 row (lib/Transforms/DropoutRows.cpp): step = low 32 bits,
//   base = ((*counter >> 32) + row_offset) * row_elems.
// ptrain_cuda_check_indices()
//   Waits for the stream and reports the first id / target / label outside
//   the vocabulary (or gather index, or float cast to int64) that a kernel
//   met since the last check (INVALID_ARGUMENT naming the call, position, value and bound);
//   the kernels skip such elements instead of reading out of bounds.
//===----------------------------------------------------------------------===*/

#ifndef PTRAIN_RUNTIME_PTRAIN_RUNTIME_CUDA_H
#define PTRAIN_RUNTIME_PTRAIN_RUNTIME_CUDA_H

#include "ptrain/Runtime/ptrain_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/// An NCCL communicator with its deadline and the operations pending on it.
typedef struct ptrain_nccl_comm *ptrain_nccl_comm_t;

#define PTRAIN_RUNTIME_CALL(name, ret, params) PTRAIN_RUNTIME_API ret name params;
#include "ptrain/Runtime/RuntimeCallsCuda.def"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTRAIN_RUNTIME_PTRAIN_RUNTIME_CUDA_H */
