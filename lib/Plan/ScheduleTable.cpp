//===- ScheduleTable.cpp - steps of a per-stage pipeline schedule --*- C++ -*-===//

#include "ptrain/Plan/ScheduleTable.h"

#include <algorithm>

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
