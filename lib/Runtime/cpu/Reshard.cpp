//===- Reshard.cpp - Loading a ranked checkpoint at another DP degree -----===//
//
// DESIGN.md decision 5's resharding rules for a checkpoint written by
// ptrain_checkpoint_save_ranks over a (dp, pp) grid (rank = replica * pp +
// stage) and loaded over (dp', pp), the same pipeline split:
//
//   parameters, optimizer moments, gradient accumulators, step counters and
//   the data position, codec seeds/counters, PowerSGD warm-start Q
//       replicated across data-parallel replicas: copied from the stage's
//       old replica 0 ("warm-start Q is copied");
//   a data-parallel codec residual (any CODEC_RESIDUAL whose key is not a
//   pipeline link's)
//       the mean of the stage's old replicas' residuals (in fp64): the
//       pending error of the averaged update is kept;
//   a pipeline-link codec residual (key "pp<s>-><t>/...", CompressionPlan's
//   linkStateKey)
//       reset to zero: it is the error of one replica's stream of
//       micro-batches, and each replica's micro-batches change with the DP
//       degree.
//
// Every state not copied verbatim is named in the report, one line each; the
// caller (the driver) prints it, since the runtime never prints.
//
//===----------------------------------------------------------------------===//

#include "common/StateTable.h"
#include "cpu/Comm.h"
#include "cpu/RankedCheckpoint.h"

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

using ptrain::runtime::fail;

namespace {
/// "pp<digits>-><digits>/": a pipeline link's state (linkStateKey).
bool isLinkKey(const char *key) {
  if (std::strncmp(key, "pp", 2) != 0)
    return false;
  const char *p = key + 2;
  if (!std::isdigit(static_cast<unsigned char>(*p)))
    return false;
  while (std::isdigit(static_cast<unsigned char>(*p)))
    ++p;
  if (p[0] != '-' || p[1] != '>' || !std::isdigit(static_cast<unsigned char>(p[2])))
    return false;
  p += 2;
  while (std::isdigit(static_cast<unsigned char>(*p)))
    ++p;
  return *p == '/';
}

enum class Rule { Copy, Mean, Reset };

Rule ruleOf(const ptrain_state_desc_t &s) {
  if (s.kind != PTRAIN_STATE_CODEC_RESIDUAL)
    return Rule::Copy;
  return isLinkKey(s.key) ? Rule::Reset : Rule::Mean;
}

/// Appends a line to the caller's report, always NUL-terminated, truncated
/// (with "...") when it does not fit.
struct Report {
  char *buf;
  int64_t size;
  int64_t used = 0;
  void add(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (!buf || size <= 0 || used >= size - 1)
      return;
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf + used, static_cast<size_t>(size - used), fmt, ap);
    va_end(ap);
    if (n < 0)
      return;
    if (used + n >= size - 1) {
      used = size - 1;
      if (size >= 4)
        std::memcpy(buf + size - 4, "...", 4);
    } else {
      used += n;
    }
  }
};

/// A table of the same keys, dtypes and shapes over owned scratch memory.
struct ScratchTable {
  std::vector<ptrain_state_desc_t> desc;
  std::vector<std::unique_ptr<char[]>> data;
  bool init(const ptrain_state_desc_t *states, int64_t n, const int64_t *bytes) {
    desc.assign(states, states + n);
    data.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      data[i].reset(new (std::nothrow) char[bytes[i] > 0 ? bytes[i] : 1]);
      if (!data[i])
        return false;
      desc[i].data = data[i].get();
    }
    return true;
  }
};

/// Loads the checkpoint file of old rank `oldRank` into `table`.
ptrain_status_t loadOldRank(const char *call, const char *dir, int oldRank, ScratchTable &table) {
  int ranks = 0;
  ptrain::runtime::ManifestEntry entry;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readManifest(call, dir, oldRank, &ranks, &entry));
  char path[4096];
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkRankFile(call, dir, entry, path, sizeof(path)));
  return ptrain_checkpoint_load(table.desc.data(), static_cast<int64_t>(table.desc.size()), path);
}
} // namespace

extern "C" ptrain_status_t ptrain_checkpoint_load_resharded(ptrain_comm_t comm, const ptrain_state_desc_t *states,
                                                            int64_t num_states, const char *dir, int32_t pp,
                                                            char *out_report, int64_t report_bytes) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(dir);
  PTRAIN_CHECK_SIZE(report_bytes);
  PTRAIN_CHECK_ARG(out_report || report_bytes == 0, "'out_report' must not be null when report_bytes > 0");
  if (out_report && report_bytes > 0)
    out_report[0] = '\0';
  PTRAIN_CHECK_ARG(pp >= 1 && comm->size % pp == 0,
                   "pp = %d must divide the communicator's %d ranks (rank = replica * pp + stage)", pp, comm->size);
  ptrain::runtime::StateBytes bytesOwner;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkStateTable(__func__, states, num_states, bytesOwner));
  const int64_t *bytes = bytesOwner.get();
  for (int64_t i = 0; i < num_states; ++i)
    PTRAIN_CHECK_ARG(ruleOf(states[i]) == Rule::Copy || states[i].dtype == PTRAIN_DTYPE_F32,
                     "codec residual '%s' must be f32", states[i].key);
  int oldRanks = 0;
  ptrain::runtime::ManifestEntry unused;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readManifest(__func__, dir, -1, &oldRanks, &unused));
  if (oldRanks % pp != 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "%s: written by %d ranks, which pp = %d does not divide: another pipeline split cannot be "
                "resharded",
                dir, oldRanks, pp);
  if (oldRanks == comm->size)
    return ptrain_checkpoint_load_ranks(comm, states, num_states, dir);

  const int oldDp = oldRanks / pp, newDp = comm->size / pp, stage = comm->rank % pp;
  ScratchTable first, other;
  if (!first.init(states, num_states, bytes) || (oldDp > 1 && !other.init(states, num_states, bytes)))
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "a copy of the state table");
  PTRAIN_RETURN_IF_ERROR(loadOldRank(__func__, dir, stage, first));
  // Sums of the data-parallel residuals over the old replicas, in fp64.
  std::vector<std::vector<double>> sums(static_cast<size_t>(num_states));
  for (int64_t i = 0; i < num_states; ++i) {
    if (ruleOf(states[i]) != Rule::Mean)
      continue;
    const float *v = static_cast<const float *>(first.desc[i].data);
    sums[i].assign(v, v + bytes[i] / 4);
  }
  for (int replica = 1; replica < oldDp; ++replica) {
    PTRAIN_RETURN_IF_ERROR(loadOldRank(__func__, dir, replica * pp + stage, other));
    for (int64_t i = 0; i < num_states; ++i) {
      const float *v = static_cast<const float *>(other.desc[i].data);
      for (size_t k = 0; k < sums[i].size(); ++k)
        sums[i][k] += v[k];
    }
  }
  // Every file is read and checked: now the step's states change.
  Report report{out_report, report_bytes};
  for (int64_t i = 0; i < num_states; ++i) {
    const ptrain_state_desc_t &s = states[i];
    switch (ruleOf(s)) {
    case Rule::Copy:
      std::memcpy(s.data, first.desc[i].data, static_cast<size_t>(bytes[i]));
      break;
    case Rule::Mean: {
      float *out = static_cast<float *>(s.data);
      for (size_t k = 0; k < sums[i].size(); ++k)
        out[k] = static_cast<float>(sums[i][k] / oldDp);
      report.add("averaged '%s' (data-parallel codec residual) over the %d old replicas of stage %d (dp %d -> %d)\n",
                 s.key, oldDp, stage, oldDp, newDp);
      break;
    }
    case Rule::Reset:
      std::memset(s.data, 0, static_cast<size_t>(bytes[i]));
      report.add("reset '%s' to zero (pipeline-link codec residual: each replica's micro-batches change with the "
                 "data-parallel degree, dp %d -> %d)\n",
                 s.key, oldDp, newDp);
      break;
    }
  }
  return PTRAIN_OK;
}
