//===- OutlineElementwise.cpp - Elementwise chains into linalg kernels ----===//
//
// --ptrain-outline-elementwise: see the pass description in Passes.td and
// include/ptrain/Analysis/ElementwiseChains.h (issue 26).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Transforms/GeluArith.h"
#include "ptrain/Transforms/SoftmaxArith.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"

#define DEBUG_TYPE "ptrain-outline-elementwise"

namespace mlir::ptrain {
#define GEN_PASS_DEF_OUTLINEELEMENTWISEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

MemRefType memrefOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// The scalar computation of one op of a chain on its operands' elements (`scalars`), in the runtime's
/// order of operations.
Value buildScalar(OpBuilder &b, Location l, Operation *op, const IRMapping &scalars) {
  if (auto gelu = dyn_cast<GeluOp>(op))
    return buildGeluF32(b, l, scalars.lookup(gelu.getInput()));
  if (auto grad = dyn_cast<GeluGradOp>(op))
    return buildGeluGradF32(b, l, scalars.lookup(grad.getGrad()), scalars.lookup(grad.getInput()));
  auto binary = cast<BinaryOp>(op);
  Value lhs = scalars.lookup(binary.getLhs()), rhs = scalars.lookup(binary.getRhs());
  switch (binary.getKind()) {
  case BinaryKind::Add:
    return arith::AddFOp::create(b, l, lhs, rhs);
  case BinaryKind::Sub:
    return arith::SubFOp::create(b, l, lhs, rhs);
  case BinaryKind::Mul:
    return arith::MulFOp::create(b, l, lhs, rhs);
  case BinaryKind::Div:
    return arith::DivFOp::create(b, l, lhs, rhs);
  default:
    llvm_unreachable("isFusibleElementwise admits add, sub, mul and div only");
  }
}

/// The indices of `map` (dimension results and the constant 0 of a broadcast size-1 dimension) at `ivs`.
SmallVector<Value> indicesOf(OpBuilder &b, Location l, AffineMap map, ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(isa<AffineDimExpr>(e) ? ivs[cast<AffineDimExpr>(e).getPosition()]
                                            : Value(arith::ConstantIndexOp::create(b, l, 0)));
  return indices;
}

/// The body of a chain that ends in a row softmax (SoftmaxArith.h): per element the prologue's ops in order on
/// the inputs read through their maps, the prologue's outputs stored, then the softmax rows into the last
/// output.
void buildSoftmaxKernelBody(OpBuilder &body, Location loc, const ElementwiseChain &chain, ValueRange args) {
  ValueRange ins = args.take_front(chain.inputs.size()), outs = args.drop_front(chain.inputs.size());
  Value softmaxInput = chain.ops.back()->getOperand(0);
  buildSoftmaxRowsF32(body, loc, chain.shape(), outs.back(), [&](OpBuilder &b, Location l, ValueRange ivs) {
    IRMapping scalars;
    for (auto [in, arg] : llvm::zip(chain.inputs, ins))
      scalars.map(in, memref::LoadOp::create(b, l, arg, indicesOf(b, l, chain.inputMap(in), ivs)).getResult());
    for (Operation *op : ArrayRef<Operation *>(chain.ops).drop_back())
      scalars.map(op->getResult(0), buildScalar(b, l, op, scalars));
    for (auto [out, arg] : llvm::zip(ArrayRef<Value>(chain.outputs).drop_back(), outs))
      memref::StoreOp::create(b, l, scalars.lookup(out), arg, ivs);
    return scalars.lookup(softmaxInput);
  });
}

/// The body of a chain that starts with a row softmax gradient (SoftmaxArith.h): per row the dot of dy and y, then
/// per element dx and the epilogue's ops in order on the inputs read through their maps, the outputs stored.
void buildSoftmaxGradKernelBody(OpBuilder &body, Location loc, const ElementwiseChain &chain, ValueRange args) {
  ValueRange ins = args.take_front(chain.inputs.size()), outs = args.drop_front(chain.inputs.size());
  auto grad = cast<SoftmaxGradOp>(chain.ops.front());
  auto argOf = [&](Value v) { return ins[llvm::find(chain.inputs, v) - chain.inputs.begin()]; };
  buildSoftmaxGradRowsF32(
      body, loc, chain.shape(), argOf(grad.getGrad()), argOf(grad.getOutput()),
      [&](OpBuilder &b, Location l, ValueRange ivs, Value dx) {
        IRMapping scalars;
        scalars.map(grad.getResult(), dx);
        for (auto [in, arg] : llvm::zip(chain.inputs, ins))
          if (llvm::any_of(ArrayRef<Operation *>(chain.ops).drop_front(),
                           [&](Operation *op) { return llvm::is_contained(op->getOperands(), in); }))
            scalars.map(in, memref::LoadOp::create(b, l, arg, indicesOf(b, l, chain.inputMap(in), ivs)).getResult());
        for (Operation *op : ArrayRef<Operation *>(chain.ops).drop_front())
          scalars.map(op->getResult(0), buildScalar(b, l, op, scalars));
        for (auto [out, arg] : llvm::zip(chain.outputs, outs))
          memref::StoreOp::create(b, l, scalars.lookup(out), arg, ivs);
      });
}

/// The kernel of `chain`: `func.func @name(inputs..., outputs...)` of one linalg.generic whose body performs
/// the chain's ops in order, or, for a chain that ends in a row softmax or starts with its gradient, the rows of
/// buildSoftmaxKernelBody or buildSoftmaxGradKernelBody.
func::FuncOp buildKernel(OpBuilder &builder, Location loc, StringRef name, const ElementwiseChain &chain) {
  SmallVector<Type> params;
  for (Value v : chain.inputs)
    params.push_back(memrefOf(v));
  for (Value v : chain.outputs)
    params.push_back(memrefOf(v));
  auto func = func::FuncOp::create(builder, loc, name, builder.getFunctionType(params, {}));
  Block *entry = func.addEntryBlock();
  OpBuilder body = OpBuilder::atBlockBegin(entry);
  if (chain.startsWithSoftmaxGrad()) {
    buildSoftmaxGradKernelBody(body, loc, chain, entry->getArguments());
    func::ReturnOp::create(body, loc);
    return func;
  }
  if (chain.endsInSoftmax()) {
    buildSoftmaxKernelBody(body, loc, chain, entry->getArguments());
    func::ReturnOp::create(body, loc);
    return func;
  }
  const size_t rank = chain.shape().size();
  SmallVector<AffineMap> maps;
  for (Value v : chain.inputs)
    maps.push_back(chain.inputMap(v));
  maps.append(chain.outputs.size(), body.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  ValueRange args = entry->getArguments();
  linalg::GenericOp::create(body, loc, args.take_front(chain.inputs.size()), args.drop_front(chain.inputs.size()), maps,
                            iterators, [&](OpBuilder &b, Location l, ValueRange elems) {
                              IRMapping scalars;
                              for (auto [in, elem] : llvm::zip(chain.inputs, elems))
                                scalars.map(in, elem);
                              for (Operation *op : chain.ops)
                                scalars.map(op->getResult(0), buildScalar(b, l, op, scalars));
                              SmallVector<Value> yielded;
                              for (Value out : chain.outputs)
                                yielded.push_back(scalars.lookup(out));
                              linalg::YieldOp::create(b, l, yielded);
                            });
  func::ReturnOp::create(body, loc);
  return func;
}

struct OutlineElementwisePass : ptrain::impl::OutlineElementwisePassBase<OutlineElementwisePass> {
  using OutlineElementwisePassBase::OutlineElementwisePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    if (SymbolTable::lookupSymbolIn(module, kKernelModuleName)) {
      emitError(module.getLoc(), "--ptrain-outline-elementwise: the module already has @")
          << kKernelModuleName << "; the pass runs once";
      return signalPassFailure();
    }
    SmallVector<std::pair<func::FuncOp, SmallVector<ElementwiseChain>>> found;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      SmallVector<Operation *> ops;
      for (Operation &op : func.getBody().front())
        ops.push_back(&op);
      GemmFusion gemms(ops, StorageRules::cpu().gemmFusionOptions()); // the CPU target's folds
      SmallVector<ElementwiseChain> chains = findElementwiseChains(
          ops, [&](Operation *op) { return gemms.isFolded(op) || gemms.aliasOf(op); },
          [&](Operation *op) { return gemms.isDead(op); });
      if (!chains.empty())
        found.emplace_back(func, std::move(chains));
    }
    if (found.empty())
      return;
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto kernels = ModuleOp::create(builder, module.getLoc(), StringRef(kKernelModuleName));
    OpBuilder inKernels = OpBuilder::atBlockEnd(kernels.getBody());
    llvm::StringMap<StringAttr> bySignature;
    // Not numKernels: statistics count nothing in a build without LLVM_ENABLE_STATS.
    int64_t kernelCount = 0;
    for (auto &[func, chains] : found) {
      for (const ElementwiseChain &chain : chains) {
        StringAttr &name = bySignature[chain.signature()];
        if (!name) {
          name = StringAttr::get(ctx, "ptrain_kernel_" + std::to_string(kernelCount++));
          ++numKernels;
          buildKernel(inKernels, chain.ops.front()->getLoc(), name, chain);
        }
        auto ref = SymbolRefAttr::get(ctx, kKernelModuleName, {FlatSymbolRefAttr::get(name)});
        for (auto [i, op] : llvm::enumerate(chain.ops)) {
          op->setAttr(kKernelAttr, ref);
          op->setAttr(kKernelOpAttr, IntegerAttr::get(IntegerType::get(ctx, 64), i));
        }
        ++numChains;
        numOps += chain.ops.size();
        if (remarks)
          emitRemark(chain.ops.front()->getLoc())
              << "elementwise chain in @" << func.getSymName() << ": " << name.getValue() << ", "
              << chain.ops.size() << " ops, fused " << chain.fusedBytes() << " bytes, unfused " << chain.unfusedBytes()
              << " bytes";
      }
    }
  }
};

} // namespace
