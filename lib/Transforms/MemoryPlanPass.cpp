//===- MemoryPlanPass.cpp - --ptrain-memory-plan ---------------------*- C++ -*-===//
//
// --ptrain-memory-plan: see the pass description in Passes.td and the
// analysis in include/ptrain/Analysis/MemoryPlan.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/MemoryPlan.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "ptrain-memory-plan"

namespace mlir::ptrain {
#define GEN_PASS_DEF_MEMORYPLANPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
constexpr int64_t kAlignment = 64; // the emitters' arena alignment

std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format(u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return s;
}

/// The plan's fields, by name, in the order of the attribute and the JSON.
SmallVector<std::pair<StringRef, int64_t>> fieldsOf(const RankMemoryPlan &p) {
  SmallVector<std::pair<StringRef, int64_t>> fields{{"peak_bytes", p.peakBytes()},
                                                    {"state_bytes", p.stateBytes()},
                                                    {"parameter_bytes", p.parameterBytes},
                                                    {"gradient_bytes", p.gradientBytes},
                                                    {"optimizer_bytes", p.optimizerBytes},
                                                    {"codec_bytes", p.codecBytes},
                                                    {"other_state_bytes", p.otherStateBytes},
                                                    {"stash_bytes", p.stashBytes},
                                                    {"max_stashed", p.maxStashed},
                                                    {"temporaries_bytes", p.temporariesBytes},
                                                    {"eval_bytes", p.evalBytes},
                                                    {"allocated_bytes", p.allocatedBytes}};
  // Only in 16-bit pipelines: fp32 plans keep their fields.
  if (p.parameterCopyBytes)
    fields.push_back({"parameter_copy_bytes", p.parameterCopyBytes});
  return fields;
}

struct MemoryPlanPass : ptrain::impl::MemoryPlanPassBase<MemoryPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::vector<RankMemoryPlan>> plans = buildMemoryPlan(module, kAlignment);
    if (failed(plans))
      return signalPassFailure();
    Builder b(module.getContext());
    llvm::json::Array ranks;
    for (const RankMemoryPlan &p : *plans) {
      auto step = module.lookupSymbol<func::FuncOp>("stage" + std::to_string(p.stage) + "_train_step");
      SmallVector<NamedAttribute> attrs;
      llvm::json::Object rank{{"stage", p.stage}, {"temporaries_function", p.temporariesFunction}};
      for (auto [name, value] : fieldsOf(p)) {
        attrs.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
        rank[name] = value;
      }
      attrs.push_back(b.getNamedAttr("temporaries_function", b.getStringAttr(p.temporariesFunction)));
      step->setAttr("ptrain.memory_plan", b.getDictionaryAttr(attrs));
      ranks.push_back(std::move(rank));
      emitRemark(step.getLoc()) << "memory plan of stage " << p.stage << ": peak " << humanBytes(p.peakBytes())
                                << " = states " << humanBytes(p.stateBytes()) << " + stash " << humanBytes(p.stashBytes)
                                << " (" << p.maxStashed << " micro-batches at once) + temporaries "
                                << humanBytes(p.temporariesBytes) << " (@" << p.temporariesFunction << ")";
      if (annotate) {
        FunctionMemoryPlan fp = planFunctionMemory(step, kAlignment);
        llvm::DenseMap<Value, int64_t> offsets;
        for (auto [v, buf] : llvm::zip(fp.values, fp.buffers))
          offsets[v] = buf.offset;
        step.walk([&](Operation *op) {
          if (op->getNumResults() == 0)
            return;
          SmallVector<int64_t> list;
          for (Value r : op->getResults())
            list.push_back(offsets.lookup_or(r, -1));
          op->setAttr("ptrain.arena_offsets", b.getDenseI64ArrayAttr(list));
        });
      }
    }
    if (!json.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(json, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        emitError(module.getLoc()) << "--ptrain-memory-plan: cannot write '" << json << "': " << ec.message();
        return signalPassFailure();
      }
      os << llvm::formatv("{0:2}",
                          llvm::json::Value(llvm::json::Object{{"alignment", kAlignment}, {"ranks", std::move(ranks)}}))
         << "\n";
    }
  }
};
} // namespace
