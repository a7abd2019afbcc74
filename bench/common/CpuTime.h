//===- CpuTime.h - The benchmarks' thread CPU time ---------------*- C++ -*-===//
//
// On the shared machine (2 cores, several engineers) wall time measures the wait for a core; the benchmark
// scripts time in this thread's CPU time instead (CLOCK_THREAD_CPUTIME_ID).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_BENCH_COMMON_CPUTIME_H
#define PTRAIN_BENCH_COMMON_CPUTIME_H

#include <algorithm>
#include <ctime>

namespace ptrain::bench {

/// The thread's CPU time in ms (CLOCK_THREAD_CPUTIME_ID): on a shared machine the time this thread ran, not
/// the time it waited for the core.
inline double threadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/// The best of `reps` runs of `f`, in thread CPU time (ms).
template <typename F> double bestMs(int reps, F &&f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = threadCpuMs();
    f();
    best = std::min(best, threadCpuMs() - t0);
  }
  return best;
}

} // namespace ptrain::bench

#endif // PTRAIN_BENCH_COMMON_CPUTIME_H
