//===- ScheduleTable.cpp - steps of a per-stage pipeline schedule --*- C++ -*-===//

#include "ptrain/Transforms/ScheduleTable.h"

#include <algorithm>
#include <limits>

using namespace mlir::ptrain;

std::string ScheduleStep::str() const {
  std::string suffix = chunk > 0 ? "." + std::to_string(chunk) : "";
  switch (kind) {
  case Forward:
    return "F" + std::to_string(microBatch) + suffix;
  case Backward:
    return "B" + std::to_string(microBatch) + suffix;
  case ForwardBackward:
    return "FB" + std::to_string(microBatch) + suffix;
  case Optimizer:
    return "O";
  }
  return "";
}

std::optional<ScheduleStep> ScheduleStep::parse(llvm::StringRef text) {
  if (text == "O")
    return ScheduleStep{Optimizer, -1, 0};
  ScheduleStep step{Forward, -1, 0};
  if (text.consume_front("FB"))
    step.kind = ForwardBackward;
  else if (text.consume_front("F"))
    step.kind = Forward;
  else if (text.consume_front("B"))
    step.kind = Backward;
  else
    return std::nullopt;
  auto [number, chunk] = text.split('.');
  if (number.getAsInteger(10, step.microBatch))
    return std::nullopt;
  if (text.contains('.') && (chunk.getAsInteger(10, step.chunk) || step.chunk < 0))
    return std::nullopt;
  return step;
}

std::optional<ScheduleTableRows> mlir::ptrain::buildScheduleTable(llvm::StringRef kind, int64_t p, int64_t v, int64_t m,
                                                                  std::string &error) {
  if (p < 1 || v < 1 || m < 1) {
    error = "stages, virtual stages and micro-batches must be >= 1, got " + std::to_string(p) + ", " +
            std::to_string(v) + ", " + std::to_string(m);
    return std::nullopt;
  }
  const bool interleaved = kind == "interleaved";
  if (!interleaved && kind != "gpipe" && kind != "1f1b") {
    error = "schedule must be gpipe, 1f1b or interleaved, got '" + kind.str() + "'";
    return std::nullopt;
  }
  if (!interleaved && v != 1) {
    error = "the " + kind.str() + " schedule runs one model chunk per stage, but the pipeline has " +
            std::to_string(v) + " virtual stages per stage (use schedule=interleaved)";
    return std::nullopt;
  }
  if (interleaved && (v < 2 || p < 2)) {
    error = "the interleaved schedule needs pp >= 2 and virtual stages >= 2 (--ptrain-split-stages "
            "virtual-stages=V), got pp = " +
            std::to_string(p) + ", virtual stages = " + std::to_string(v);
    return std::nullopt;
  }
  if (interleaved && m % p != 0) {
    error = "the interleaved schedule needs micro-batches to be a multiple of pp (chunks advance in groups of pp "
            "micro-batches; Megatron-LM), got " +
            std::to_string(m) + " micro-batches for pp = " + std::to_string(p);
    return std::nullopt;
  }
  using Step = ScheduleStep;
  ScheduleTableRows table(p);
  for (int64_t s = 0; s < p; ++s) {
    std::vector<Step> &steps = table[s];
    if (interleaved) {
      const int64_t total = m * v;
      int64_t warmup = m == p ? total : std::min(total, (p - s - 1) * 2 + (v - 1) * p);
      auto microBatchOf = [&](int64_t k) { return (k / (p * v)) * p + k % p; };
      auto forward = [&](int64_t k) {
        int64_t chunk = (k % (p * v)) / p;
        bool fused = s == p - 1 && chunk == v - 1;
        steps.push_back({fused ? Step::ForwardBackward : Step::Forward, microBatchOf(k), chunk});
      };
      auto backward = [&](int64_t k) {
        int64_t chunk = v - 1 - (k % (p * v)) / p;
        if (!(s == p - 1 && chunk == v - 1)) // Fused into the forward's FB step.
          steps.push_back({Step::Backward, microBatchOf(k), chunk});
      };
      for (int64_t k = 0; k < warmup; ++k)
        forward(k);
      for (int64_t k = 0; k < total - warmup; ++k) {
        forward(warmup + k);
        backward(k);
      }
      for (int64_t k = total - warmup; k < total; ++k)
        backward(k);
    } else if (s == p - 1) {
      for (int64_t i = 0; i < m; ++i)
        steps.push_back({Step::ForwardBackward, i, 0});
    } else if (kind == "gpipe") {
      for (int64_t i = 0; i < m; ++i)
        steps.push_back({Step::Forward, i, 0});
      for (int64_t i = 0; i < m; ++i)
        steps.push_back({Step::Backward, i, 0});
    } else {
      int64_t warmup = std::min(p - s - 1, m);
      for (int64_t i = 0; i < warmup; ++i)
        steps.push_back({Step::Forward, i, 0});
      for (int64_t i = 0; i < m - warmup; ++i) {
        steps.push_back({Step::Forward, warmup + i, 0});
        steps.push_back({Step::Backward, i, 0});
      }
      for (int64_t i = m - warmup; i < m; ++i)
        steps.push_back({Step::Backward, i, 0});
    }
    steps.push_back({Step::Optimizer, -1, 0});
  }
  return table;
}

std::optional<ScheduleTiming> mlir::ptrain::simulateScheduleTable(const ScheduleTableRows &table, int64_t p, int64_t v,
                                                                  int64_t m, double forwardCost, double backwardCost,
                                                                  double forwardBackwardCost, std::string &stuck) {
  using Step = ScheduleStep;
  const int64_t c = p * v;
  const double never = std::numeric_limits<double>::infinity();
  // forwardEnd[vs][i], backwardEnd[vs][i]: when virtual stage vs finished micro-batch i (infinity: not yet).
  std::vector<std::vector<double>> forwardEnd(c, std::vector<double>(m, never)),
      backwardEnd(c, std::vector<double>(m, never));
  ScheduleTiming timing;
  timing.start.resize(p);
  timing.end.resize(p);
  timing.idle.assign(p, 0.0);
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0.0), busy(p, 0.0);
  auto inRange = [&](const Step &step) {
    return step.kind == Step::Optimizer ||
           (step.microBatch >= 0 && step.microBatch < m && step.chunk >= 0 && step.chunk < v);
  };
  // When the step's dependency is done, or infinity.
  auto readyAt = [&](int64_t s, const Step &step) -> double {
    int64_t vs = step.chunk * p + s;
    switch (step.kind) {
    case Step::Forward:
    case Step::ForwardBackward:
      return vs == 0 ? 0.0 : forwardEnd[vs - 1][step.microBatch];
    case Step::Backward:
      return vs == c - 1 ? forwardEnd[vs][step.microBatch] : backwardEnd[vs + 1][step.microBatch];
    case Step::Optimizer: {
      double all = 0;
      for (int64_t t = 0; t < p; ++t) {
        if (next[t] + 1 < table[t].size())
          return never;
        all = std::max(all, clock[t]);
      }
      return all;
    }
    }
    return never;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < p; ++s) {
      while (next[s] < table[s].size()) {
        const Step &step = table[s][next[s]];
        if (!inRange(step)) {
          stuck = "stage " + std::to_string(s) + " step " + step.str() + " is out of range";
          return std::nullopt;
        }
        double ready = readyAt(s, step);
        if (ready == never)
          break;
        double begin = std::max(clock[s], ready);
        double cost = step.kind == Step::Forward           ? forwardCost
                      : step.kind == Step::Backward        ? backwardCost
                      : step.kind == Step::ForwardBackward ? forwardBackwardCost
                                                           : 0.0;
        double finish = begin + cost;
        int64_t vs = step.chunk * p + s;
        if (step.kind == Step::Forward || step.kind == Step::ForwardBackward)
          forwardEnd[vs][step.microBatch] = finish;
        if (step.kind == Step::Backward || step.kind == Step::ForwardBackward)
          backwardEnd[vs][step.microBatch] = finish;
        if (step.kind != Step::Optimizer) {
          busy[s] += cost;
          timing.makespan = std::max(timing.makespan, finish);
        }
        timing.start[s].push_back(begin);
        timing.end[s].push_back(finish);
        clock[s] = finish;
        ++next[s];
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < p; ++s)
    if (next[s] < table[s].size())
      stuck += (stuck.empty() ? "" : ", ") + ("stage " + std::to_string(s) + " at " + table[s][next[s]].str());
  if (!stuck.empty())
    return std::nullopt;
  for (int64_t s = 0; s < p; ++s)
    timing.idle[s] = timing.makespan - busy[s];
  return timing;
}
