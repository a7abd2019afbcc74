//===- CpuIsa.cpp - Choosing the vectorized kernels' ISA path -------------===//
//
// PTRAIN_CPU_ISA and ptrain_cpu_isa / ptrain_cpu_set_isa (cpu/CpuIsa.h).
//
//===----------------------------------------------------------------------===//

#include "cpu/CpuIsa.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ptrain::runtime {
namespace {

constexpr const char *kEnv = "PTRAIN_CPU_ISA";
constexpr CpuIsa kAll[] = {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16};

/// The widest path this CPU runs.
CpuIsa widest() {
  CpuIsa best = CpuIsa::Baseline;
  for (CpuIsa isa : kAll)
    if (cpuSupports(isa))
      best = isa;
  return best;
}

/// "baseline, avx2, avx512": the paths this CPU runs, for messages.
void supportedList(char *out, size_t size) {
  out[0] = '\0';
  for (CpuIsa isa : kAll)
    if (cpuSupports(isa))
      std::snprintf(out + std::strlen(out), size - std::strlen(out), "%s%s", out[0] ? ", " : "", cpuIsaName(isa));
}

/// Parses a path's name (unset, "" or "auto": the widest) and checks that the CPU runs it; on failure
/// `message` says why, naming `what` (the variable or the call's argument).
ptrain_status_t parse(const char *what, const char *name, CpuIsa &out, char *message, size_t size) {
  if (!name || !*name || std::strcmp(name, "auto") == 0) {
    out = widest();
    return PTRAIN_OK;
  }
  char supported[96];
  supportedList(supported, sizeof(supported));
  for (CpuIsa isa : kAll) {
    if (std::strcmp(name, cpuIsaName(isa)) != 0)
      continue;
    if (!cpuSupports(isa)) {
      std::snprintf(message, size, "%s = '%s': this CPU does not run that kernel path (it runs: %s)", what, name,
                    supported);
      return PTRAIN_ERROR_INVALID_ARGUMENT;
    }
    out = isa;
    return PTRAIN_OK;
  }
  std::snprintf(message, size, "%s = '%s' is not a kernel path: use baseline, avx2, avx512, avx512bf16 or auto "
                "(this CPU runs: %s)", what, name, supported);
  return PTRAIN_ERROR_INVALID_ARGUMENT;
}

/// PTRAIN_CPU_ISA, read once (a thread-safe static).
struct EnvSelection {
  ptrain_status_t status = PTRAIN_OK;
  CpuIsa isa = CpuIsa::Baseline;
  char message[256] = "";
};

const EnvSelection &envSelection() {
  static const EnvSelection selection = [] {
    EnvSelection s;
    s.status = parse(kEnv, std::getenv(kEnv), s.isa, s.message, sizeof(s.message));
    return s;
  }();
  return selection;
}

/// ptrain_cpu_set_isa's path, or -1 (none: PTRAIN_CPU_ISA's).
std::atomic<int> forced{-1};

} // namespace

const char *cpuIsaName(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Avx512Bf16:
    return "avx512bf16";
  case CpuIsa::Avx512:
    return "avx512";
  case CpuIsa::Avx2:
    return "avx2";
  case CpuIsa::Baseline:
    break;
  }
  return "baseline";
}

bool cpuSupports(CpuIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // libgcc's / compiler-rt's CPU model also checks that the OS saves the YMM / ZMM state (XGETBV).
  __builtin_cpu_init();
  switch (isa) {
  case CpuIsa::Avx512Bf16:
    return cpuSupports(CpuIsa::Avx512) && __builtin_cpu_supports("avx512bf16");
  case CpuIsa::Avx512:
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  case CpuIsa::Avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case CpuIsa::Baseline:
    return true;
  }
  return false;
#else
  return isa == CpuIsa::Baseline;
#endif
}

ptrain_status_t selectedCpuIsa(const char *call, CpuIsa &out) {
  const int f = forced.load(std::memory_order_relaxed);
  if (f >= 0) {
    out = static_cast<CpuIsa>(f);
    return PTRAIN_OK;
  }
  const EnvSelection &s = envSelection();
  if (s.status != PTRAIN_OK)
    return fail(s.status, call, "%s", s.message);
  out = s.isa;
  return PTRAIN_OK;
}

} // namespace ptrain::runtime

using namespace ptrain::runtime;

extern "C" ptrain_status_t ptrain_cpu_isa(const char **out_name) {
  PTRAIN_CHECK_PTR(out_name);
  CpuIsa isa = CpuIsa::Baseline;
  PTRAIN_RETURN_IF_ERROR(selectedCpuIsa(__func__, isa));
  *out_name = cpuIsaName(isa);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cpu_set_isa(const char *name) {
  if (!name) {
    forced.store(-1, std::memory_order_relaxed);
    return PTRAIN_OK;
  }
  CpuIsa isa = CpuIsa::Baseline;
  char message[256];
  if (ptrain_status_t status = parse("name", name, isa, message, sizeof(message)))
    return fail(status, __func__, "%s", message);
  forced.store(static_cast<int>(isa), std::memory_order_relaxed);
  return PTRAIN_OK;
}
