//===- EmitTraffic.cpp - Bytes per link in the generated step -------------===//

#include "Common/EmitTraffic.h"

#include "Common/EmitHelpers.h"
#include "Common/RuntimeCallTable.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain::target;

namespace {
const char *name(RuntimeCall call) { return getRuntimeCallInfo(call).name; }
} // namespace

SmallVector<TrafficGroup> mlir::ptrain::target::trafficGroups(const CommGroups &comms) {
  SmallVector<TrafficGroup> traffic;
  GridOp grid = comms.theGrid;
  for (const CommGroups::Group &g : comms.groups) {
    TrafficGroup t{g.var, {}, g.subAxis >= 0};
    for (auto [d, in] : llvm::enumerate(g.inGroup)) {
      if (!in)
        continue;
      t.axes.push_back(cast<StringAttr>(grid.getAxisNames()[d]).getValue().str());
      if (static_cast<int64_t>(d) == g.subAxis)
        t.axes.back() += "{" + joinInts(g.members) + "}";
    }
    traffic.push_back(t);
  }
  return traffic;
}

void mlir::ptrain::target::emitTrafficEntryPoints(ArrayRef<TrafficGroup> groups, llvm::raw_ostream &s) {
  emitTrafficEntryPoints(groups, s,
                         {name(RuntimeCall::ptrain_comm_size), name(RuntimeCall::ptrain_comm_p2p_traffic),
                          name(RuntimeCall::ptrain_comm_collective_traffic),
                          name(RuntimeCall::ptrain_comm_reset_traffic)});
}

void mlir::ptrain::target::emitTrafficEntryPoints(ArrayRef<TrafficGroup> groups, llvm::raw_ostream &s,
                                               const TrafficCalls &calls) {
  SmallVector<std::string> links;
  std::string local; // the body of localTraffic
  for (const TrafficGroup &g : groups) {
    const std::string base = std::to_string(2 * links.size());
    if (g.axes.size() == 1 && g.axes[0] == "pp") {
      local +=
          "  {\n    int32_t size = 0;\n    PTRAIN_STEP_CALL(" + std::string(calls.size) + "(" + g.var + ", &size));\n";
      local += "    if (ptrain_stage + 1 < size)\n      PTRAIN_STEP_CALL(" + std::string(calls.p2p) + "(" + g.var +
               ", ptrain_stage + 1, &out[" + base + "], &out[" + base + " + 1]));\n";
      local += "    if (ptrain_stage > 0)\n      PTRAIN_STEP_CALL(" + std::string(calls.p2p) + "(" + g.var +
               ", ptrain_stage - 1, &out[" + base + " + 2], &out[" + base + " + 3]));\n";
      local += "    PTRAIN_STEP_CALL(" + std::string(calls.collective) + "(" + g.var + ", &out[" + base +
               " + 4], &out[" + base + " + 5]));\n  }\n";
      // A channel's communicator holds its two stages ordered by stage: the peer is rank 0 or 1 of it.
      for (const TrafficGroup::Channel &c : g.p2pChannels) {
        const std::string link = c.to > c.from ? base : base + " + 2";
        local += "  if (" + c.var + " && ptrain_stage == " + std::to_string(c.from) +
                 ") {\n    int64_t bytes = 0, messages = 0;\n    PTRAIN_STEP_CALL(" + std::string(calls.p2p) + "(" +
                 c.var + ", " + (c.to < c.from ? "0" : "1") + ", &bytes, &messages));\n    out[" + link +
                 "] += bytes;\n    out[" + link + " + 1] += messages;\n  }\n";
      }
      links.append({"pp forward", "pp backward", "pp collectives"});
      continue;
    }
    std::string axes;
    for (const std::string &a : g.axes)
      axes += (axes.empty() ? "" : " x ") + a;
    local += std::string(g.subgroup ? "  if (" + g.var + ")\n  " : "") + "  PTRAIN_STEP_CALL(" +
             std::string(calls.collective) + "(" + g.var + ", &out[" + base + "], &out[" + base + " + 1]));\n";
    links.push_back(axes + " collectives");
  }
  s << "//===--- Traffic per link: the runtime's counters of this rank's communicators ---===//\n\n";
  s << "namespace {\n\n";
  s << "/// Links: \"pp forward\" = point-to-point to stage + 1, \"pp backward\" = to stage - 1, \"<axes> "
       "collectives\" = the\n/// collectives of that communicator (payload of this rank's buffers).\n";
  s << "constexpr int64_t kNumLinks = " << links.size() << ";\n";
  s << "const char *const kLinkNames[kNumLinks] = {";
  for (auto [i, l] : llvm::enumerate(links))
    s << (i ? ", " : "") << '"' << l << '"';
  s << "};\n\n";
  s << "/// out[2 link] = bytes and out[2 link + 1] = messages (collective operations) this rank sent on each "
       "link.\nptrain_status_t localTraffic(int64_t *out) {\n";
  s << "  for (int64_t i = 0; i < 2 * kNumLinks; ++i)\n    out[i] = 0;\n" << local << "  return PTRAIN_OK;\n}\n\n";
  s << "} // namespace\n\n";
  s << "/// The number of links ptrain_step_traffic reports, and the name of link `link` (NULL when out of range).\n";
  s << "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_links(void) { return kNumLinks; }\n";
  s << "extern \"C\" PTRAIN_STEP_API const char *ptrain_step_link_name(int64_t link) {\n"
       "  return link >= 0 && link < kNumLinks ? kLinkNames[link] : nullptr;\n}\n\n";
  s << "/// Collective over every rank: out_counts[(rank kNumLinks + link) 2] = the bytes and [... + 1] the messages\n"
       "/// that rank sent on the link since ptrain_step_init or ptrain_step_reset_traffic (kWorldSize kNumLinks 2\n"
       "/// entries; the counters are the runtime's, docs/Runtime.md).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_traffic(int64_t *out_counts) {\n";
  const std::string noWorld = calls.rendezvousGather ? "!ptrain_world && !ptrain_bootstrap" : "!ptrain_world";
  s << "  if (" << noWorld << ")\n    return stepError(\"ptrain_step_traffic: call ptrain_step_init first\");\n";
  s << "  if (!out_counts)\n    return stepError(\"ptrain_step_traffic: null out_counts\");\n";
  s << "  int64_t local[2 * kNumLinks];\n  PTRAIN_STEP_CALL(localTraffic(local));\n";
  if (calls.rendezvousGather)
    s << "  if (ptrain_bootstrap) { // a torchrun-style launch: the rendezvous' TCP all-gather, rank-major\n"
      << "    PTRAIN_STEP_CALL(" << calls.rendezvousGather << "(ptrain_bootstrap, local, sizeof(local), out_counts));\n"
      << "    return PTRAIN_OK;\n  }\n";
  s << "  ptrain_request_t request = nullptr;\n";
  s << "  PTRAIN_STEP_CALL(" << name(RuntimeCall::ptrain_all_gather_start)
    << "(ptrain_world, local, out_counts, 2 * kNumLinks, PTRAIN_DTYPE_I64, &request));\n";
  s << "  PTRAIN_STEP_CALL(" << name(RuntimeCall::ptrain_wait) << "(request));\n  return PTRAIN_OK;\n}\n\n";
  s << "/// Zeroes this rank's counters of every link.\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_reset_traffic(void) {\n";
  s << "  if (" << noWorld << ")\n    return stepError(\"ptrain_step_reset_traffic: call ptrain_step_init first\");\n";
  for (const TrafficGroup &g : groups) {
    s << (g.subgroup ? "  if (" + g.var + ")\n  " : std::string()) << "  PTRAIN_STEP_CALL(" << calls.reset << "("
      << g.var << "));\n";
    for (const TrafficGroup::Channel &c : g.p2pChannels)
      s << "  if (" << c.var << ")\n    PTRAIN_STEP_CALL(" << calls.reset << "(" << c.var << "));\n";
  }
  s << "  return PTRAIN_OK;\n}\n\n";
}
