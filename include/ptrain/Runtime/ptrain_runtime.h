/*===- ptrain_runtime.h - The ptrain C ABI runtime ----------------*- C -*-===//
//
// The runtime every compiled ptrain training step links (DESIGN.md decision 9).
// It depends on no LLVM or MLIR; the CPU target uses CBLAS and MPI.
//
// Conventions (docs/Runtime.md has the rationale):
//  - Every call is `extern "C"`, prefixed `ptrain_`, and returns a
//    ptrain_status_t (0 = PTRAIN_OK), except ptrain_last_error and
//    ptrain_status_string, which return strings.
//  - On failure a call returns a nonzero status and sets a thread-local
//    message, read with ptrain_last_error(); the message names the call and the
//    cause. Successful calls leave the message untouched. Nothing is printed.
//  - Outputs are `out_*` parameters; the caller owns all memory. Tensors are
//    dense, row-major (C order), fp32 unless the name ends otherwise; a shape
//    [A, B] means B is the fastest-varying index. Sizes are element counts
//    unless a name says bytes. Time is in seconds.
//  - Unless documented otherwise, outputs must not alias inputs. Gradient
//    kernels OVERWRITE their outputs, except the embedding scatter-add, which
//    accumulates (the tied embedding gets two contributions).
//  - The declarations below are generated from RuntimeCalls.def, the call
//    table shared with the compiler's lowering; this header documents them.
//
//===----------------------------------------------------------------------===*/

#ifndef PTRAIN_RUNTIME_PTRAIN_RUNTIME_H
#define PTRAIN_RUNTIME_PTRAIN_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define PTRAIN_RUNTIME_API
#else
#define PTRAIN_RUNTIME_API __attribute__((visibility("default")))
#endif

/*===----------------------------------------------------------------------===//
// Status and errors
//===----------------------------------------------------------------------===*/

/// The result of every call: PTRAIN_OK (0) or one of the error codes below.
typedef int32_t ptrain_status_t;
enum {
  PTRAIN_OK = 0,
  /// A null pointer, a negative or inconsistent size, an index out of range.
  PTRAIN_ERROR_INVALID_ARGUMENT = 1,
  /// A host allocation failed.
  PTRAIN_ERROR_OUT_OF_MEMORY = 2,
  /// The communication library (MPI) returned an error; its text is included.
  PTRAIN_ERROR_COMM = 3,
  /// A communication did not complete before the deadline (PTRAIN_COMM_TIMEOUT_S).
  PTRAIN_ERROR_DEADLINE_EXCEEDED = 4,
  /// A message arrived with a different size than the receiver expected.
  PTRAIN_ERROR_MISMATCH = 5,
  /// A broken internal invariant.
  PTRAIN_ERROR_INTERNAL = 6,
  /// The CUDA runtime, cuBLAS or NCCL returned an error, or no device is usable; its text is included.
  PTRAIN_ERROR_DEVICE = 7,
};

/// Element types of collective buffers and codes.
typedef int32_t ptrain_dtype_t;
enum {
  PTRAIN_DTYPE_F32 = 0,
  PTRAIN_DTYPE_F64 = 1,
  PTRAIN_DTYPE_I64 = 2,
  /// IEEE 754 binary16, stored as uint16_t.
  PTRAIN_DTYPE_F16 = 3,
  /// bfloat16 (the upper half of an fp32), stored as uint16_t.
  PTRAIN_DTYPE_BF16 = 4,
};
/* All-reduce and reduce-scatter accept F32, F64, F16 and BF16; all-gather
   also I64; state descriptors F32 and I64. */

/// Reductions of ptrain_all_reduce_start. AVG is SUM divided by the
/// communicator size, applied when the request completes in ptrain_wait.
typedef int32_t ptrain_reduce_op_t;
enum { PTRAIN_REDUCE_SUM = 0, PTRAIN_REDUCE_AVG = 1 };

/// Operations of ptrain_binary_f32 (the order of the dialect's BinaryKind).
enum {
  PTRAIN_BINARY_ADD = 0,
  PTRAIN_BINARY_SUB = 1,
  PTRAIN_BINARY_MUL = 2,
  PTRAIN_BINARY_DIV = 3,
  PTRAIN_BINARY_POW = 4,
  PTRAIN_BINARY_MAX = 5,
  PTRAIN_BINARY_MIN = 6,
};

/// Operations of ptrain_unary_f32 (the order of the dialect's UnaryKind).
enum {
  PTRAIN_UNARY_NEG = 0,
  PTRAIN_UNARY_EXP = 1,
  PTRAIN_UNARY_LOG = 2,
  PTRAIN_UNARY_SQRT = 3,
  PTRAIN_UNARY_RSQRT = 4,
  PTRAIN_UNARY_RECIPROCAL = 5,
  PTRAIN_UNARY_ERF = 6,
  PTRAIN_UNARY_TANH = 7,
  PTRAIN_UNARY_RELU = 8,
};

/// Kinds of ptrain_compare_f32 / _i64 and ptrain_logical_u8 (the order of
/// the dialect's CompareKind); and, or, xor only for masks (uint8_t 0/1).
enum {
  PTRAIN_COMPARE_EQ = 0,
  PTRAIN_COMPARE_LT = 1,
  PTRAIN_COMPARE_LE = 2,
  PTRAIN_COMPARE_GT = 3,
  PTRAIN_COMPARE_GE = 4,
  PTRAIN_COMPARE_AND = 5,
  PTRAIN_COMPARE_OR = 6,
  PTRAIN_COMPARE_XOR = 7,
};

/// Kinds of ptrain_reduce_f32 (the order of the dialect's ReduceKind).
enum {
  PTRAIN_REDUCE_KIND_SUM = 0,
  PTRAIN_REDUCE_KIND_MEAN = 1,
  PTRAIN_REDUCE_KIND_MAX = 2,
};

/// Element kinds of ptrain_cast_elements: f32, i64 and masks (uint8_t 0/1).
enum {
  PTRAIN_CAST_F32 = 0,
  PTRAIN_CAST_I64 = 1,
  PTRAIN_CAST_MASK = 2,
};

/// What a state tensor holds (the order of the dialect's StateKind).
enum {
  PTRAIN_STATE_PARAMETER = 0,
  PTRAIN_STATE_OPTIMIZER_MOMENT = 1,
  PTRAIN_STATE_CODEC_RESIDUAL = 2,
  PTRAIN_STATE_CODEC_WARM_START = 3,
  PTRAIN_STATE_CODEC_SEED = 4,
  PTRAIN_STATE_STEP_COUNTER = 5,
  /// A gradient accumulator of the pipeline (micro-batches add into it; zeroed by the optimizer step).
  PTRAIN_STATE_GRADIENT = 6,
};

/// The default initializer of a parameter state that the ONNX model does not
/// hold (a state's `ptrain.init` attribute; include/ptrain/Runtime/StateInit.h).
enum {
  /// No default: a parameter missing from the model is an error.
  PTRAIN_STATE_INIT_NONE = 0,
  /// A seeded orthogonal matrix (rank-2 f32; ptrain::runtime::orthogonalInit).
  PTRAIN_STATE_INIT_ORTHOGONAL = 1,
  /// The transpose of the orthogonal matrix of the transposed shape and the same
  /// seed (the autoencoder's decoder: W_d = W_e^T, also when square).
  PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED = 2,
};

/// Codecs (the order of the dialect's codec attributes; DESIGN.md decision 4).
typedef int32_t ptrain_codec_kind_t;
enum {
  PTRAIN_CODEC_POWERSGD = 0,
  PTRAIN_CODEC_TOPK = 1,
  PTRAIN_CODEC_RANDK = 2,
  PTRAIN_CODEC_QUANT = 3,
  PTRAIN_CODEC_CAST = 4,
  PTRAIN_CODEC_TAHQUANT = 5,
};

/// Quantization granularities (the order of the dialect's QuantGranularity).
enum {
  PTRAIN_QUANT_TENSOR = 0,
  PTRAIN_QUANT_CHANNEL = 1,
  PTRAIN_QUANT_BLOCK = 2,
};

/// The version of ptrain_codec_t this header declares. The descriptor only
/// grows at its end, and a new field's zero means what the previous version
/// did, so a version-N initializer (C fills the missing fields with zeros)
/// describes the same codec under every later version (docs/Runtime.md,
/// "The codec descriptor"):
///   1  kind ... tile_size (15 fields)
///   2  + value_dtype: the element type of the values top-k and rand-k send
///      (0 = PTRAIN_DTYPE_F32, version 1's 4-byte values)
#define PTRAIN_CODEC_DESCRIPTOR_VERSION 2

/// One codec instance: the parameters of its #ptrain.<codec> attribute and
/// the tensor it encodes, seen as `batch` matrices of `rows` x `cols` (the
/// attribute's matrix view; numel = batch * rows * cols). Fields a codec does
/// not use are ignored, except value_dtype, which must be 0 (f32) for the
/// codecs that send no top-k or rand-k values. See "Codecs" in the call
/// reference below.
typedef struct ptrain_codec {
  ptrain_codec_kind_t kind;
  int32_t bits;              /* quant: 2, 4 or 8 */
  int32_t granularity;       /* quant: PTRAIN_QUANT_* */
  int32_t symmetric;         /* quant: nonzero = symmetric (no zero points) */
  int32_t warm_start;        /* powersgd: nonzero = the state is the previous Q */
  ptrain_dtype_t cast_dtype; /* cast: PTRAIN_DTYPE_F16 or PTRAIN_DTYPE_BF16 */
  int64_t batch, rows, cols; /* the tensor: batch x rows x cols, all >= 1 */
  int64_t rank;              /* powersgd: in [1, min(rows, cols)] */
  int64_t k;                 /* topk, randk: kept values, in [1, numel] */
  int64_t block_size;        /* quant, block granularity: >= 1 */
  uint64_t seed;             /* randk: positions; powersgd: initial Q */
  int32_t low_bits;          /* tahquant: the low width (bits: the high one; k: the high tiles) */
  int64_t tile_size;         /* tahquant: 8, 16, 32 or 64 */
  /* version 2 */
  ptrain_dtype_t value_dtype; /* topk, randk: the sent values' type: PTRAIN_DTYPE_F32 (0), _BF16 or _F16
                                 (a 16-bit TP site, docs/Compression.md); every other codec: F32 */
} ptrain_codec_t;

/// Telemetry of one encode at a codec site (ptrain_codec_metrics_f32; docs/Runtime.md, "Codec telemetry").
/// v is the codec's input: g + e (the gradient plus the old residual) with error feedback, g without.
typedef struct ptrain_codec_metrics {
  double input_norm;    /* ||v||_2 */
  double error;         /* ||v - decode(encode(v))||_2 / ||v||_2; 0 when v = 0 */
  double residual_norm; /* ||e_new||_2, the residual after the update; 0 without error feedback */
  double lep_cos;       /* cos(e_old, g_prev - g) (Optimus-CC section 4.2); 0 unless has_lep_cos */
  int32_t has_lep_cos;  /* 1 when e_old and g_prev were given and both vectors are nonzero */
} ptrain_codec_metrics_t;

/// One keyed state tensor of a compiled step (DESIGN.md decision 5): the
/// generated code owns `data` (dense, row-major, `dims[rank]` elements of
/// `dtype`, PTRAIN_DTYPE_F32 or PTRAIN_DTYPE_I64); the runtime loads and saves
/// it by `key`. `init` and `init_seed` (zero for most states) name the
/// default of a parameter that the ONNX model lacks (PTRAIN_STATE_INIT_*).
typedef struct ptrain_state_desc {
  const char *key;
  void *data;
  ptrain_dtype_t dtype;
  int32_t kind;
  int32_t rank;
  const int64_t *dims;
  int32_t init;       /* PTRAIN_STATE_INIT_* */
  uint64_t init_seed; /* the generator's seed (ptrain.init = {..., seed = S}) */
} ptrain_state_desc_t;

/// A communicator: MPI_COMM_WORLD's duplicate or a group of its ranks.
typedef struct ptrain_comm *ptrain_comm_t;
/// An outstanding nonblocking operation; completed and freed by ptrain_wait.
typedef struct ptrain_request *ptrain_request_t;
/// A torchrun-style TCP rendezvous (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
typedef struct ptrain_rendezvous *ptrain_rendezvous_t;

/*===----------------------------------------------------------------------===//
// Call reference. Every call below returns PTRAIN_ERROR_INVALID_ARGUMENT for a
// null required pointer or a negative size.
//
// ptrain_last_error() -> const char *
//   The message of the last failed call on this thread ("" if none). Valid
//   until the next failing call on the same thread.
// ptrain_status_string(status) -> const char *
//   A static name for a status code ("PTRAIN_ERROR_COMM", ...).
// ptrain_record_error(status, call, message) -> status
//   Sets this thread's last error to "<call>: <message>" (truncated to 1023
//   bytes) and returns status: the one error buffer shared with libraries
//   built on this runtime (libptrain_runtime_cuda, ptrain_runtime_cuda.h).
//
// --- Kernel paths (cpu/CpuIsa.cpp; docs/Runtime.md, "Kernel paths") ---
// The GELU (erf form), softmax forward and cross-entropy kernels exist for
// three x86-64 ISAs, all giving the same bits: "baseline" (SSE2), "avx2"
// (AVX2 and FMA) and "avx512" (AVX-512 F, DQ, VL, BW); "avx512bf16" (AVX-512
// plus AVX512-BF16) runs their avx512 clones and ptrain_gemm_bf16's VDPBF16PS
// kernel, which the other paths emulate bit for bit. The environment variable
// PTRAIN_CPU_ISA (baseline, avx2, avx512, avx512bf16 or auto; read once per
// process) forces one; unset, empty or auto takes the widest the CPU runs. An
// unknown value, or a path the CPU cannot run, makes every call of those
// kernels (and ptrain_cpu_isa) return INVALID_ARGUMENT naming the variable,
// its value and the CPU's paths.
// ptrain_cpu_isa(out_name)
//   *out_name = the path the kernels take now (a static string).
// ptrain_cpu_set_isa(name)
//   Forces `name` (as PTRAIN_CPU_ISA's values) for the process, over
//   PTRAIN_CPU_ISA; null returns to PTRAIN_CPU_ISA's choice. INVALID_ARGUMENT
//   for an unknown name or one the CPU cannot run (the path stays as it was).
//
// --- Elementwise and layout ---
// ptrain_fill_f32(out[n], n, value)                 out[i] = value
// ptrain_add_f32(a[n], b[n], n, out[n])             out = a + b; out may alias a or b
// ptrain_scale_f32(x[n], n, alpha, out[n])          out = alpha * x; out may alias x
// ptrain_sum_squares_f32(x[n], n, out_sum)          sum of x[i]^2 accumulated in fp64
//                                                   (global-norm clipping)
// ptrain_bias_add_f32(x[rows, cols], bias[cols], rows, cols, out[rows, cols])
//                                                   out = x + bias (broadcast over rows);
//                                                   out may alias x
// ptrain_bias_add_bwd_f32(dy[rows, cols], rows, cols, out_dbias[cols])
//                                                   dbias[j] = sum_i dy[i, j]
// ptrain_permute_f32(x, rank, dims[rank], perm[rank], out)
//   out = transpose(x, perm) as numpy: out.shape[i] = dims[perm[i]]; rank in
//   [1, 8]; perm must be a permutation. Splitting heads [B, S, H, D] ->
//   [B, H, S, D] is perm {0, 2, 1, 3}; the backward is the inverse permutation.
//
// --- Broadcasting elementwise, reductions, casts ---
// ptrain_binary_f32(kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out)
//   out = a <kind> b with numpy broadcasting (trailing dims aligned, each
//   pair equal or 1); out_dims must be the broadcast shape; ranks in [0, 8].
//   Computed in fp64, rounded once. pow is std::pow; max/min propagate NaN.
// ptrain_sum_to_f32(x, rank, dims, out_rank, out_dims, out)
//   The adjoint of broadcasting: out (whose shape broadcasts to dims) is the
//   sum of x over every dim broadcasting added or stretched from 1; fp64 sums.
// ptrain_unary_f32(kind, x[n], n, out[n])     neg, exp, log, sqrt, rsqrt,
//   reciprocal, erf, tanh, relu, computed in fp64; out may alias x.
// ptrain_add_i64(a[n], b[n], n, out[n])      out = a + b (the step counter);
//   out may alias a or b; signed overflow is an INVALID_ARGUMENT error.
// ptrain_binary_i64(kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank,
//                   out_dims, out)
//   ptrain_binary_f32's broadcasting on int64 for add, sub, mul, max and min
//   (integer index arithmetic in exports, e.g. tf2onnx's guard of negative
//   token ids); signed overflow and any other kind are INVALID_ARGUMENT errors.
// ptrain_cast_i64_i32(x[n], n, out[n])       token ids and labels to the
//   kernels' int32; a value outside int32 is an INVALID_ARGUMENT error.
// ptrain_reduce_f32(kind, x, rank, dims, out_rank, out_dims, out)
//   sum, mean or max of x over the dims where out (whose shape broadcasts to
//   dims: the keepdims shape) has size 1 and x does not; fp64 accumulation,
//   mean divided once; max propagates NaN, an empty max is an error.
// Masks are i1 tensors stored as one uint8_t (0 or 1) per element:
// ptrain_compare_f32 / ptrain_compare_i64(kind, a, a_rank, a_dims, b, b_rank,
//                     b_dims, out_rank, out_dims, out_mask)
//   out = a <kind> b (PTRAIN_COMPARE_EQ..GE) with numpy broadcasting.
// ptrain_logical_u8(kind, a, ..., out_mask)   and, or, xor of masks (also
//   eq..ge of masks as 0/1 numbers); ONNX Not is xor with a true mask.
// ptrain_select(cond, c_rank, c_dims, a, a_rank, a_dims, b, b_rank, b_dims,
//               elem_bytes, out_rank, out_dims, out)
//   out = cond ? a : b elementwise, the three broadcast (ONNX Where); any
//   element type of elem_bytes in {1, 2, 4, 8}, copied bit for bit.
// ptrain_broadcast_to(x, elem_bytes, rank, dims, out_rank, out_dims, out)
//   out = x broadcast to out_dims (numpy rules, ONNX Expand), bit for bit.
//
// --- Casts, gathers and log-softmax (cpu/Selection.cpp, cpu/LogSoftmax.cpp) ---
// ptrain_cast_elements(x, from, n, to, out)   ONNX Cast between the kinds
//   PTRAIN_CAST_F32, _I64, _MASK: float to int64 truncates toward zero (NaN or
//   out of range is INVALID_ARGUMENT, out untouched), int64 to float rounds to
//   nearest through fp64, anything to a mask is != 0, a mask to a number 0/1.
// ptrain_gather_axis(data, elem_bytes, outer, len, inner, indices, count, out)
//   ONNX Gather of data viewed as [outer, len, inner]: out[o, j, :] =
//   data[o, indices[j], :] (out [outer, count, inner]); a negative index counts
//   from the end; one outside [-len, len) is INVALID_ARGUMENT. Any elem_bytes.
// ptrain_log_softmax_f32(x, outer, len, inner, out)
//   y = x - max - log(sum(exp(x - max))) along len of x viewed as [outer, len,
//   inner] (ONNX LogSoftmax-13); fp64, rounded once (the interpreter's order).
//
// --- Data movement of any element type (elem_bytes in {1, 2, 4, 8}) ---
// ptrain_copy_bytes(src, num_bytes, out)      memmove (a reshape's copy, state writes)
// ptrain_zero_bytes(out, num_bytes)           all bits zero (0.0f, 0)
// ptrain_slice(x, elem_bytes, rank, dims, offsets, out_dims, out)
//   out[i] = x[offsets + i] for i < out_dims (unit stride); rank in [0, 8];
//   offsets[d] + out_dims[d] <= dims[d].
// ptrain_insert_slice(x, elem_bytes, rank, x_dims, offsets, out_dims, out)
//   out[offsets + i] = x[i] for i < x_dims; the rest of out is untouched
//   (pad = zero_bytes + insert_slice; concat = one insert per input).
//
// --- A step's storage and generated constants (docs/CodegenCpu.md, "Storage") ---
// ptrain_alloc(num_bytes, out_ptr)            *out_ptr = num_bytes of zeroed memory, 64-byte aligned (an
//   anonymous mapping from 64 KiB on: resident only where written); OUT_OF_MEMORY when refused. 0 bytes
//   gives a valid pointer. A step's states, arenas and constants, allocated by ptrain_step_init.
// ptrain_free(ptr, num_bytes)                 frees what ptrain_alloc(num_bytes) returned (NULL: nothing).
// ptrain_allocated_bytes(out_bytes)           the bytes ptrain_alloc holds now in this process (requested
//   sizes, no rounding): the counter the memory plan is checked against.
// ptrain_read_beside(anchor, file_name, offset, num_bytes, out)
//   reads num_bytes at byte offset of the file file_name in the directory of the shared object that contains
//   the address anchor (dladdr): a step's constant file beside its libstep.so. INVALID_ARGUMENT naming the
//   path when it is missing or short.
// ptrain_fill_elements(out, count, elem_bytes, value)   out[i] = *value, elem_bytes in {1, 2, 4, 8}
// ptrain_causal_mask(out, elem_bytes, batch, rows, cols, diagonal, keep, masked)
//   out[b][i][j] = j - i <= diagonal ? *keep : *masked over [batch, rows, cols] (the autoregressive mask of
//   Vaswani et al. 2017, sec. 3.2.3; torch.tril(ones, diagonal)).
// ptrain_iota_i64(out, count, period, start, step)      out[i] = start + (i % period) * step (position ids,
//   period > 0; a [batch, seq] table repeats every seq elements).
//
// --- GEMM (cpu: cblas_sgemm, one call per batch entry) ---
// ptrain_gemm_f32(trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b,
//                 stride_b, beta, c, stride_c)
//   For p in [0, batch): C_p = alpha * op(A_p) * op(B_p) + beta * C_p with
//   A_p = a + p*stride_a, op(A_p) [m, k] (A_p stored [k, m] when trans_a),
//   B_p = b + p*stride_b, op(B_p) [k, n] (B_p stored [n, k] when trans_b),
//   C_p = c + p*stride_c, [m, n]. Strides are in elements; a stride of 0
//   broadcasts one matrix over the batch (stride_c must be >= m*n when
//   batch > 1). beta = 0 ignores C's old contents (NaNs included).
//   A linear layer y = x W^T + b with W [out, in] is
//   gemm(0, 1, 1, rows, out, in, 1, x, 0, W, 0, 0, y, 0) then bias_add;
//   its backward is dx = dy W (gemm(0,0,...)), dW = dy^T x (gemm(1,0,...)).
// ptrain_gemm_strided_f32(trans_a, trans_b, batch_outer, batch_inner, m, n, k, alpha, a, a_layout, b, b_layout,
//                         beta, c, c_layout)
//   For p in [0, batch_outer), q in [0, batch_inner): C_pq = alpha * op(A_pq) * op(B_pq) + beta * C_pq with
//   X_pq = x + p*x_layout[1] + q*x_layout[2] a row-major matrix whose rows are x_layout[0] elements apart (its
//   leading dimension: at least the stored row's length, k or m for A, n or k for B, n for C); op, shapes and
//   beta as ptrain_gemm_f32. One cblas_sgemm per entry with those leading dimensions: the same products summed in
//   the same order as ptrain_gemm_f32 on a dense copy (BLAS packs the operands first), so the same bits. The
//   attention's heads: Q of [B, T, H, D] read as [B, H, T, D] is layout {H*D, T*H*D, D} with batch_outer B and
//   batch_inner H (docs/CodegenCpu.md, "GEMM operands"). INVALID_ARGUMENT for negative sizes or strides, a
//   leading dimension below the row's length or above INT_MAX, null pointers, or a c_layout whose entries could
//   overlap (they must lie side by side within the rows or one after another).
// ptrain_gemm_transposed_f32(trans_a, trans_b, m, n, k, alpha, a, b, beta, c)
//   C^T = alpha * (op(A) op(B))^T + beta * C^T: c is the [n, m] transpose of the [m, n] product, A, B and op as
//   ptrain_gemm_f32 (batch 1). Computed as ptrain_gemm_f32 of the product into a per-thread scratch (the same
//   cblas_sgemm, operands in the same roles) and a transposing pass c[j, i] = p[i, j] (beta = 0) or
//   c[j, i] = beta * c[j, i] + p[i, j]: the bits of the GEMM, a transpose and (beta = 1) an fp32 add, on every
//   BLAS kernel family. The product written transposed by swapping the operands, (A^T B)^T = B^T A, is not
//   those bits on OpenBLAS's Haswell kernels (about 10% of the elements of the bundled GPT's weight gradients
//   differ in the last bits; GemmTest, kern11). Where it is (OpenBLAS's SkylakeX kernels, found by
//   openblas_get_corename at run time, with beta = 0 or k <= 256, one pass over K) the swapped GEMM writes C^T in
//   place and the scratch is skipped. The weight gradient of `x W^T` (GemmFusion.h, writesTransposed).
//   INVALID_ARGUMENT as ptrain_gemm_f32; OUT_OF_MEMORY when the scratch cannot grow.
//
// --- bf16 GEMM with fp32 accumulation, bf16 casts (cpu/GemmBf16.cpp; docs/Runtime.md, "bf16 GEMM") ---
// ptrain_gemm_bf16(trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b,
//                  stride_b, beta, c, stride_c)
//   ptrain_gemm_f32's arguments and layout with A and B in bfloat16 (uint16_t
//   bits) and C in fp32. Each C element is one fp32 accumulator, +0 at first,
//   that takes op(A)'s row and op(B)'s column in pairs as Intel's VDPBF16PS
//   does: for p = 0 .. ceil(k/2) - 1, acc = fma(a[2p+1], b[2p+1], acc), then
//   acc = fma(a[2p], b[2p], acc), each rounded to nearest even; bf16 denormal
//   operands read as zero, results below 2^-126 after rounding become zeros
//   of their sign, and an odd k ends with a zero element. Then C = alpha * acc
//   + beta * C (beta = 0 ignores C) in fp32, and any NaN is written as
//   0x7fc00000. Every kernel path gives the same bits: the avx512bf16 path runs
//   the instruction, the others an exact emulation (cpu/Bf16Dot.h). Error:
//   |C - exact| <= gamma_{k+2} (|alpha| sum |a b| + |beta C|), gamma_j =
//   j 2^-24 / (1 - j 2^-24), plus k 2^-126 for flushed tiny terms.
//   OUT_OF_MEMORY when the packed operands ((m + 64 ceil(n/64)) ceil(k/2) 4
//   bytes) cannot be allocated. One thread.
// ptrain_cast_f32_bf16(x[n], n, out[n])       out = bf16(x): round to nearest
//   even, NaN stays NaN (made quiet, sign and high payload kept), +-inf and
//   +-0 kept, fp32 denormals round to bf16 denormals (no flush), a value that
//   rounds past bf16's largest becomes +-inf.
// ptrain_cast_bf16_f32(x[n], n, out[n])       out = fp32(x), exact.
//
// --- fp16 GEMM with fp32 accumulation, fp16 casts (cpu/GemmF16.cpp; docs/MixedPrecision.md, "fp16") ---
// ptrain_gemm_f16(trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b,
//                 stride_b, beta, c, stride_c)
//   ptrain_gemm_f32's arguments and layout with A and B in IEEE binary16
//   (uint16_t bits) and C in fp32. Defined as a fixed-order fp32 kernel on
//   exactly widened operands (no CPU here has an fp16 dot instruction): each C
//   element is one fp32 accumulator, +0 at first, with acc = fma(a[p], b[p],
//   acc) for p = 0 .. k-1 in order, rounded to nearest even (the products are
//   exact in fp32, so nothing is flushed); then C = alpha * acc + beta * C
//   (beta = 0 ignores C) in fp32, any NaN written as 0x7fc00000. Every kernel
//   path gives the same bits. OUT_OF_MEMORY when the widened operands
//   ((m + 64 ceil(n/64)) k 4 bytes) cannot be allocated. One thread.
// ptrain_cast_f32_f16(x[n], n, out[n])        out = binary16(x): round to
//   nearest even, overflow to +-inf, NaN stays a quiet NaN, tiny values to
//   binary16 subnormals.
// ptrain_cast_f16_f32(x[n], n, out[n])        out = fp32(x), exact.
//
// --- fp16 dynamic loss scaling (cpu/GradScaler.cpp; Megatron-LM's DynamicGradScaler) ---
// The scaler state is float state[3] = {scale, growth_tracker,
// hysteresis_tracker}, checkpointed as a ptrain.state.
// ptrain_grad_unscale_check_f32(grad[n], n, inv_scale, inout_found_inf[1])
//   grad *= inv_scale in place (fp32); sets *inout_found_inf = 1 when any
//   result is +-inf or NaN and leaves it otherwise, so one flag ORs over many
//   tensors (then a max all-reduce over every rank). inv_scale finite, > 0.
// ptrain_grad_scaler_init(initial_scale, hysteresis, out_state[3])
//   state = {initial_scale, 0, hysteresis} (Megatron: initial 2^32,
//   hysteresis 2).
// ptrain_grad_scaler_update(state[3], found_inf, growth_factor, backoff_factor,
//                           growth_interval, hysteresis, min_scale)
//   found_inf != 0: growth_tracker = 0, hysteresis_tracker -= 1, and when it
//   is <= 0 scale = max(scale * backoff_factor, min_scale) (the step is
//   skipped by the caller). Otherwise growth_tracker += 1; at growth_interval
//   it resets to 0, hysteresis_tracker to hysteresis and scale *=
//   growth_factor. Megatron's defaults: growth 2, backoff 0.5, interval 1000,
//   hysteresis 2, min scale 1. INVALID_ARGUMENT for growth_factor <= 1,
//   backoff_factor outside (0, 1), interval or hysteresis < 1, min_scale <= 0.
// The forms the code generators call (ptrain.loss_scale, ptrain.grad_unscale,
// ptrain.grad_scaler_update; PTrainStepOps.td), pointer arguments only, out of
// place (out may alias in), a zero state standing for the initial one:
// ptrain_loss_scale_f32(state[3], initial_scale, out_scale[1])
//   *out_scale = state[0], or initial_scale when state[0] == 0.
// ptrain_grad_unscale_f32(grad[n], n, scale[1], out_grad[n], out_found_inf[1])
//   out_grad = grad * fp32(1 / fp64(*scale)); *out_found_inf = 1 when any
//   result is +-inf or NaN, else 0.
// ptrain_grad_scaler_update_f32(state[3], found_inf[1], initial_scale,
//     growth_factor, backoff_factor, growth_interval, hysteresis, min_scale,
//     out_state[3])
//   out_state = the state (ptrain_grad_scaler_init's when state[0] == 0)
//   after ptrain_grad_scaler_update with *found_inf.
//
// --- Layer norm (Ba, Kiros, Hinton 2016, "Layer Normalization", eq. 4) ---
// ptrain_layer_norm_fwd_f32(x[rows, cols], gamma[cols], beta[cols], rows, cols,
//                           eps, out_y[rows, cols], out_mean[rows], out_rstd[rows])
//   y = (x - mean) * rstd * gamma + beta over the last dim, with the biased
//   variance and rstd = 1 / sqrt(var + eps); mean and rstd are saved for the
//   backward.
// ptrain_layer_norm_bwd_f32(dy, x, gamma, mean, rstd, rows, cols,
//                           out_dx[rows, cols], out_dgamma[cols], out_dbeta[cols])
//   xhat = (x - mean) * rstd, g = dy * gamma;
//   dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat));
//   dgamma = sum_rows(dy * xhat), dbeta = sum_rows(dy).
//
// --- GELU, exact erf form (Hendrycks, Gimpel 2016, "GELUs", sec. 2) ---
// ptrain_gelu_fwd_f32(x[n], n, out_y[n])      y = x * Phi(x), Phi(x) = (1 + erf(x/sqrt 2)) / 2
// ptrain_gelu_bwd_f32(dy[n], x[n], n, out_dx[n])
//                                             dx = dy * (Phi(x) + x * phi(x)), phi the normal pdf
//
// --- GELU, tanh approximation (same paper, sec. 2; GPT-2's gelu_new) ---
// ptrain_gelu_tanh_fwd_f32(x[n], n, out_y[n])  y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// ptrain_gelu_tanh_bwd_f32(dy[n], x[n], n, out_dx[n])
//
// --- RMS norm and rotary embedding (LLaMA-style ops, cpu/Transformer.cpp) ---
// ptrain_rms_norm_fwd_f32(x[rows, cols], scale[cols], rows, cols, eps, out_y)
//   y = x / sqrt(mean_j(x^2) + eps) * scale (Zhang, Sennrich 2019, eq. 4);
//   x r and its product with scale each computed in fp64, rounded once (the
//   reference interpreter's ptrain.rms_norm). Its gradient is built from
//   binary/unary/reduce ops (PTrainTransformerOps.td).
// ptrain_rotary_embedding_f32(x[b, h, s, d], cos[b, s, r/2], sin[b, s, r/2],
//                             batch, heads, seq, head_dim, rotary_dim,
//                             interleaved, out[b, h, s, d])
//   RoPE (Su et al., RoFormer, eq. 34): pairs (x[i], x[i + r/2]) (or
//   (x[2i], x[2i+1]) when interleaved) of the first r channels become
//   (x1 c - x2 s, x2 c + x1 s), fp64, rounded once; channels >= r pass
//   through. The gradient is the same call with -sin. out may not alias x.
//
// --- Dropout with a counter-based mask (cpu/Dropout.cpp) ---
// ptrain_dropout_f32(x[n], n, ratio, seed, counter, out[n])
//   out[i] = keep_i ? x[i] / (1 - ratio) : 0 (fp64 product, rounded once),
//   keep_i = u_i >= ratio with u_i = (mix(key + (i + 1) G) >> 11) 2^-53,
//   key = mix(seed ^ mix(counter + G)), G = 0x9E3779B97F4A7C15, mix
//   SplitMix64's finalizer: the mask of ptrain.dropout (PTrainModelOps.td),
//   bit for bit the reference interpreter's. 0 <= ratio < 1; out may alias x.
// ptrain_dropout_global_f32(x[n], n, ratio, seed, counter, mid, inner, part,
//                           parts, base, out[n])
//   The same with i replaced by the element's global index g(i) (the op's
//   row / shard layout): mid = 0: g = i + base; else, with
//   i = (o mid + j) inner + r, g = ((o parts + part) mid + j) inner + r + base
//   (part of parts on the sharded dimension of local size mid).
//   0 <= part < parts, inner >= 1, base >= 0.
//
// --- Softmax over the last dim ---
// ptrain_softmax_fwd_f32(x[rows, cols], rows, cols, causal, out_y[rows, cols])
//   y = exp(x - max) / sum exp(x - max) per row (max-subtracted for
//   stability). With causal != 0, x is [..., S, S] with S = cols (rows a
//   multiple of cols); row r is query q = r mod S and keys j > q get y = 0
//   (the autoregressive mask of Vaswani et al. 2017, sec. 3.2.3).
// ptrain_softmax_bwd_f32(dy, y, rows, cols, out_dx)
//   dx = y * (dy - sum_j(dy * y)); masked entries have y = 0, so dx = 0.
//
// --- Embedding ---
// ptrain_embedding_fwd_f32(table[vocab, dim], ids[n], n, vocab, dim, out_y[n, dim])
//   y[i] = table[ids[i]]; an id outside [0, vocab) is an INVALID_ARGUMENT
//   error naming the position (out_y is then unspecified).
// ptrain_embedding_bwd_f32(dy[n, dim], ids[n], n, vocab, dim, out_dtable[vocab, dim])
//   Scatter-add: dtable[ids[i]] += dy[i]. ACCUMULATES into out_dtable, so the
//   caller zeroes it (ptrain_fill_f32) once per step, and tied weights (token
//   embedding and LM head) can add both contributions.
//
// --- Multi-head attention, composed from GEMM and softmax ---
// ptrain_attention_fwd_f32(q, k, v, batch, heads, seq, head_dim, scale, causal,
//                          out_o, out_probs)
//   q, k, v, out_o: [batch, heads, seq, head_dim]; out_probs: [batch, heads,
//   seq, seq], saved for the backward. P = softmax(scale * Q K^T [+ causal
//   mask]), O = P V (Vaswani et al. 2017, eq. 1; scale is usually
//   1/sqrt(head_dim)).
// ptrain_attention_bwd_f32(d_o, q, k, v, probs, batch, heads, seq, head_dim,
//                          scale, workspace, out_dq, out_dk, out_dv)
//   workspace: [batch, heads, seq, seq] scratch. dV = P^T dO; dP = dO V^T;
//   dS = softmax_bwd(dP, P); dQ = scale * dS K; dK = scale * dS^T Q. The mask
//   is carried by P (masked P = 0), so no causal flag is needed.
//
// --- Cross-entropy over the vocabulary ---
// ptrain_cross_entropy_fwd_f32(logits[n, vocab], targets[n], n, vocab,
//                              out_loss, out_lse[n])
//   loss = mean over rows with targets[i] >= 0 of (lse_i - logits[i, t_i]),
//   lse_i = log sum_j exp(logits[i, j]) (saved). A negative target is ignored
//   (padding); a target >= vocab is an INVALID_ARGUMENT error. With no counted
//   row the loss is 0. Accumulated in fp64.
// ptrain_cross_entropy_bwd_f32(dloss, logits, targets, lse, n, vocab,
//                              out_dlogits[n, vocab])
//   dlogits[i] = dloss * (softmax(logits[i]) - onehot(t_i)) / count for
//   counted rows, 0 for ignored rows.
// ptrain_cross_entropy_weighted_fwd_f32(logits, targets, weights, n, vocab,
//     has_ignore_index, ignore_index, reduction_sum, out_loss, out_lse[n])
//   `ptrain.cross_entropy` with its options: w_i = weights[t_i] (weights
//   [vocab], or NULL for 1), w_i = 0 where has_ignore_index and
//   t_i == ignore_index; loss = sum(w nll) / sum(w) (reduction_sum == 0; NaN
//   when sum(w) == 0, as torch) or sum(w nll). Any other target outside
//   [0, vocab) is an INVALID_ARGUMENT error.
// ptrain_cross_entropy_weighted_bwd_f32(dloss, logits, targets, weights, lse,
//     n, vocab, has_ignore_index, ignore_index, reduction_sum, out_dlogits)
//   dlogits[i] = dloss * w_i * (softmax(logits[i]) - onehot(t_i)) / sum(w)
//   (mean) or without the division (sum); 0 for ignored rows.
//
// --- Optimizers, in place ---
// ptrain_adamw_step_f32(param[n], grad[n], exp_avg[n], exp_avg_sq[n], n, step,
//                       lr, beta1, beta2, eps, weight_decay)
//   AdamW (Loshchilov, Hutter 2019, "Decoupled Weight Decay Regularization",
//   Algorithm 2), in the form of torch.optim.AdamW: step t >= 1 (1-based);
//   p -= lr * wd * p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
//   Per element, in fp32 and in this order (no FMA: -ffp-contract=off):
//   m = b1 m + (1 - b1) g; v = b2 v + ((1 - b2) g) g;
//   p = p decay - (step_size m) / (sqrt(v) inv_sqrt_bc2 + eps), with the
//   coefficients of ptrain_adamw_coefficients_f32.
// ptrain_adamw_coefficients_f32(step, lr, beta1, beta2, weight_decay,
//                               out_coefficients[3])
//   The per-call factors of ptrain_adamw_step_f32, for a kernel that performs
//   its element loop elsewhere (the compiler's generated AdamW kernels,
//   docs/GeneratedKernels.md): out_coefficients = {decay = 1 - lr wd (fp32),
//   step_size = (float) (lr / bc1), inv_sqrt_bc2 = (float) (1 / sqrt(bc2))},
//   bc_i = 1 - beta_i^t in fp64 (std::pow). The same checks of step and the
//   betas as ptrain_adamw_step_f32.
// ptrain_sgd_step_f32(param[n], grad[n], momentum_buf[n] or NULL, n, lr,
//                     momentum, weight_decay)
//   g' = g + wd * p; with momentum_buf: buf = momentum * buf + g', p -= lr * buf
//   (buf starts at 0, so step 1 uses buf = g', as torch.optim.SGD without
//   dampening); without: p -= lr * g'. momentum_buf may be NULL only when
//   momentum == 0.
// ptrain_lr_warmup_cosine(step, warmup_steps, total_steps, max_lr, min_lr, out_lr)
//   step is 0-based. step < warmup: lr = max_lr * (step + 1) / warmup (linear
//   warm-up, Goyal et al. 2017); else progress p = (step - warmup) / (total -
//   warmup) clamped to [0, 1] and lr = min_lr + (max_lr - min_lr) * (1 +
//   cos(pi p)) / 2 (cosine decay, Loshchilov, Hutter 2017, "SGDR", eq. 5).
//   Requires 0 <= warmup <= total, total > 0.
//
// --- Codecs with fused error feedback (cpu/codecs/; DESIGN.md decision 4) ---
// Every encoder takes an optional `residual` (the error-feedback state e, the
// input's shape; NULL = no error feedback). With it, the encoder codes
// v = g + e and leaves e = v - decode(code) (Karimireddy et al., ICML 2019;
// Optimus-CC's lazy error propagation, sec. 4.2), in the same pass over
// memory where the codec allows; without it, it codes g. On an error return
// the residual may hold g + e. Parameters match the dialect's codec
// attributes (PTrainAttrs.td); sizes are element counts.
//
// ptrain_powersgd_encode_f32(g, residual, q_state, batch, n, m, rank, seed,
//                            out_p, out_q)
//   PowerSGD, one power step (Vogels et al., NeurIPS 2019, Algorithm 1) on
//   each of `batch` n x m matrices (g [batch, n, m], row-major):
//   P = M Q0, P = orth(P) (modified Gram-Schmidt; a zero column stays zero,
//   so an all-zero gradient gives zeros, not NaN), Q = M^T P; codes
//   out_p [batch, n, rank], out_q [batch, m, rank]; decode M' = P Q^T.
//   q_state [batch, m, rank] is the warm-start Q (#ptrain.powersgd
//   warm_start): Q0 = q_state, updated to the new Q (out_q may alias it);
//   an all-zero column of it (a fresh state) is redrawn N(0, 1) from `seed`.
//   With q_state NULL, Q0 is drawn from `seed` on every call. rank must be in
//   [1, min(n, m)] (INVALID_ARGUMENT otherwise: 4 on a 4 x 3 matrix is
//   rejected). Exact path: when (n + m) rank >= n m (1-D tensors, n = 1,
//   included) the codes carry M itself, row-major, in P's storage and then
//   Q's (rest zero); decode returns it exactly, e becomes 0, q_state is
//   untouched. GEMMs through cblas_sgemm (fp32; tested within 1e-4 relative
//   of an fp64 reference).
// ptrain_powersgd_decode_f32(p, q, batch, n, m, rank, out[batch, n, m])
//   out = P Q^T per batch entry (exact path: the carried M).
// ptrain_powersgd_phase_p_f32(g, residual, q_state, batch, n, m, rank, seed,
//                             out_p, out_q)
// ptrain_powersgd_phase_q_f32(mat, batch, n, m, rank, p, out_q)
// ptrain_powersgd_finish_f32(p, q, batch, n, m, rank, alpha, beta, out,
//                            residual, q_state)
//   The encode split where data-parallel PowerSGD all-reduces (Vogels et
//   al., Algorithm 2), for a lowering that expands a compressed all-reduce
//   into phases: phase_p forms M = g + e (into residual, when given) and
//   P = M Q0 (exact path: M into out_p and out_q); [all-reduce P];
//   phase_q orthogonalizes P in place and computes out_q = M^T P, with `mat`
//   M's storage (residual, or g without error feedback; untouched on the
//   exact path); [all-reduce Q]; finish writes out = alpha P Q^T (when out is
//   not NULL), residual = M - beta P Q^T (exact path: 0) and q_state = beta Q
//   (not on the exact path). Data-parallel: beta = 1 / N, alpha = 1 (sum) or
//   1 / N (avg); one party: alpha = beta = 1 gives ptrain_powersgd_encode_f32
//   followed by ptrain_powersgd_decode_f32.
// ptrain_topk_encode_f32(g[n], residual, n, k, out_values[k], out_indices[k])
//   Global top-k by magnitude (Bian et al., MLSys 2024): the k largest |v|,
//   ties at the k-th magnitude to the smaller index (NaN ranks above inf);
//   indices (int32, n <= INT32_MAX) ascending. Radix select on the fp32 bit
//   patterns, three passes over memory. 1 <= k <= n.
// ptrain_topk_decode_f32(values[k], indices[k], k, n, out[n])
//   out = 0, out[indices[j]] = values[j]; an index outside [0, n) is an
//   INVALID_ARGUMENT error naming it.
// ptrain_randk_indices(seed, counter, n, k, out_indices[k])
//   The k distinct positions rand-k keeps for (seed, counter), ascending:
//   SplitMix64 seeded with seed ^ (0x9E3779B97F4A7C15 * (counter + 1)),
//   uniform integers by Lemire's multiply-shift, Floyd's sampling
//   (cpu/codecs/RandK.cpp has the exact rule, for other targets).
// ptrain_randk_encode_f32(g[n], residual, n, k, seed, counter, out_values[k])
// ptrain_randk_decode_f32(values[k], n, k, seed, counter, out[n])
//   Rand-k with a seed shared by sender and receiver: only values travel.
//   `counter` (int64, the codec's state on both sides) selects the
//   positions and is incremented by one. Decode zero-fills the rest.
// ptrain_quant_encode_f32(g, residual, rows, cols, bits, granularity,
//                         block_size, symmetric, out_packed, out_scales,
//                         out_zero_points)
//   Uniform round-to-nearest-even quantization of the rows x cols tensor to
//   bits in {2, 4, 8}, one scale per tensor, per column (channel) or per
//   block_size consecutive elements (block_size >= 1 exactly for block);
//   S = 1, cols or ceil(rows cols / block_size) scales. Symmetric: s =
//   amax / (2^(bits-1) - 1), code u = rn(v / s) + 2^(bits-1), decode
//   (u - 2^(bits-1)) s. Asymmetric: s = (max - min) / (2^bits - 1), zero
//   point min, u = rn((v - min) / s), decode u s + min (out_zero_points [S],
//   NULL when symmetric). v / s is v * (1 / s); s = 0 codes a constant group
//   exactly. Packed LSB first, element i at bit (i bits) % 8 of byte
//   (i bits) / 8: out_packed has ceil(rows cols bits / 8) bytes. A group
//   with an inf or NaN (in g + residual) is coded as a non-finite group:
//   scale and zero point NaN (0x7fc00000), codes 0, residual NaN, so its
//   decode is NaN (fp16's loss scaler then skips the step; common/
//   QuantScale.h); the other groups are coded as usual. Not an error.
// ptrain_quant_decode_f32(packed, scales, zero_points, rows, cols, bits,
//                         granularity, block_size, symmetric, out)
// ptrain_tahquant_encode_f32(g[numel], residual, numel, tile_size, low_bits,
//                            high_bits, high_tiles, out_packed, out_scales,
//                            out_zero_points, out_flags)
//   TAH-Quant (He et al., arXiv 2506.01352, sec. 3; cpu/codecs/TahQuant.h
//   has the exact rule): T = numel / tile_size tiles of tile_size in
//   {8, 16, 32, 64} consecutive elements; the high_tiles (in [0, T]) tiles
//   of largest magnitude entropy take high_bits, the others low_bits
//   (1 <= low_bits <= high_bits <= 8); a tile whose largest |x| is at least
//   twice the others' is pivot-swapped and Walsh-Hadamard rotated; then
//   asymmetric round-to-nearest-even per tile. Codes: out_packed
//   [tile_size (high_tiles high_bits + (T - high_tiles) low_bits) / 8],
//   out_scales [T], out_zero_points [T] (f32), out_flags [T] (bits 0-5
//   pivot, 6 rotated, 7 high). A tile with an inf or NaN (in g + residual)
//   is a non-finite tile: entropy 0 for the bit allocation, not rotated,
//   scale and zero point NaN (0x7fc00000), codes 0, residual NaN (its decode
//   is NaN, as quantization's non-finite group). Not an error.
// ptrain_tahquant_decode_f32(packed, scales, zero_points, flags, numel,
//                            tile_size, low_bits, high_bits, high_tiles,
//                            out[numel])
//   Flags marking other than high_tiles high tiles, or a pivot outside the
//   tile, are an INVALID_ARGUMENT error.
// ptrain_cast_encode_f32(g[n], residual, n, dtype, out_code[n])
// ptrain_cast_decode_f32(code[n], n, dtype, out[n])
//   fp32 <-> PTRAIN_DTYPE_F16 or PTRAIN_DTYPE_BF16 (uint16_t codes), round
//   to nearest even; overflow gives inf, NaN stays NaN (payload may differ).
//   F16C instructions when the CPU has them, identical codes otherwise.
//
// --- Any codec through a descriptor (cpu/codecs/Codec.cpp) ---
// A ptrain_codec_t names a codec instance; its codes are serialized back to
// back into one byte buffer, each section 8-byte aligned: powersgd P then
// Q; topk values then int32 indices; randk values (topk and randk values are
// value_dtype: 4 bytes each for f32, 2 for bf16 and f16); quant packed bytes,
// scales, zero points (asymmetric); cast the 16-bit codes; tahquant packed
// bytes, scales, zero points, flags (bits = high_bits, k = high_tiles). `state` is the
// PowerSGD warm-start Q (float [batch, cols, rank]; required when
// warm_start) or the rand-k counter (int64_t *); NULL for the others.
// Summable codes (powersgd, randk, cast) are reduced in compressed form by
// ptrain_compressed_all_reduce_start; topk and quant are gathered. randk
// with 16-bit values is gathered too (OpenMPI has no 16-bit sum): every
// rank's values are widened and added in rank order in fp32, the same sum
// on every rank, 2 k bytes handed to MPI per rank instead of 4 k.
// ptrain_compressed_reduce_scatter_start(comm, codec, input[size numel],
//                                        residual[size numel], out[numel], op,
//                                        out_request)
//   ZeRO-1's compressed bucket reduce-scatter (docs/DistributedOptimizer.md):
//   the codec describes one chunk (numel = the elements each rank keeps;
//   quantization only). Each chunk j of input is encoded alone (with chunk j
//   of residual for error feedback, updated at the start; NULL: none), one
//   MPI_Ialltoall hands rank j every rank's code of chunk j, and the wait
//   decodes and adds them in rank order into out (avg: times 1 / size).
//   Counted as size x code bytes per chunk in the collective traffic.
// ptrain_codec_code_bytes(codec, out_bytes)     the serialized code size
// ptrain_codec_encode(codec, input, residual, state, out_code)
// ptrain_codec_decode(codec, code, state, out)
//   The per-codec calls above on the descriptor's tensor (numel = batch
//   rows cols); an invalid descriptor is an INVALID_ARGUMENT error naming
//   the field. With value_dtype bf16 or f16 (topk, randk) the encode selects
//   on the fp32 input (g + e with error feedback) as with f32 values, then
//   rounds each kept value to nearest even; the residual gets what the
//   rounding lost (e'[i] = v[i] - widen(round(v[i])) at the kept positions,
//   exact in fp32), so e' = g + e - decode(code) as for f32 values. The
//   decode widens the values exactly. Any other value_dtype, or a 16-bit one
//   on another codec, is an INVALID_ARGUMENT error naming value_dtype.
//
// --- Codec telemetry (cpu/codecs/Metrics.cpp) ---
// ptrain_codec_metrics_f32(g[n], residual[n], new_residual[n], decoded[n],
//                          previous_g[n], n, out_g_copy[n], out_metrics)
//   One fused pass (fp64 sums) over what a codec site's encode read and
//   wrote: g its gradient input, residual the error-feedback residual before
//   the encode (e_old; NULL without error feedback), and exactly one of
//   new_residual (e_new, with error feedback: v - decode = e_new) or decoded
//   (decode(encode(g)), without). previous_g (may be NULL) is g of the
//   site's previous encode; out_g_copy (may be NULL, may equal previous_g:
//   element i is read before it is written) receives g for the next call.
//   out_metrics: ||v||, the relative codec error, ||e_new|| and the lazy
//   error propagation health metric cos(e_old, previous_g - g) (Optimus-CC,
//   Song et al. 2023, section 4.2: e_old is e_k, the residual the previous
//   encode left; previous_g - g is x_k - x_{k+1}). None of the pointers but
//   out_g_copy / previous_g may alias.
//
// --- Keyed state: ONNX initial values and checkpoints ---
// ptrain_state_init_onnx(states[n], n, onnx_path)
//   Every PTRAIN_STATE_PARAMETER state is read from the initializer named by
//   its key in the ONNX model at onnx_path (inline data or external data
//   relative to the model's folder), which must have the state's element type
//   (FLOAT for F32, INT64 for I64) and shape; every other state is zeroed.
//   A parameter the model does not hold gets its default when `init` is not
//   PTRAIN_STATE_INIT_NONE (orthogonal: rank-2 f32, include/ptrain/Runtime/
//   StateInit.h; the same bits on every rank and in the interpreter), and is
//   an error naming the file and key otherwise.
//   Parsed with protobuf's bool-returning API. Errors name the file and key;
//   on error no state is modified.
// ptrain_checkpoint_save(states[n], n, path)
//   Writes every state by key (format in docs/CodegenCpu.md: magic
//   "PTRNCKPT", version, a header of (key, dtype, kind, shape, byte offset,
//   byte size), the data, and an FNV-1a 64 checksum of all preceding bytes).
//   Written to path + ".tmp" and renamed, so a failure leaves no partial file.
// ptrain_checkpoint_load(states[n], n, path)
//   Reads a checkpoint written by ptrain_checkpoint_save: the checksum must
//   match, every state must be present with its dtype and shape, and the file
//   must hold no other key. On error no state is modified.
// ptrain_checkpoint_save_ranks(comm, states[n], n, dir)
//   Collective over comm: every rank writes dir/rank-<5-digit rank>.ckpt with
//   ptrain_checkpoint_save (its parameters, moments, codec residuals and
//   warm-start Q, counters, data position: every state it passes), then
//   rank 0 writes dir/manifest (text: "ptrain-checkpoint-manifest 1",
//   "ranks N", one "rank r file bytes checksum" line per rank) through a
//   temporary file and a rename, after an all-gather shows every file
//   complete. dir is created if missing. A rank that fails reports to all.
// ptrain_checkpoint_load_ranks(comm, states[n], n, dir)
//   Reads the manifest (same number of ranks, else an INVALID_ARGUMENT error
//   pointing to ptrain_checkpoint_load_resharded), checks this rank's
//   file against its listed size and checksum, then ptrain_checkpoint_load.
// ptrain_checkpoint_load_resharded(comm, states[n], n, dir, pp, out_report,
//                                  report_bytes)
//   Loads a ranked checkpoint written over (dp, pp) into this rank of a
//   (dp', pp) grid, rank = replica * pp + stage (DESIGN.md decision 5):
//   states replicated across replicas (parameters, moments, counters, data
//   position, codec seeds, warm-start Q) come from the stage's old replica 0;
//   a data-parallel codec residual becomes the mean of the old replicas'; a
//   pipeline-link codec residual (key "pp<s>-><t>/...") is reset to zero.
//   out_report[report_bytes] receives one line per state not copied verbatim
//   (NUL-terminated, may be NULL with 0 bytes): the driver prints it. Same
//   degree: exactly ptrain_checkpoint_load_ranks. Every file is checked
//   against the manifest; on error no state is modified.
//
// --- Communicators (cpu: MPI) ---
// ptrain_comm_init(out_comm)
//   Initializes MPI if needed (MPI_THREAD_FUNNELED) and returns a duplicate of
//   MPI_COMM_WORLD with MPI_ERRORS_RETURN. Reads the deadline from the
//   environment variable PTRAIN_COMM_TIMEOUT_S (seconds, > 0; default 300); a
//   malformed value is an INVALID_ARGUMENT error. Collective over the world.
// ptrain_comm_create_group(parent, ranks[num_ranks], num_ranks, out_comm)
//   A sub-communicator of the listed parent ranks, in that order (the new rank
//   of parent rank ranks[i] is i), via MPI_Comm_create_group. Collective over
//   the listed ranks only; the caller must be one of them and every member
//   must pass the same list. Create them all up front: the call blocks.
//   Inherits the parent's deadline.
// ptrain_comm_destroy(comm)
//   Frees the communicator. When the last communicator is destroyed and
//   ptrain_comm_init initialized MPI, MPI is finalized. Requests must have
//   completed; an operation that ptrain_wait left inside MPI after a deadline
//   error is freed here if MPI has completed it since (else it stays
//   allocated: MPI may still write into it).
// ptrain_comm_rank / ptrain_comm_size(comm, out)      this process's rank / the size
// ptrain_comm_timeout / ptrain_comm_set_timeout(comm, seconds)
//                                                     read / override the deadline (> 0)
// ptrain_comm_abort(comm, error_code)
//   MPI_Abort: ends every rank of the job. The recovery after a deadline
//   error (the role of ncclCommAbort on GPU).
// ptrain_comm_set_step(step)
//   The training step the driver is in (>= 0; -1: none, the default), for
//   the process: every deadline, MPI and size-mismatch message of ptrain_wait
//   and every debug-mode mismatch then ends its operation with " at step N".
// ptrain_comm_p2p_traffic(comm, peer, out_bytes, out_messages)
//   The bytes and messages this rank has sent to rank `peer` of comm since
//   its creation or the last reset: every ptrain_send_start and
//   ptrain_compressed_send_start (its serialized code), counted when posted.
// ptrain_comm_collective_traffic(comm, out_bytes, out_operations)
//   The bytes of this rank's buffer in every collective MPI call on comm
//   (all-reduce count x element size, all-gather its send count; each phase
//   of a compressed all-reduce: P, Q or the gathered codes) and the number of
//   collective operations started. A ring all-reduce moves 2 (N - 1) / N of
//   its count in each direction, an all-gather (N - 1) / N of the result.
// ptrain_comm_reset_traffic(comm)                     zeroes both counters
//
// --- torchrun-style rendezvous (no MPI; docs/Runtime.md, "Rendezvous") ---
// ptrain_rendezvous_init(rank, world_size, master_addr, master_port,
//                        timeout_s, out_rendezvous)
//   Rank 0 listens on master_port (every IPv4 interface) until the other
//   world_size - 1 ranks have connected to master_addr:master_port; they
//   retry a refused connection until timeout_s. Errors: an unreachable master
//   or a missing rank past timeout_s (DEADLINE_EXCEEDED naming the address or
//   the missing ranks), another WORLD_SIZE or a rank seen twice (MISMATCH,
//   reported to the master and to every rank that joined).
// ptrain_rendezvous_init_env(timeout_s, out_rendezvous)
//   The same from torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; a
//   missing or malformed variable is INVALID_ARGUMENT naming it. timeout_s <= 0
//   reads PTRAIN_COMM_TIMEOUT_S (default 300).
// ptrain_rendezvous_rank(rendezvous, out_rank, out_world_size)
// ptrain_rendezvous_all_gather(rendezvous, data, num_bytes, out)
//   out[world_size * num_bytes] = every rank's data in rank order; every rank
//   passes the same num_bytes (else MISMATCH on all ranks). Collective; each
//   call is bounded by the timeout.
// ptrain_rendezvous_broadcast(rendezvous, data, num_bytes, root)
//   data = root's data on every rank (the NCCL unique id from rank 0).
// ptrain_rendezvous_destroy(rendezvous)               closes the connections
//
// --- Nonblocking operations and the deadline ---
// ptrain_send_start(comm, buf, num_bytes, peer, tag, out_request)
// ptrain_recv_start(comm, buf, num_bytes, peer, tag, out_request)
//   Point-to-point transfer of num_bytes bytes (<= INT32_MAX) to/from rank
//   peer of comm. buf must stay valid until ptrain_wait returns. A received
//   message of another size is a MISMATCH error at wait (shorter) or a COMM
//   error (longer: MPI truncation).
// ptrain_all_reduce_start(comm, send_buf, recv_buf, count, dtype, op, out_request)
//   recv_buf[count] = reduction over comm's ranks of send_buf[count];
//   send_buf == recv_buf reduces in place. AVG divides by the size at wait.
// ptrain_all_reduce_start also sums PTRAIN_DTYPE_F16 and PTRAIN_DTYPE_BF16
//   buffers (uint16_t): OpenMPI has no 16-bit float type, so a user-defined
//   MPI_Op adds each pair in fp32 and rounds once to nearest even (partial
//   sums are 16-bit; a sum past the type's range is inf).
// ptrain_all_reduce_half_start(comm, send_buf, recv_buf, count, dtype, out_request)
//   The 16-bit all-reduce with an fp32 sum (`ptrain.tp_all_reduce
//   {accumulate = f32}`, docs/MixedPrecision.md "16-bit TP collectives"):
//   send_buf and recv_buf hold count bf16 or f16 values (uint16_t; dtype
//   PTRAIN_DTYPE_BF16 or PTRAIN_DTYPE_F16); recv_buf[i] = the values of ranks
//   0..n-1 widened, added in fp32 in rank order and rounded once to nearest
//   even: the same bits on every rank and in the multi-rank executor. An
//   all-to-all of 16-bit chunks, then an all-gather of the summed chunks
//   (cpu/HalfAllReduce.cpp): 2 (n - 1) / n of the buffer in 2 bytes an
//   element. send_buf may equal recv_buf. Errors: INVALID_ARGUMENT for another
//   dtype, a count outside [0, INT_MAX - n] or null buffers.
// ptrain_all_gather_start(comm, send_buf, recv_buf, count, dtype, out_request)
//   recv_buf[size * count] = every rank's send_buf[count] in rank order; any
//   dtype (moved as bytes).
// ptrain_reduce_scatter_start(comm, send_buf, recv_buf, count, dtype, op,
//                             out_request)
//   recv_buf[count] = block `rank` of the reduction of send_buf[size *
//   count] (MPI_Ireduce_scatter_block); dtypes and AVG as all-reduce.
// ptrain_barrier_start(comm, out_request)               nonblocking barrier
// ptrain_wait(request)
//   Completes the request and frees it, whatever the outcome. It polls
//   MPI_Test until the communicator's deadline; past it, it cancels what MPI
//   can cancel (receives) and returns PTRAIN_ERROR_DEADLINE_EXCEEDED with a
//   message naming the operation, the peer (or communicator size), the tag and
//   the byte count. Never hangs longer than the deadline; never prints.
//   A multi-phase operation that MPI still holds past the deadline is handed
//   to its communicator, which frees it (ptrain_comm_destroy).
//
// --- Vocabulary-parallel embedding and loss (cpu/VocabParallel.cpp) ---
// Megatron-LM's VocabParallelEmbedding and _VocabParallelCrossEntropy
// (Shoeybi et al. 2019, sec. 3; PTrainVocabParallelOps.td): rank `part` of
// `parts` holds rows [part rows, (part + 1) rows) of the padded vocabulary.
// fp64 sums and exponentials, rounded once (the interpreter's results).
// ptrain_vocab_parallel_embedding_fwd_f32(table[rows, dim], ids[n], n, rows,
//                                         dim, part, parts, out_y[n, dim])
//   out_y[i] = table[ids[i] - part rows] for ids in the rank's rows, else 0;
//   an id outside [0, rows parts) is INVALID_ARGUMENT.
// ptrain_vocab_parallel_embedding_bwd_f32(dy[n, dim], ids[n], n, rows, dim,
//                                         part, parts, out_dtable[rows, dim])
//   out_dtable = the sum of dy[i] into row ids[i] - part rows for the rank's
//   ids (zero elsewhere; written whole, no zeroing needed).
// ptrain_vocab_parallel_ce_parts_fwd_f32(logits[n, cols], labels[n], max[n],
//                                        n, cols, vocab, part, parts,
//                                        out_sum_exp[n], out_target[n])
//   sum_exp = sum over the rank's columns c with part cols + c < vocab of
//   exp(logits[i, c] - max[i]); target = logits[i, label - part cols] - max[i]
//   for a label in the rank's columns, else 0. Labels in [0, vocab).
// ptrain_vocab_parallel_ce_parts_bwd_f32(d_sum_exp[n], d_target[n], logits,
//                                        labels, max, n, cols, vocab, part,
//                                        parts, out_dlogits[n, cols])
//   d_sum_exp exp(logits - max) on the real columns (0 on padded ones), plus
//   d_target at the label's column.
// ptrain_all_gather_dim(comm, x, dtype, rank, dims, dim, out)
//   Blocking all-gather along dimension `dim` (ptrain.tp_all_gather): out has
//   dims with dims[dim] times comm's size, the ranks' blocks in rank order
//   (F32 or I64; ptrain_all_gather_start + ptrain_wait, its deadline).
//===----------------------------------------------------------------------===*/

#define PTRAIN_RUNTIME_CALL(name, ret, params) PTRAIN_RUNTIME_API ret name params;
#include "ptrain/Runtime/RuntimeCalls.def"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTRAIN_RUNTIME_PTRAIN_RUNTIME_H */
