//===- RankedCheckpoint.cpp - One checkpoint file per rank plus a manifest ===//
//
// A checkpoint of a multi-rank run is a directory:
//
//   <dir>/rank-00000.ckpt ...   one ptrain_checkpoint_save file per rank of
//                               the communicator (its keyed states: params,
//                               optimizer moments, codec residuals and
//                               warm-start Q, counters, the data position)
//   <dir>/manifest              text, written last by rank 0:
//       ptrain-checkpoint-manifest 1
//       ranks <N>
//       rank <r> <file name> <bytes> <FNV-1a 64 of the file, 16 hex digits>
//
// Every file is written to a temporary name and renamed, and the manifest is
// written only after every rank's file is complete (an all-gather of their
// sizes and checksums), so a directory with a manifest is a whole checkpoint
// and a crash mid-save leaves the previous manifest's files untouched only
// if the caller saves into a fresh directory (DESIGN.md decision 5).
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"
#include "cpu/RankedCheckpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <sys/stat.h>

using ptrain::runtime::fail;

namespace {
/// All-gathers (bytes, checksum) of every rank's file.
ptrain_status_t gatherSummaries(ptrain_comm_t comm, int64_t bytes, uint64_t checksum, int64_t *all) {
  int64_t mine[2] = {bytes, static_cast<int64_t>(checksum)};
  ptrain_request_t req = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain_all_gather_start(comm, mine, all, 2, PTRAIN_DTYPE_I64, &req));
  return ptrain_wait(req);
}
} // namespace

extern "C" ptrain_status_t ptrain_checkpoint_save_ranks(ptrain_comm_t comm, const ptrain_state_desc_t *states,
                                                        int64_t num_states, const char *dir) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(dir);
  if (::mkdir(dir, 0777) != 0 && errno != EEXIST)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: cannot create the directory: %s", dir,
                std::strerror(errno));
  char name[32], path[4096];
  std::snprintf(name, sizeof(name), "rank-%05d.ckpt", comm->rank);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::joinPath(__func__, dir, name, path, sizeof(path)));
  // Every rank saves, then reports; a failure on one rank still joins the
  // gather (with bytes = -1), so no rank waits for a rank that gave up.
  ptrain_status_t saved = ptrain_checkpoint_save(states, num_states, path);
  char savedError[512] = "";
  int64_t bytes = -1;
  uint64_t checksum = 0;
  if (saved == PTRAIN_OK)
    saved = ptrain::runtime::fileSummary(__func__, path, &bytes, &checksum);
  if (saved != PTRAIN_OK) {
    std::snprintf(savedError, sizeof(savedError), "%s", ptrain_last_error());
    bytes = -1;
  }
  int64_t *all = new (std::nothrow) int64_t[2 * comm->size];
  if (!all)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "manifest entries");
  ptrain_status_t st = gatherSummaries(comm, bytes, checksum, all);
  if (st == PTRAIN_OK && saved != PTRAIN_OK)
    st = fail(saved, __func__, "%s", savedError);
  for (int r = 0; st == PTRAIN_OK && r < comm->size; ++r)
    if (all[2 * r] < 0)
      st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "rank %d could not write its checkpoint file; no manifest "
                "written in %s",
                r, dir);
  if (st == PTRAIN_OK && comm->rank == 0) {
    char manifest[4096], tmp[4200];
    st = ptrain::runtime::joinPath(__func__, dir, "manifest", manifest, sizeof(manifest));
    std::snprintf(tmp, sizeof(tmp), "%s.tmp", manifest);
    FILE *f = st == PTRAIN_OK ? std::fopen(tmp, "w") : nullptr;
    if (st == PTRAIN_OK && !f)
      st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: cannot open for writing", tmp);
    if (f) {
      bool ok = std::fprintf(f, "%s 1\nranks %d\n", ptrain::runtime::kManifestMagic, comm->size) > 0;
      for (int r = 0; r < comm->size; ++r)
        ok = ok && std::fprintf(f, "rank %d rank-%05d.ckpt %lld %016llx\n", r, r, static_cast<long long>(all[2 * r]),
                                static_cast<unsigned long long>(static_cast<uint64_t>(all[2 * r + 1]))) > 0;
      ok = std::fclose(f) == 0 && ok;
      if (!ok || std::rename(tmp, manifest) != 0) {
        std::remove(tmp);
        st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: cannot write the manifest", manifest);
      }
    }
  }
  delete[] all;
  if (st != PTRAIN_OK)
    return st;
  // No rank returns before the manifest exists.
  ptrain_request_t req = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain_barrier_start(comm, &req));
  return ptrain_wait(req);
}


extern "C" ptrain_status_t ptrain_checkpoint_load_ranks(ptrain_comm_t comm, const ptrain_state_desc_t *states,
                                                        int64_t num_states, const char *dir) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(dir);
  int ranks = 0;
  ptrain::runtime::ManifestEntry entry;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readManifest(__func__, dir, -1, &ranks, &entry));
  if (ranks != comm->size)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "%s/manifest: written by %d ranks, loaded by %d; this call restores "
                "the same layout (another data-parallel degree: "
                "ptrain_checkpoint_load_resharded)",
                dir, ranks, comm->size);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::readManifest(__func__, dir, comm->rank, &ranks, &entry));
  char path[4096];
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkRankFile(__func__, dir, entry, path, sizeof(path)));
  return ptrain_checkpoint_load(states, num_states, path);
}
