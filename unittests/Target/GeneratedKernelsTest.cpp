//===- GeneratedKernelsTest.cpp - Generated kernels vs the runtime's ------===//
//
// Issue 26: each fused elementwise pattern, outlined by
// --ptrain-outline-elementwise and compiled by writeKernelObject for the host
// CPU and for baseline x86-64, computes on random data the same bits as the
// runtime's kernels called once per op (ptrain_binary_f32, ptrain_gelu_fwd_f32,
// ptrain_gelu_bwd_f32; docs/GeneratedKernels.md); GELU on random values over
// its range and on the special ones (NaN, infinities, zeros, subnormals, the
// erfc cut-off); the quantization sites' encoders against ptrain_quant_encode_f32
// and the AdamW updates against ptrain_adamw_step_f32 (with the clipping's
// scale by ptrain_binary_f32); the CUDA route's gpu.func kernels run on the CPU
// thread by thread against the CPU kernels of the same chains.
// The object is loaded with LLVM's ORC JIT linker, as written, without a
// shared library around it.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Runtime/ptrain_runtime.h"
#include "ptrain/Target/Cpp/KernelObject.h"
#include "ptrain/Target/Cuda/KernelPtx.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/AdamWArith.h"
#include "ptrain/Transforms/Passes.h"
#include "ptrain/Transforms/QuantArith.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
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

  /// Runs `pass` (an outlining pass) on `module`, compiles its @ptrain_kernels for the CPU of the test's
  /// parameter and loads the object into `jit` (ORC), as ptrain-compile links it.
  void outlineAndLoad(ModuleOp module, std::unique_ptr<Pass> pass, std::unique_ptr<llvm::orc::LLJIT> &jit) {
    PassManager pm(&context);
    pm.addPass(std::move(pass));
    ASSERT_TRUE(succeeded(pm.run(module)));
    auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(module, kKernelModuleName));
    ASSERT_TRUE(kernels);
    llvm::SmallString<0> object;
    llvm::raw_svector_ostream os(object);
    KernelObjectOptions options;
    options.cpu = GetParam();
    ASSERT_TRUE(succeeded(writeKernelObject(kernels, os, options)));
    auto created = llvm::orc::LLJITBuilder().create();
    ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
    jit = std::move(*created);
    ASSERT_FALSE(jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object.str(), "kernels.o")));
  }

  MLIRContext context;
};

TEST_P(GeneratedKernelsTest, FusedChainsEqualRuntimeKernelsBitForBit) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kPatterns, &context);
  ASSERT_TRUE(module);
  std::unique_ptr<llvm::orc::LLJIT> jit;
  ASSERT_NO_FATAL_FAILURE(outlineAndLoad(*module, createOutlineElementwisePass(), jit));

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
    auto address = jit->lookup(kernel.getLeafReference().getValue());
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
/// One quantization site of the codec kernels' test: `ptrain.compress` of a 1-D f32 tensor.
struct QuantSite {
  int64_t numel, block; // block 0: per tensor
  int bits;
  bool symmetric, feedback;
};

std::string quantSiteFunction(const QuantSite &q, int index) {
  const std::string n = std::to_string(q.numel), scales = std::to_string(q.block ? q.numel / q.block : 1);
  const std::string bytes = std::to_string(q.numel * q.bits / 8);
  std::string codec = "#ptrain.quant<bits = " + std::to_string(q.bits) +
                      (q.block ? ", granularity = block, block_size = " + std::to_string(q.block)
                               : std::string(", granularity = tensor")) +
                      (q.symmetric ? "" : ", symmetric = false") + ">";
  std::string codes =
      "tensor<" + bytes + "xi8>, tensor<" + scales + "xf32>" + (q.symmetric ? "" : ", tensor<" + scales + "xf32>");
  std::string t = "tensor<" + n + "xf32>";
  std::string results = q.symmetric ? "%c:2" : "%c:3";
  std::string text = "func.func @site" + std::to_string(index) + "(%g: " + t + ", %e: " + t + ") {\n  " + results;
  if (q.feedback)
    text += ", %e1 = ptrain.compress %g state(%e) {codec = " + codec + ", error_feedback} : " + t + " state(" + t +
            ") -> (" + codes + ") state(" + t + ")\n";
  else
    text += " = ptrain.compress %g {codec = " + codec + "} : " + t + " -> (" + codes + ")\n";
  return text + "  return\n}\n";
}

/// Values the quantizer must treat as the runtime does, one kind per block of 64: +-0 only (either sign first), a
/// min of 0 reached by -0 before +0 and a max of 0 by +0 before -0 (the sign-of-zero rule), values around 1e-39
/// (scales at or below 2^-128: constant blocks) and around 1e-36 with subnormals, huge ones, ties to even at 4
/// bits, one value, a range over FLT_MAX (an asymmetric scale clamped); the rest random over [-3, 5].
std::vector<float> quantEdgeValues(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 5.0f);
  std::vector<float> g(n);
  for (float &x : g)
    x = uniform(rng);
  for (int64_t b = 0; b * 64 < n; ++b) {
    float *x = g.data() + b * 64;
    const int64_t len = std::min<int64_t>(64, n - b * 64);
    switch (b % 11) {
    case 0:
    case 1:
      for (int64_t i = 0; i < len; ++i)
        x[i] = (i + b) % 3 == 0 ? -0.0f : 0.0f;
      break;
    case 2:
      for (int64_t i = 0; i < len; ++i)
        x[i] = std::fabs(x[i]) + 0.5f;
      x[std::min<int64_t>(len - 1, 36)] = 0.0f, x[std::min<int64_t>(len - 1, 5)] = -0.0f;
      break;
    case 3:
      for (int64_t i = 0; i < len; ++i)
        x[i] = -std::fabs(x[i]) - 0.5f;
      x[std::min<int64_t>(len - 1, 3)] = 0.0f, x[std::min<int64_t>(len - 1, 50)] = -0.0f;
      break;
    case 4:
      for (int64_t i = 0; i < len; ++i)
        x[i] *= 1e-39f;
      break;
    case 5:
      for (int64_t i = 0; i < len; ++i)
        x[i] *= 1e-36f;
      x[len / 2] = 1e-40f;
      break;
    case 6:
      for (int64_t i = 0; i < len; ++i)
        x[i] *= 1e37f;
      break;
    case 7:
      for (int64_t i = 0; i < len; ++i)
        x[i] = static_cast<float>(i % 15) + 0.5f;
      x[0] = 0.0f, x[len - 1] = 15.0f;
      break;
    case 8:
      for (int64_t i = 0; i < len; ++i)
        x[i] = 0.3f;
      break;
    case 9: // a range over FLT_MAX (about 5.2e38 and 6e38): asymmetric scales clamped (common/QuantScale.h)
      for (int64_t i = 0; i < len; ++i)
        x[i] *= 6.5e37f;
      x[0] = -3e38f, x[len - 1] = 3e38f;
      break;
    default:
      break;
    }
  }
  return g;
}

/// The codec kernels (--ptrain-outline-codecs, QuantArith.h) against ptrain_quant_encode_f32: codes, scales,
/// zero points and residuals by memcmp over bits 2, 4 and 8, symmetric and asymmetric, with and without error
/// feedback, blocks of 64, 32 and 16 and per tensor, on quantEdgeValues; and non-finite blocks (issue 24): a NaN
/// or an infinity in one or two blocks gives the runtime's non-finite blocks (NaN scale and zero point, codes 0,
/// residual NaN) bit for bit, the other blocks coded as usual, and returns the runtime's first such element.
TEST_P(GeneratedKernelsTest, QuantizationKernelsEqualTheRuntimeEncoder) {
  std::vector<QuantSite> sites;
  for (int bits : {2, 4, 8})
    for (bool symmetric : {true, false})
      for (bool feedback : {false, true}) {
        sites.push_back({64 * 37, 64, bits, symmetric, feedback});
        sites.push_back({32 * 45, 32, bits, symmetric, feedback});
        sites.push_back({16 * 90, 16, bits, symmetric, feedback});
        sites.push_back({16 * 61, 0, bits, symmetric, feedback});
      }
  std::string text;
  for (auto [i, q] : llvm::enumerate(sites))
    text += quantSiteFunction(q, static_cast<int>(i));
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  std::unique_ptr<llvm::orc::LLJIT> jit;
  ASSERT_NO_FATAL_FAILURE(outlineAndLoad(*module, createOutlineCodecsPass(), jit));

  int checked = 0;
  for (auto [index, q] : llvm::enumerate(sites)) {
    SCOPED_TRACE(::testing::Message() << "numel " << q.numel << " block " << q.block << " bits " << q.bits
                                      << " symmetric " << q.symmetric << " feedback " << q.feedback);
    CompressOp op;
    module->walk([&](CompressOp c) {
      if (c->getParentOfType<func::FuncOp>().getSymName() == "site" + std::to_string(index))
        op = c;
    });
    ASSERT_TRUE(op);
    auto kernel = op->getAttrOfType<SymbolRefAttr>(kCodecKernelAttr);
    ASSERT_TRUE(kernel);
    auto address = jit->lookup(kernel.getLeafReference().getValue());
    ASSERT_TRUE(static_cast<bool>(address)) << llvm::toString(address.takeError());
    const int64_t scales = q.block ? q.numel / q.block : 1, bytes = q.numel * q.bits / 8;
    for (int poison : {0, 1, 2, 3}) { // none, a NaN in block 5, an infinity in the last block, both
      std::vector<float> g = quantEdgeValues(q.numel, 61 + q.bits + static_cast<unsigned>(index));
      int64_t first = -1;
      if (poison & 2) {
        g[q.numel - 3] = -INFINITY;
        first = q.numel - 3;
      }
      if (poison & 1) {
        g[5 * 64 % q.numel + 7] = NAN;
        first = 5 * 64 % q.numel + 7;
      }
      std::mt19937 rng(7 + index);
      std::uniform_real_distribution<float> small(-0.2f, 0.2f);
      std::vector<float> e(q.numel);
      for (float &x : e)
        x = small(rng);
      for (int64_t i = 0; i < q.numel; ++i) // the edge blocks keep their values: -0 + g is g
        if ((i / 64) % 11 != 10)
          e[i] = -0.0f;
      // The runtime, then the kernel, from the same inputs; outputs pre-filled alike.
      std::vector<uint8_t> wantPacked(bytes, 0xAB), gotPacked(bytes, 0xAB);
      std::vector<float> wantScales(scales, -1.0f), gotScales(scales, -1.0f), wantZeros(scales, -1.0f),
          gotZeros(scales, -1.0f), wantE = e, gotE = e;
      const ptrain_status_t status =
          ptrain_quant_encode_f32(g.data(), q.feedback ? wantE.data() : nullptr, 1, q.numel, q.bits,
                                  q.block ? PTRAIN_QUANT_BLOCK : PTRAIN_QUANT_TENSOR, q.block, q.symmetric,
                                  wantPacked.data(), wantScales.data(), wantZeros.data());
      int64_t bad = -1;
      if (q.feedback && q.symmetric)
        bad = address->toPtr<int64_t (*)(const float *, float *, uint8_t *, float *)>()(
            g.data(), gotE.data(), gotPacked.data(), gotScales.data());
      else if (q.feedback)
        bad = address->toPtr<int64_t (*)(const float *, float *, uint8_t *, float *, float *)>()(
            g.data(), gotE.data(), gotPacked.data(), gotScales.data(), gotZeros.data());
      else if (q.symmetric)
        bad = address->toPtr<int64_t (*)(const float *, uint8_t *, float *)>()(g.data(), gotPacked.data(),
                                                                               gotScales.data());
      else
        bad = address->toPtr<int64_t (*)(const float *, uint8_t *, float *, float *)>()(
            g.data(), gotPacked.data(), gotScales.data(), gotZeros.data());
      ASSERT_EQ(status, PTRAIN_OK) << ptrain_last_error();
      ASSERT_EQ(bad, first);
      ASSERT_EQ(gotPacked, wantPacked);
      ASSERT_EQ(std::memcmp(gotScales.data(), wantScales.data(), scales * sizeof(float)), 0);
      if (!q.symmetric) {
        ASSERT_EQ(std::memcmp(gotZeros.data(), wantZeros.data(), scales * sizeof(float)), 0);
      }
      if (poison != 0) {
        const int64_t block = q.block ? q.block : q.numel;
        ASSERT_TRUE(std::isnan(gotScales[first / block])) << "the first non-finite element's block";
      }
      if (q.feedback) {
        ASSERT_EQ(std::memcmp(gotE.data(), wantE.data(), q.numel * sizeof(float)), 0) << "residual";
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(sites.size()) * 4);
}

/// One AdamW update of the AdamW kernels' test: `ptrain.adamw` of a 1-D tensor, the gradient scaled by a rank-0
/// clip scale first when `clip`.
struct AdamWUpdate {
  int64_t numel;
  double beta1, beta2, epsilon, weightDecay;
  bool clip;
};

std::string adamwUpdateFunction(const AdamWUpdate &u, int index) {
  const std::string t = "tensor<" + std::to_string(u.numel) + "xf32>";
  auto f64 = [](double v) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::format("%.17e", v) << " : f64";
    return text;
  };
  std::string text = "func.func @update" + std::to_string(index) + "(%p: " + t + ", %g: " + t + ", %m: " + t +
                     ", %v: " + t + ", %s: tensor<f32>, %t: tensor<i64>) -> (" + t + ", " + t + ", " + t + ") {\n";
  std::string grad = "%g";
  if (u.clip) {
    text += "  %gs = ptrain.binary mul %g, %s : " + t + ", tensor<f32>\n";
    grad = "%gs";
  }
  text += "  %p1, %m1, %v1 = ptrain.adamw %p, " + grad +
          ", %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio "
          "= 0.1 : f64>, beta1 = " +
          f64(u.beta1) + ", beta2 = " + f64(u.beta2) + ", epsilon = " + f64(u.epsilon) +
          ", weight_decay = " + f64(u.weightDecay) + "} : " + t + ", tensor<i64>\n";
  return text + "  return %p1, %m1, %v1 : " + t + ", " + t + ", " + t + "\n}\n";
}

/// The AdamW kernels (--ptrain-outline-adamw, AdamWArith.h) against ptrain_adamw_step_f32 (after
/// ptrain_binary_f32's mul by the clip scale where the kernel folds it in): p, m and v by memcmp after each of
/// five steps at t = 1, 2, 3, 1000 and 100000 (the bias correction from strong to none) and learning rates
/// 1e-3 to 1e-6, with weight decay 0 and 0.1, betas (0.9, 0.95) and (0.8, 0.999), epsilon 1e-8 and 1e-6, clip
/// scales below and at 1; sizes below, at and around the vector width and a long one with a tail; gradients
/// random with zeros, subnormals, huge values, infinities and NaNs mixed in.
TEST_P(GeneratedKernelsTest, AdamWKernelsEqualTheRuntimeUpdate) {
  std::vector<AdamWUpdate> updates;
  for (int64_t numel : {1, 15, 16, 17, 1000, 4096 * 3 + 7})
    for (bool clip : {false, true}) {
      updates.push_back({numel, 0.9, 0.95, 1e-8, 0.1, clip});
      updates.push_back({numel, 0.8, 0.999, 1e-6, 0.0, clip});
    }
  std::string text;
  for (auto [i, u] : llvm::enumerate(updates))
    text += adamwUpdateFunction(u, static_cast<int>(i));
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  std::unique_ptr<llvm::orc::LLJIT> jit;
  ASSERT_NO_FATAL_FAILURE(outlineAndLoad(*module, createOutlineAdamWPass(), jit));

  const float kAdamWSpecials[] = {0.0f,
                                  -0.0f,
                                  std::numeric_limits<float>::denorm_min(),
                                  -1e-39f,
                                  std::numeric_limits<float>::min(),
                                  1e-20f,
                                  1e30f,
                                  -std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};
  const int64_t steps[] = {1, 2, 3, 1000, 100000};
  const float rates[] = {1e-3f, 3e-4f, 1e-4f, 2.5e-5f, 1e-6f};
  int checked = 0;
  for (auto [index, u] : llvm::enumerate(updates)) {
    SCOPED_TRACE(::testing::Message() << "numel " << u.numel << " betas " << u.beta1 << ", " << u.beta2
                                      << " wd " << u.weightDecay << " clip " << u.clip << " on " << GetParam());
    AdamWOp op;
    module->walk([&](AdamWOp a) {
      if (a->getParentOfType<func::FuncOp>().getSymName() == "update" + std::to_string(index))
        op = a;
    });
    ASSERT_TRUE(op);
    auto kernel = op->getAttrOfType<SymbolRefAttr>(kAdamWKernelAttr);
    ASSERT_TRUE(kernel);
    auto address = jit->lookup(kernel.getLeafReference().getValue());
    ASSERT_TRUE(static_cast<bool>(address)) << llvm::toString(address.takeError());
    std::mt19937 rng(2026 + static_cast<unsigned>(index));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> oneIn(0, 63);
    const size_t n = static_cast<size_t>(u.numel);
    std::vector<float> p(n), m(n), v(n);
    for (size_t i = 0; i < n; ++i) {
      p[i] = normal(rng) * 0.02f;
      m[i] = normal(rng) * 1e-3f;
      v[i] = std::fabs(normal(rng)) * 1e-6f;
    }
    std::vector<float> wantP = p, wantM = m, wantV = v, gotP = p, gotM = m, gotV = v;
    for (int s = 0; s < 5; ++s) {
      std::vector<float> g(n);
      for (float &x : g) {
        x = normal(rng) * (oneIn(rng) < 8 ? 1e-6f : 1e-2f);
        // Specials only in the first step's gradient of the long update: a NaN or an infinity poisons its
        // element's m and v for the later steps, the rest keep testing ordinary values.
        if (s == 0 && oneIn(rng) == 0)
          x = kAdamWSpecials[static_cast<size_t>(oneIn(rng)) % std::size(kAdamWSpecials)];
      }
      const float scale = u.clip ? (s % 2 ? 0.37f : 1.0f) : 1.0f;
      // The runtime: the clipping's mul, then the update.
      std::vector<float> scaled = g;
      if (u.clip) {
        const int64_t dims[1] = {u.numel};
        ASSERT_EQ(ptrain_binary_f32(PTRAIN_BINARY_MUL, g.data(), 1, dims, &scale, 0, nullptr, 1, dims,
                                    scaled.data()),
                  PTRAIN_OK);
      }
      ASSERT_EQ(ptrain_adamw_step_f32(wantP.data(), scaled.data(), wantM.data(), wantV.data(), u.numel, steps[s],
                                      rates[s], static_cast<float>(u.beta1), static_cast<float>(u.beta2),
                                      static_cast<float>(u.epsilon), static_cast<float>(u.weightDecay)),
                PTRAIN_OK)
          << ptrain_last_error();
      // The kernel, with the runtime's coefficients.
      float c[3];
      ASSERT_EQ(ptrain_adamw_coefficients_f32(steps[s], rates[s], static_cast<float>(u.beta1),
                                              static_cast<float>(u.beta2), static_cast<float>(u.weightDecay), c),
                PTRAIN_OK);
      if (u.clip)
        address->toPtr<void (*)(float *, float *, float *, float *, const float *, float, float, float)>()(
            gotP.data(), g.data(), gotM.data(), gotV.data(), &scale, c[0], c[1], c[2]);
      else
        address->toPtr<void (*)(float *, float *, float *, float *, float, float, float)>()(
            gotP.data(), g.data(), gotM.data(), gotV.data(), c[0], c[1], c[2]);
      ASSERT_EQ(firstDifference(gotM, wantM), -1) << "m after step " << steps[s];
      ASSERT_EQ(firstDifference(gotV, wantV), -1) << "v after step " << steps[s];
      ASSERT_EQ(firstDifference(gotP, wantP), -1) << "p after step " << steps[s];
      ++checked;
    }
    // The updates moved the parameters (a kernel that did nothing would equal a runtime that did nothing).
    EXPECT_NE(std::memcmp(gotP.data(), p.data(), n * sizeof(float)), 0);
  }
  EXPECT_EQ(checked, static_cast<int>(updates.size()) * 5);
  // One kernel per (size, betas, epsilon, clip): the weight decay is an argument.
  auto kernels = dyn_cast<ModuleOp>(SymbolTable::lookupSymbolIn(*module, kKernelModuleName));
  EXPECT_EQ(std::distance(kernels.getOps<func::FuncOp>().begin(), kernels.getOps<func::FuncOp>().end()),
            static_cast<std::ptrdiff_t>(updates.size()));
}

/// Calls a kernel of `args.size()` float pointers (2 to 6).
void callWithPointers(llvm::orc::ExecutorAddr address, std::vector<float *> &a) {
  switch (a.size()) {
  case 2:
    return address.toPtr<void (*)(float *, float *)>()(a[0], a[1]);
  case 3:
    return address.toPtr<void (*)(float *, float *, float *)>()(a[0], a[1], a[2]);
  case 4:
    return address.toPtr<void (*)(float *, float *, float *, float *)>()(a[0], a[1], a[2], a[3]);
  case 5:
    return address.toPtr<void (*)(float *, float *, float *, float *, float *)>()(a[0], a[1], a[2], a[3], a[4]);
  case 6:
    return address.toPtr<void (*)(float *, float *, float *, float *, float *, float *)>()(a[0], a[1], a[2], a[3], a[4],
                                                                                           a[5]);
  default:
    FAIL() << "no test signature for " << a.size() << " pointers";
  }
}

// The CUDA route (KernelPtx.h, docs/GeneratedKernels.md "The CUDA route") without a GPU: each gpu.func of
// buildGpuKernels run on the CPU thread by thread (its body, block_id and thread_id the induction variables of
// two loops over the grid, 64 threads per block so that the grids have several blocks and a partial last one)
// computes the same bits as the CPU object's kernel of the same chain: the index delinearization, the
// broadcasts' index maps, the guard and the outputs; for the softmax chains (row kernels) the rows' (and row
// groups') mapping onto threads.
TEST_P(GeneratedKernelsTest, GpuKernelsThreadByThreadEqualTheCpuKernels) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kPatterns, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(createOutlineElementwisePass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(*module, kKernelModuleName));
  ASSERT_TRUE(kernels);
  KernelPtxOptions options;
  options.threadsPerBlock = 64;
  llvm::StringMap<GpuKernelLaunch> launches;
  OwningOpRef<ModuleOp> gpuKernels = buildGpuKernels(kernels, options, launches);
  int rowKernels = 0;
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    EXPECT_TRUE(hasGpuKernel(kernel)) << kernel.getSymName().str();
    rowKernels += launches.lookup(kernel.getSymName()).rows;
  }
  EXPECT_EQ(launches.size(), 12u);
  EXPECT_EQ(rowKernels, 4); // the softmax chains: a row (group) per thread

  // The emulation, beside the CPU kernels in one object: func.func @<kernel>_threads(the kernel's memrefs).
  OwningOpRef<ModuleOp> both(cast<ModuleOp>(kernels->clone()));
  OpBuilder b = OpBuilder::atBlockEnd(both->getBody());
  int emulated = 0;
  gpuKernels->walk([&](gpu::GPUFuncOp kernel) {
    const GpuKernelLaunch &launch = launches.find(kernel.getName())->second;
    Location loc = kernel.getLoc();
    auto f = func::FuncOp::create(b, loc, (kernel.getName() + "_threads").str(), kernel.getFunctionType());
    Block *entry = f.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockBegin(entry);
    Value zero = arith::ConstantIndexOp::create(fb, loc, 0), one = arith::ConstantIndexOp::create(fb, loc, 1);
    Value blocks = arith::ConstantIndexOp::create(fb, loc, launch.blocks);
    Value threads = arith::ConstantIndexOp::create(fb, loc, launch.threads);
    auto overBlocks = scf::ForOp::create(fb, loc, zero, blocks, one);
    OpBuilder ob = OpBuilder::atBlockTerminator(overBlocks.getBody());
    auto overThreads = scf::ForOp::create(ob, loc, zero, threads, one);
    OpBuilder tb = OpBuilder::atBlockTerminator(overThreads.getBody());
    IRMapping mapping;
    mapping.map(kernel.getArguments(), entry->getArguments());
    for (Operation &op : kernel.getBody().front()) {
      if (isa<gpu::BlockIdOp>(op))
        mapping.map(op.getResult(0), overBlocks.getInductionVar());
      else if (isa<gpu::ThreadIdOp>(op))
        mapping.map(op.getResult(0), overThreads.getInductionVar());
      else if (isa<gpu::BlockDimOp>(op))
        mapping.map(op.getResult(0), threads);
      else if (!isa<gpu::ReturnOp>(op))
        tb.clone(op, mapping);
    }
    func::ReturnOp::create(fb, loc);
    ++emulated;
  });
  ASSERT_EQ(emulated, 12);
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  KernelObjectOptions objectOptions;
  objectOptions.cpu = GetParam();
  ASSERT_TRUE(succeeded(writeKernelObject(*both, os, objectOptions)));
  auto created = llvm::orc::LLJITBuilder().create();
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
  std::unique_ptr<llvm::orc::LLJIT> jit = std::move(*created);
  ASSERT_FALSE(jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object.str(), "kernels.o")));

  std::mt19937 rng(80);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  std::uniform_int_distribution<size_t> special(0, std::size(kSpecials) * 8 - 1);
  for (auto &entry : launches) {
    const GpuKernelLaunch &launch = entry.getValue();
    auto kernel = cast<func::FuncOp>(SymbolTable::lookupSymbolIn(kernels, launch.name));
    std::vector<std::vector<float>> inputs, want, got;
    for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes())) {
      const int64_t n = cast<MemRefType>(type).getNumElements();
      if (i < launch.numInputs) {
        std::vector<float> data(n);
        for (float &x : data) {
          const size_t pick = special(rng);
          x = pick < std::size(kSpecials) ? kSpecials[pick] : wide(rng);
        }
        inputs.push_back(std::move(data));
        continue;
      }
      want.emplace_back(n, std::numeric_limits<float>::quiet_NaN());
      got.emplace_back(n, std::numeric_limits<float>::quiet_NaN());
    }
    // Outputs NaN-filled: an element the emulated grid misses shows.
    std::vector<float *> cpuArgs, gpuArgs;
    for (std::vector<float> &in : inputs) {
      cpuArgs.push_back(in.data());
      gpuArgs.push_back(in.data());
    }
    for (auto [w, g] : llvm::zip(want, got)) {
      cpuArgs.push_back(w.data());
      gpuArgs.push_back(g.data());
    }
    auto cpu = jit->lookup(launch.name), threads = jit->lookup(launch.name + "_threads");
    ASSERT_TRUE(static_cast<bool>(cpu)) << llvm::toString(cpu.takeError());
    ASSERT_TRUE(static_cast<bool>(threads)) << llvm::toString(threads.takeError());
    ASSERT_NO_FATAL_FAILURE(callWithPointers(*cpu, cpuArgs));
    ASSERT_NO_FATAL_FAILURE(callWithPointers(*threads, gpuArgs));
    for (auto [k, pair] : llvm::enumerate(llvm::zip(got, want))) {
      auto &[g, w] = pair;
      EXPECT_EQ(firstDifference(g, w), -1)
          << launch.name << " output " << k << " on " << GetParam() << ": the GPU kernel differs from the CPU's";
      EXPECT_LT(std::count_if(w.begin(), w.end(), [](float x) { return std::isnan(x); }),
                static_cast<std::ptrdiff_t>(w.size()))
          << launch.name << ": every output NaN";
    }
  }
}

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

// lowerKernelsToPtx's own checks, which ptrain-translate's option cannot reach (it names archs, never threads).
TEST(GeneratedKernelsObjectTest, PtxOptionsAreChecked) {
  MLIRContext context;
  DialectRegistry registry;
  registerPTrainDialects(registry);
  context.appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> empty = ModuleOp::create(UnknownLoc::get(&context));
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  KernelPtxOptions options;
  options.archs.clear();
  EXPECT_TRUE(failed(lowerKernelsToPtx(*empty, options)));
  EXPECT_NE(message.find("no CUDA architecture to compile the generated kernels for"), std::string::npos) << message;
  options.archs = {"sm_90", "sm_8"};
  EXPECT_TRUE(failed(lowerKernelsToPtx(*empty, options)));
  EXPECT_NE(message.find("'sm_8' is no CUDA architecture"), std::string::npos) << message;
  options.archs = {"sm_90"};
  options.threadsPerBlock = 100;
  EXPECT_TRUE(failed(lowerKernelsToPtx(*empty, options)));
  EXPECT_NE(message.find("100 threads per block: must be a multiple of 32 in [32, 1024]"), std::string::npos)
      << message;
  options.threadsPerBlock = 256;
  FailureOr<KernelPtx> none = lowerKernelsToPtx(*empty, options); // no kernel: no image, no error
  ASSERT_TRUE(succeeded(none));
  EXPECT_TRUE(none->kernels.empty() && none->images.empty());
}

} // namespace
