//===- LinkCost.cpp - the time of a message on a link, by size -----------===//

#include "ptrain/Analysis/LinkCost.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir::ptrain;

double LinkCost::message(double bytes, bool duplex) const {
  const double b = bytes * sharers;
  const std::vector<MessageTime> &table =
      duplex && !spec.duplexMessages.empty() ? spec.duplexMessages : spec.messages;
  if (table.empty())
    return spec.latency + b / spec.bandwidth;
  if (b >= table.back().bytes)
    return table.back().seconds + (b - table.back().bytes) / spec.bandwidth;
  MessageTime lo{0, spec.latency};
  for (const MessageTime &hi : table) {
    if (b <= hi.bytes)
      return lo.seconds + (hi.seconds - lo.seconds) * (b - lo.bytes) / (hi.bytes - lo.bytes);
    lo = hi;
  }
  return table.back().seconds; // unreachable: b < table.back().bytes
}

double LinkCost::messages(double count, double sentBytes) const {
  if (count <= 0)
    return sentBytes * sharers / spec.bandwidth;
  return count * (message(sentBytes / count, /*duplex=*/true) + 2 * overhead(sentBytes / count));
}

/// The time of a measured collective of b bytes (already times the sharers) from its table: the first entry's
/// time below it, the interpolation between entries, and above the last entry its time plus what `model` (the
/// price from messages, of bytes per GPU) adds from the last size to b.
template <typename Model>
static double measuredCollective(const std::vector<MessageTime> &table, double b, double sharers, Model model) {
  if (b <= table.front().bytes)
    return table.front().seconds;
  if (b >= table.back().bytes)
    return table.back().seconds + model(b / sharers) - model(table.back().bytes / sharers);
  for (size_t i = 1; i < table.size(); ++i)
    if (b <= table[i].bytes) {
      const MessageTime &lo = table[i - 1], &hi = table[i];
      return lo.seconds + (hi.seconds - lo.seconds) * (b - lo.bytes) / (hi.bytes - lo.bytes);
    }
  return table.back().seconds; // unreachable: b < table.back().bytes
}

double LinkCost::allReduce(double bytes, int64_t n) const {
  if (n <= 1 || spec.allReduces.empty() || n != spec.collectiveRanks)
    return allReduceFromMessages(bytes, n);
  return measuredCollective(spec.allReduces, bytes * sharers, sharers,
                            [&](double b) { return allReduceFromMessages(b, n); });
}

double LinkCost::allGather(double bytes, int64_t n) const {
  auto fromMessages = [&](double b) { return n <= 1 ? 0.0 : messages(n - 1.0, (n - 1.0) * b); };
  if (n <= 1 || spec.allGathers.empty() || n != spec.collectiveRanks)
    return fromMessages(bytes);
  return measuredCollective(spec.allGathers, bytes * sharers, sharers, fromMessages);
}

double LinkCost::allToAll(double bytes, int64_t n) const {
  auto fromMessages = [&](double b) { return n <= 1 ? 0.0 : messages(n - 1.0, (n - 1.0) / n * b); };
  if (!hasAllToAllTable(n))
    return fromMessages(bytes);
  return measuredCollective(spec.allToAlls, bytes * sharers, sharers, fromMessages);
}

double LinkCost::allReduceFromMessages(double bytes, int64_t n) const {
  if (n <= 1)
    return 0;
  if (binomial)
    return 2.0 * std::ceil(std::log2(static_cast<double>(n))) * (message(bytes) + 2 * overhead(bytes));
  return messages(2.0 * (n - 1), 2.0 * (n - 1) / n * bytes);
}

double LinkCost::reduceScatter(double bytes, int64_t n) const {
  if (n <= 1)
    return 0;
  return messages(n - 1.0, static_cast<double>(n - 1) / n * bytes);
}

std::vector<MessageTime> mlir::ptrain::fitMessageTimes(std::vector<MessageTime> samples) {
  llvm::stable_sort(samples, [](const MessageTime &a, const MessageTime &b) { return a.bytes < b.bytes; });
  // Blocks of the pool-adjacent-violators algorithm: each block's mean time and weight (number of samples); a
  // block spans the sizes first..last of `sizes`.
  struct Block {
    double mean, weight;
    size_t first, last;
  };
  std::vector<double> sizes;
  std::vector<Block> blocks;
  for (size_t i = 0; i < samples.size();) {
    size_t j = i;
    double sum = 0;
    while (j < samples.size() && samples[j].bytes == samples[i].bytes)
      sum += samples[j++].seconds;
    sizes.push_back(samples[i].bytes);
    blocks.push_back({sum / (j - i), static_cast<double>(j - i), sizes.size() - 1, sizes.size() - 1});
    // Pool while the previous block's mean is above this one's.
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean > blocks.back().mean) {
      Block b = blocks.back();
      blocks.pop_back();
      Block &a = blocks.back();
      a.mean = (a.mean * a.weight + b.mean * b.weight) / (a.weight + b.weight);
      a.weight += b.weight;
      a.last = b.last;
    }
    i = j;
  }
  std::vector<MessageTime> fit;
  for (const Block &b : blocks)
    for (size_t k = b.first; k <= b.last; ++k)
      fit.push_back({sizes[k], b.mean});
  return fit;
}

CpuOverhead mlir::ptrain::fitCpuOverhead(const std::vector<MessageTime> &samples) {
  if (samples.empty())
    return {};
  const double n = samples.size();
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const MessageTime &s : samples) {
    sx += s.bytes;
    sy += s.seconds;
    sxx += s.bytes * s.bytes;
    sxy += s.bytes * s.seconds;
  }
  const double mean = sy / n, denominator = n * sxx - sx * sx;
  CpuOverhead fit{mean, 0};
  if (denominator > 0) {
    fit.perByte = (n * sxy - sx * sy) / denominator;
    fit.perMessage = (sy - fit.perByte * sx) / n;
  }
  if (fit.perByte < 0)
    fit = {mean, 0};
  if (fit.perMessage < 0)
    fit = {0, sxx > 0 ? sxy / sxx : 0};
  fit.perMessage = std::max(0.0, fit.perMessage);
  fit.perByte = std::max(0.0, fit.perByte);
  return fit;
}

std::vector<MessageTime> mlir::ptrain::eagerOverheadSamples(const std::vector<MessageTime> &samples,
                                                            double pingpongBytes, double eagerLimitBytes) {
  LinkSpec spec;
  spec.eagerLimitBytes = eagerLimitBytes;
  const LinkCost link(spec);
  std::vector<MessageTime> out;
  for (const MessageTime &m : samples)
    if (m.bytes < pingpongBytes && !link.isRendezvous(m.bytes))
      out.push_back(m);
  return out;
}
