//===- CpuIsa.h - The vectorized kernels' instruction-set paths -*- C++ -*-===//
//
// The GELU, softmax and cross-entropy kernels (cpu/Gelu.cpp, cpu/Softmax.cpp,
// cpu/CrossEntropy.cpp) are compiled three times from one inline body: for
// the baseline x86-64 ISA (SSE2, two fp64 lanes), for AVX2 plus FMA (four;
// Intel's AVX2 CPUs since Haswell and AMD's since Zen have both; FMA makes the
// bf16 GEMM emulation's std::fmaf one instruction) and for AVX-512
// F/DQ/VL/BW (eight), with explicit __attribute__((target)) clones.
// Which one runs is chosen once per process: PTRAIN_CPU_ISA=baseline|avx2|
// avx512 forces a path (an unknown value, or one the CPU cannot run, is an
// INVALID_ARGUMENT error of every such kernel call); unset, empty or "auto"
// takes the widest the CPU runs. ptrain_cpu_set_isa overrides it for the
// process (the unit tests run every path in one process).
//
// A fourth path, avx512bf16 (AVX-512 plus AVX512-BF16), runs the avx512 clone
// of these kernels and the bf16 GEMM's VDPBF16PS kernel (cpu/GemmBf16.cpp);
// every narrower path runs that GEMM's exact emulation of the instruction.
//
// All paths give the same bits: the bodies are the same sequence of IEEE
// operations (fp64 sums in a fixed order, no reassociation), and the files
// are compiled with -ffp-contract=off, so no clone fuses a multiply and an
// add (AVX-512F has FMA instructions even without -mfma);
// unittests/Runtime/CpuIsaTest.cpp checks it for every path the CPU runs.
//
// target_clones (an ifunc the loader resolves) would pick the same clone but
// could not be forced, which is what a test of both paths on one machine
// needs (issue 20; docs/Runtime.md, "Kernel paths").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CPUISA_H
#define PTRAIN_RUNTIME_CPU_CPUISA_H

#include "common/Status.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTRAIN_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define PTRAIN_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
#define PTRAIN_TARGET_AVX512BF16 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx512bf16")))
#else
#define PTRAIN_TARGET_AVX2
#define PTRAIN_TARGET_AVX512
#define PTRAIN_TARGET_AVX512BF16
#endif

/// A kernel body every clone inlines, so that it is compiled for the clone's ISA.
#define PTRAIN_KERNEL_BODY inline __attribute__((always_inline))

namespace ptrain::runtime {

/// The kernel paths, narrowest first.
enum class CpuIsa : int { Baseline = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3 };

/// "baseline", "avx2", "avx512" or "avx512bf16".
const char *cpuIsaName(CpuIsa isa);

/// Whether this CPU (and its OS, for the vector registers' state) runs `isa`.
bool cpuSupports(CpuIsa isa);

/// The path the kernels take: ptrain_cpu_set_isa's, else PTRAIN_CPU_ISA's
/// (read once per process), else the widest the CPU runs. A bad
/// PTRAIN_CPU_ISA is an INVALID_ARGUMENT error naming `call`, the variable,
/// its value and the paths this CPU runs.
ptrain_status_t selectedCpuIsa(const char *call, CpuIsa &out);

/// The three clones of the kernel body `Body` and the call through the
/// selected one: `return IsaClones<body>::call(__func__, args...)`.
template <auto Body> struct IsaClones;
template <typename... A, ptrain_status_t (*Body)(A...)> struct IsaClones<Body> {
  static ptrain_status_t baseline(A... a) { return Body(a...); }
  PTRAIN_TARGET_AVX2 static ptrain_status_t avx2(A... a) { return Body(a...); }
  PTRAIN_TARGET_AVX512 static ptrain_status_t avx512(A... a) { return Body(a...); }

  static ptrain_status_t call(const char *call, A... a) {
    CpuIsa isa = CpuIsa::Baseline;
    PTRAIN_RETURN_IF_ERROR(selectedCpuIsa(call, isa));
    switch (isa) {
    case CpuIsa::Avx512Bf16: // these kernels have no bf16 arithmetic: the avx512 clone
    case CpuIsa::Avx512:
      return avx512(a...);
    case CpuIsa::Avx2:
      return avx2(a...);
    case CpuIsa::Baseline:
      break;
    }
    return baseline(a...);
  }
};

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CPUISA_H
