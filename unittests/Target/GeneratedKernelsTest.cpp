//===- GeneratedKernelsTest.cpp - Generated kernels vs the runtime's ------===//
//
// Issue 26: each fused elementwise pattern, outlined by
// --ptrain-outline-elementwise and compiled by writeKernelObject for the host
// CPU and for baseline x86-64, computes on random data the same bits as the
// runtime's kernels called once per op (ptrain_binary_f32, ptrain_gelu_fwd_f32,
// ptrain_gelu_bwd_f32; docs/GeneratedKernels.md); GELU on random values over
// its range and on the special ones (NaN, infinities, zeros, subnormals, the
// erfc cut-off).
// The object is loaded with LLVM's ORC JIT linker, as written, without a
// shared library around it.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Runtime/ptrain_runtime.h"
#include "ptrain/Target/Cpp/KernelObject.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <vector>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// The patterns: the attention scores' scale and mask, bias + residual, a chain with an intermediate read
/// outside it (two outputs) and a size-1 dimension, a long chain of odd sizes (vector remainders), scalars;
/// bias + GELU, GELU's gradient + a residual add, GELU and its gradient in one kernel (two outputs); the scores'
/// scale, mask and softmax, short rows with -inf masks (fully masked rows) and the softmax input as a second
/// output; the softmax gradient with the scale's gradient (grouped rows) and with a residual add, its own
/// result also an output (one row at a time).
constexpr const char *kPatterns = R"mlir(
func.func @scale_mask(%x: tensor<2x4x64x64xf32>, %s: tensor<f32>, %m: tensor<64x64xf32>) -> tensor<2x4x64x64xf32> {
  %0 = ptrain.binary mul %x, %s : tensor<2x4x64x64xf32>, tensor<f32>
  %1 = ptrain.binary add %0, %m : tensor<2x4x64x64xf32>, tensor<64x64xf32>
  return %1 : tensor<2x4x64x64xf32>
}
func.func @bias_residual(%x: tensor<3x17x40xf32>, %b: tensor<40xf32>, %r: tensor<3x17x40xf32>) -> tensor<3x17x40xf32> {
  %0 = ptrain.binary add %b, %x : tensor<40xf32>, tensor<3x17x40xf32>
  %1 = ptrain.binary add %r, %0 : tensor<3x17x40xf32>, tensor<3x17x40xf32>
  return %1 : tensor<3x17x40xf32>
}
func.func @two_outputs(%a: tensor<9x33xf32>, %b: tensor<1x33xf32>, %c: tensor<9x1xf32>) -> (tensor<9x33xf32>, tensor<9x33xf32>) {
  %0 = ptrain.binary sub %a, %b : tensor<9x33xf32>, tensor<1x33xf32>
  %1 = ptrain.binary div %0, %c : tensor<9x33xf32>, tensor<9x1xf32>
  return %0, %1 : tensor<9x33xf32>, tensor<9x33xf32>
}
func.func @long_chain(%a: tensor<37x33xf32>, %b: tensor<37x33xf32>, %c: tensor<33xf32>) -> tensor<37x33xf32> {
  %0 = ptrain.binary add %a, %b : tensor<37x33xf32>, tensor<37x33xf32>
  %1 = ptrain.binary mul %0, %c : tensor<37x33xf32>, tensor<33xf32>
  %2 = ptrain.binary sub %1, %a : tensor<37x33xf32>, tensor<37x33xf32>
  %3 = ptrain.binary div %2, %b : tensor<37x33xf32>, tensor<37x33xf32>
  %4 = ptrain.binary mul %3, %3 : tensor<37x33xf32>, tensor<37x33xf32>
  return %4 : tensor<37x33xf32>
}
func.func @scalars(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = ptrain.binary div %a, %b : tensor<f32>, tensor<f32>
  %1 = ptrain.binary sub %0, %b : tensor<f32>, tensor<f32>
  return %1 : tensor<f32>
}
func.func @bias_gelu(%x: tensor<3x17x40xf32>, %b: tensor<40xf32>) -> tensor<3x17x40xf32> {
  %0 = ptrain.binary add %x, %b : tensor<3x17x40xf32>, tensor<40xf32>
  %1 = ptrain.gelu %0 : tensor<3x17x40xf32>
  return %1 : tensor<3x17x40xf32>
}
func.func @gelu_grad_residual(%dy: tensor<5x67xf32>, %x: tensor<5x67xf32>, %r: tensor<5x67xf32>) -> tensor<5x67xf32> {
  %0 = ptrain.gelu_grad %dy, %x : tensor<5x67xf32>
  %1 = ptrain.binary add %r, %0 : tensor<5x67xf32>, tensor<5x67xf32>
  return %1 : tensor<5x67xf32>
}
func.func @scale_mask_softmax(%x: tensor<2x4x64x64xf32>, %s: tensor<f32>, %m: tensor<64x64xf32>) -> tensor<2x4x64x64xf32> {
  %0 = ptrain.binary mul %x, %s : tensor<2x4x64x64xf32>, tensor<f32>
  %1 = ptrain.binary add %0, %m : tensor<2x4x64x64xf32>, tensor<64x64xf32>
  %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<2x4x64x64xf32>
  return %2 : tensor<2x4x64x64xf32>
}
func.func @masked_rows_softmax(%x: tensor<100x7x3xf32>, %m: tensor<100x7x3xf32>) -> (tensor<100x7x3xf32>, tensor<100x7x3xf32>) {
  %0 = ptrain.binary add %x, %m : tensor<100x7x3xf32>, tensor<100x7x3xf32>
  %1 = ptrain.softmax %0 {axis = -1 : i64} : tensor<100x7x3xf32>
  return %0, %1 : tensor<100x7x3xf32>, tensor<100x7x3xf32>
}
func.func @softmax_grad_scale(%dy: tensor<2x4x64x64xf32>, %y: tensor<2x4x64x64xf32>, %s: tensor<f32>) -> tensor<2x4x64x64xf32> {
  %0 = ptrain.softmax_grad %dy, %y {axis = -1 : i64} : tensor<2x4x64x64xf32>
  %1 = ptrain.binary mul %0, %s : tensor<2x4x64x64xf32>, tensor<f32>
  return %1 : tensor<2x4x64x64xf32>
}
func.func @softmax_grad_rows_one_by_one(%dy: tensor<7x5xf32>, %y: tensor<7x5xf32>, %r: tensor<7x5xf32>) -> (tensor<7x5xf32>, tensor<7x5xf32>) {
  %0 = ptrain.softmax_grad %dy, %y {axis = 1 : i64} : tensor<7x5xf32>
  %1 = ptrain.binary add %r, %0 : tensor<7x5xf32>, tensor<7x5xf32>
  return %0, %1 : tensor<7x5xf32>, tensor<7x5xf32>
}
func.func @gelu_then_grad(%x: tensor<1031xf32>, %dy: tensor<1031xf32>) -> (tensor<1031xf32>, tensor<1031xf32>) {
  %0 = ptrain.gelu %x : tensor<1031xf32>
  %1 = ptrain.gelu_grad %dy, %0 : tensor<1031xf32>
  return %0, %1 : tensor<1031xf32>, tensor<1031xf32>
}
)mlir";

/// The first element whose bits differ, or -1. A NaN equals any NaN: IEEE 754 leaves which NaN an operation
/// on two NaNs returns to the machine (x86 returns its first source), and LLVM may swap the operands of a
/// commutative op, so the sign and payload of a NaN are not part of the promise (docs/GeneratedKernels.md).
int64_t firstDifference(const std::vector<float> &got, const std::vector<float> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && !(std::isnan(got[i]) && std::isnan(want[i])))
      return static_cast<int64_t>(i);
  return -1;
}

/// Patterns with GELU: inputs over its whole range, the specials mixed in.
bool hasGelu(const ElementwiseChain &chain) {
  return llvm::any_of(chain.ops, [](Operation *op) { return isa<GeluOp, GeluGradOp>(op); });
}

/// Patterns with a softmax: an eighth of the elements -inf (masked keys; rows of 3 get fully masked ones), one
/// in 512 another special (a NaN or an infinity poisons its row: rarely, so most rows stay finite).
bool hasSoftmax(const ElementwiseChain &chain) { return chain.endsInSoftmax(); }

/// Values GELU must get right besides random ones: NaN, infinities, signed zeros, subnormals, the edges of the
/// erfc cut-off (|x| / sqrt 2 = 10) and of the exp clamp, the largest and smallest normals.
const float kSpecials[] = {std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           0.0f,
                           -0.0f,
                           std::numeric_limits<float>::denorm_min(),
                           -std::numeric_limits<float>::denorm_min(),
                           1e-39f,
                           -1e-39f,
                           std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(),
                           14.142135f,
                           -14.142135f,
                           14.1421366f,
                           -14.1421366f,
                           -37.6f,
                           -40.0f,
                           1e10f,
                           -1e10f,
                           1.0f,
                           -1.0f};

std::vector<int64_t> shapeOf(Value v) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  return {s.begin(), s.end()};
}

int64_t countOf(Value v) {
  int64_t n = 1;
  for (int64_t d : shapeOf(v))
    n *= d;
  return n;
}

int32_t runtimeKind(BinaryOp op) {
  switch (op.getKind()) {
  case BinaryKind::Add:
    return PTRAIN_BINARY_ADD;
  case BinaryKind::Sub:
    return PTRAIN_BINARY_SUB;
  case BinaryKind::Mul:
    return PTRAIN_BINARY_MUL;
  default:
    return PTRAIN_BINARY_DIV;
  }
}

class GeneratedKernelsTest : public ::testing::TestWithParam<const char *> {
protected:
  GeneratedKernelsTest() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    DialectRegistry registry;
    registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  MLIRContext context;
};

TEST_P(GeneratedKernelsTest, FusedChainsEqualRuntimeKernelsBitForBit) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kPatterns, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(createOutlineElementwisePass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(*module, kKernelModuleName));
  ASSERT_TRUE(kernels);

  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  KernelObjectOptions options;
  options.cpu = GetParam();
  ASSERT_TRUE(succeeded(writeKernelObject(kernels, os, options)));
  auto jit = llvm::orc::LLJITBuilder().create();
  ASSERT_TRUE(static_cast<bool>(jit)) << llvm::toString(jit.takeError());
  ASSERT_FALSE((*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object.str(), "kernels.o")));

  std::mt19937 rng(26);
  std::uniform_real_distribution<float> magnitude(0.25f, 4.0f);
  std::bernoulli_distribution negative(0.5);
  int chains = 0;
  for (auto func : module->getOps<func::FuncOp>()) {
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    SmallVector<ElementwiseChain> found = findElementwiseChains(ops, [](Operation *) { return false; });
    ASSERT_EQ(found.size(), 1u) << func.getSymName().str();
    const ElementwiseChain &chain = found.front();
    auto kernel = chain.ops.front()->getAttrOfType<SymbolRefAttr>(kKernelAttr);
    ASSERT_TRUE(kernel) << func.getSymName().str();

    // Random inputs away from zero (divisors), then the runtime's kernels op by op.
    std::map<const void *, std::vector<float>> values;
    auto key = [](Value v) { return v.getAsOpaquePointer(); };
    const bool gelu = hasGelu(chain), softmax = hasSoftmax(chain);
    std::uniform_int_distribution<int> oneIn(0, 4095);
    std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
    std::uniform_int_distribution<size_t> special(0, std::size(kSpecials) * 4 - 1);
    for (Value in : chain.inputs) {
      std::vector<float> &data = values[key(in)];
      data.resize(countOf(in));
      for (float &x : data) {
        x = negative(rng) ? -magnitude(rng) : magnitude(rng);
        if (gelu) { // a quarter of the elements special, the rest over GELU's curved part and beyond
          size_t pick = special(rng);
          x = pick < std::size(kSpecials) ? kSpecials[pick] : wide(rng);
        }
        if (softmax) {
          int draw = oneIn(rng);
          if (draw < 512)
            x = -std::numeric_limits<float>::infinity();
          else if (draw < 520)
            x = kSpecials[draw % std::size(kSpecials)];
        }
      }
    }
    for (Operation *op : chain.ops) {
      if (auto g = dyn_cast<GeluOp>(op)) {
        std::vector<float> out(countOf(g.getResult()));
        ASSERT_EQ(ptrain_gelu_fwd_f32(values[key(g.getInput())].data(), out.size(), out.data()), PTRAIN_OK);
        values[key(g.getResult())] = std::move(out);
        continue;
      }
      if (auto g = dyn_cast<GeluGradOp>(op)) {
        std::vector<float> out(countOf(g.getResult()));
        ASSERT_EQ(ptrain_gelu_bwd_f32(values[key(g.getGrad())].data(), values[key(g.getInput())].data(), out.size(),
                                      out.data()),
                  PTRAIN_OK);
        values[key(g.getResult())] = std::move(out);
        continue;
      }
      if (auto grad = dyn_cast<SoftmaxGradOp>(op)) {
        std::vector<float> out(countOf(grad.getResult()));
        const int64_t cols = shapeOf(grad.getResult()).back();
        ASSERT_EQ(ptrain_softmax_bwd_f32(values[key(grad.getGrad())].data(), values[key(grad.getOutput())].data(),
                                         out.size() / cols, cols, out.data()),
                  PTRAIN_OK);
        values[key(grad.getResult())] = std::move(out);
        continue;
      }
      if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
        std::vector<float> out(countOf(softmax.getResult()));
        const int64_t cols = shapeOf(softmax.getResult()).back();
        ASSERT_EQ(ptrain_softmax_fwd_f32(values[key(softmax.getInput())].data(), out.size() / cols, cols,
                                         /*causal=*/0, out.data()),
                  PTRAIN_OK);
        values[key(softmax.getResult())] = std::move(out);
        continue;
      }
      auto b = cast<BinaryOp>(op);
      std::vector<int64_t> ad = shapeOf(b.getLhs()), bd = shapeOf(b.getRhs()), od = shapeOf(b.getResult());
      std::vector<float> out(countOf(b.getResult()));
      ASSERT_EQ(ptrain_binary_f32(runtimeKind(b), values[key(b.getLhs())].data(), ad.size(), ad.data(),
                                  values[key(b.getRhs())].data(), bd.size(), bd.data(), od.size(), od.data(),
                                  out.data()),
                PTRAIN_OK);
      values[key(b.getResult())] = std::move(out);
    }

    // The generated kernel: inputs, then outputs (NaN-filled, so that an element it misses shows).
    std::vector<float *> args;
    for (Value in : chain.inputs)
      args.push_back(values[key(in)].data());
    std::vector<std::vector<float>> outs;
    for (Value out : chain.outputs)
      outs.emplace_back(countOf(out), std::numeric_limits<float>::quiet_NaN());
    for (std::vector<float> &out : outs)
      args.push_back(out.data());
    auto address = (*jit)->lookup(kernel.getLeafReference().getValue());
    ASSERT_TRUE(static_cast<bool>(address)) << llvm::toString(address.takeError());
    using F3 = void (*)(float *, float *, float *);
    using F4 = void (*)(float *, float *, float *, float *);
    using F5 = void (*)(float *, float *, float *, float *, float *);
    using F2 = void (*)(float *, float *);
    switch (args.size()) {
    case 2:
      address->toPtr<F2>()(args[0], args[1]);
      break;
    case 3:
      address->toPtr<F3>()(args[0], args[1], args[2]);
      break;
    case 4:
      address->toPtr<F4>()(args[0], args[1], args[2], args[3]);
      break;
    case 5:
      address->toPtr<F5>()(args[0], args[1], args[2], args[3], args[4]);
      break;
    default:
      FAIL() << "no test signature for " << args.size() << " pointers";
    }
    for (auto [out, got] : llvm::zip(chain.outputs, outs)) {
      const std::vector<float> &want = values[key(out)];
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(firstDifference(got, want), -1)
          << func.getSymName().str() << " on " << GetParam() << ": the kernel differs from the runtime's kernels op by op";
    }
    ++chains;
  }
  EXPECT_EQ(chains, 12);
}

/// The host's CPU and the x86-64 baseline (SSE2): the two kinds of object a fresh machine may get.
INSTANTIATE_TEST_SUITE_P(Cpus, GeneratedKernelsTest, ::testing::Values("native", "x86-64"));

TEST(GeneratedKernelsObjectTest, UnknownCpuIsAnError) {
  MLIRContext context;
  DialectRegistry registry;
  registerPTrainDialects(registry);
  context.appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> empty = ModuleOp::create(UnknownLoc::get(&context));
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  KernelObjectOptions options;
  options.cpu = "no-such-cpu";
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  EXPECT_TRUE(failed(writeKernelObject(*empty, os, options)));
  EXPECT_NE(message.find("unknown CPU 'no-such-cpu'"), std::string::npos) << message;
}

} // namespace
