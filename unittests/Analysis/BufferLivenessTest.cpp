//===- BufferLivenessTest.cpp - the storage analysis of both targets ------===//
//
// The rules that differ between StorageRules::cpu() and StorageRules::cuda(), and the kernel scratch the CPU
// target declares, on small functions (the end-to-end equality with the generated code is CTest
// codegen-cpu-memory-plan).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/BufferLiveness.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

class BufferLivenessTest : public ::testing::Test {
protected:
  BufferLivenessTest() {
    DialectRegistry registry;
    registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  func::FuncOp parse(llvm::StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "parse failed";
    return module ? module->lookupSymbol<func::FuncOp>("f") : func::FuncOp();
  }

  /// The result of the op at `index` of @f's body.
  Value result(func::FuncOp f, int64_t index, unsigned number = 0) {
    return std::next(f.getBody().front().begin(), index)->getResult(number);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// An all-reduce's input: live until the wait on the CPU (MPI reads it), only until the start on CUDA (NCCL is
// ordered on the stream); the wait aliases the request's buffer on both.
TEST_F(BufferLivenessTest, CollectiveInputHeldUntilWaitOnCpuOnly) {
  func::FuncOp f = parse(R"mlir(
    ptrain.grid @grid(dp = 2)
    func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %g = ptrain.binary mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
      %r = ptrain.all_reduce_start %g on @grid axes [dp] reduction = sum : tensor<4x8xf32>
      %y = ptrain.binary add %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
      %s = ptrain.wait %r : !ptrain.request<tensor<4x8xf32>>
      return %s : tensor<4x8xf32>
    })mlir");
  ASSERT_TRUE(f);
  Value g = result(f, 0), request = result(f, 1), wait = result(f, 3);
  for (bool cpu : {true, false}) {
    BufferLiveness liveness(f, cpu ? StorageRules::cpu() : StorageRules::cuda());
    liveness.run();
    const ValueStorage &s = liveness.lookup(g);
    ASSERT_EQ(s.kind, ValueStorage::Arena);
    EXPECT_EQ(liveness.buffers()[s.buffer].last, cpu ? 3 : 1) << (cpu ? "cpu" : "cuda");
    EXPECT_EQ(liveness.lookup(wait).kind, ValueStorage::Alias);
    EXPECT_EQ(liveness.lookup(wait).root, request);
    EXPECT_EQ(liveness.arenaBytes() % (cpu ? 64 : 256), 0);
  }
}

// The CPU target's kernel scratch is planned with the values: a layer norm without bias takes a zero bias and
// its statistics (cpuKernelScratch), live at its op only; CUDA adds its own while it emits (addScratch).
TEST_F(BufferLivenessTest, CpuScratchIsDeclared) {
  func::FuncOp f = parse(R"mlir(
    func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
      %h = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
      return %h : tensor<4x8xf32>
    })mlir");
  ASSERT_TRUE(f);
  Operation *ln = &f.getBody().front().front();
  BufferLiveness cpu(f, StorageRules::cpu());
  cpu.run();
  ASSERT_EQ(cpu.scratchOf(ln).size(), 3u);
  SmallVector<int64_t> bytes;
  for (int64_t b : cpu.scratchOf(ln)) {
    bytes.push_back(cpu.buffers()[b].bytes);
    EXPECT_EQ(cpu.buffers()[b].first, 0);
    EXPECT_EQ(cpu.buffers()[b].last, 0);
    EXPECT_FALSE(cpu.bufferValues()[b]);
  }
  EXPECT_EQ(bytes, (SmallVector<int64_t>{32, 16, 16})); // zero bias (8 floats), mean and rstd (4 rows)
  // The result (128 B) and the three scratch buffers (64 B each, aligned), all live at op 0.
  EXPECT_EQ(cpu.buffers().size(), 4u);
  EXPECT_EQ(cpu.arenaBytes(), 128 + 3 * 64);

  BufferLiveness cuda(f, StorageRules::cuda());
  cuda.run(/*place=*/false);
  EXPECT_TRUE(cuda.scratchOf(ln).empty());
  int64_t b = cuda.addScratch(ln, 100);
  EXPECT_EQ(cuda.scratchOf(ln).front(), b);
  EXPECT_EQ(cuda.place(), 2 * 256);
}

// A layer norm's gradient on the CPU reads the mean and rstd its forward saved (savedStatsOf): the forward's last
// two scratch buffers live until the gradient, which declares only its unused bias gradient's scratch. Another
// epsilon, or the CUDA rules, recompute.
TEST_F(BufferLivenessTest, LayerNormGradientReadsTheForwardsSavedStatistics) {
  func::FuncOp f = parse(R"mlir(
    func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) {
      %h = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
      %e = ptrain.binary add %h, %h : tensor<4x8xf32>, tensor<4x8xf32>
      %dx, %dg = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
      %dx2, %dg2 = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
      return %e, %dx, %dg, %dx2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
    })mlir");
  ASSERT_TRUE(f);
  auto it = f.getBody().front().begin();
  Operation *ln = &*it, *grad = &*std::next(it, 2), *other = &*std::next(it, 3);
  BufferLiveness cpu(f, StorageRules::cpu());
  cpu.run();
  EXPECT_EQ(cpu.savedStatsOf(grad), ln);
  EXPECT_EQ(cpu.savedStatsOf(other), nullptr); // another epsilon
  ArrayRef<int64_t> fwd = cpu.scratchOf(ln);
  ASSERT_EQ(fwd.size(), 3u);
  EXPECT_EQ(cpu.buffers()[fwd[0]].last, 0); // the zero bias: the forward's only
  EXPECT_EQ(cpu.buffers()[fwd[1]].last, 2); // mean and rstd: until the gradient
  EXPECT_EQ(cpu.buffers()[fwd[2]].last, 2);
  ASSERT_EQ(cpu.scratchOf(grad).size(), 1u); // the unused bias gradient (8 floats)
  EXPECT_EQ(cpu.buffers()[cpu.scratchOf(grad)[0]].bytes, 32);
  EXPECT_EQ(cpu.scratchOf(other).size(), 5u); // zero bias, y, mean, rstd, bias gradient

  StorageRules off = StorageRules::cpu();
  off.layerNormSavedStats = false;
  BufferLiveness recompute(f, off);
  recompute.run();
  EXPECT_EQ(recompute.savedStatsOf(grad), nullptr);
  EXPECT_EQ(recompute.scratchOf(grad).size(), 5u);
  EXPECT_EQ(recompute.buffers()[recompute.scratchOf(ln)[1]].last, 0);

  BufferLiveness cuda(f, StorageRules::cuda());
  cuda.run(/*place=*/false);
  EXPECT_EQ(cuda.savedStatsOf(grad), nullptr);
}

// A zero splat only written to states is filled by the writes on the CPU (no buffer); a large mask several ops
// read is generated where it is defined. On CUDA both are constants of the device block.
TEST_F(BufferLivenessTest, GeneratedConstants) {
  func::FuncOp f = parse(R"mlir(
    ptrain.state @g key "g" kind gradient : tensor<16x16xf32>
    func.func @f(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
      %z = arith.constant dense<0.0> : tensor<16x16xf32>
      ptrain.state_write %z to @g : tensor<16x16xf32>
      %one = arith.constant dense<1.0> : tensor<16x16xf32>
      %a = ptrain.binary add %x, %one : tensor<16x16xf32>, tensor<16x16xf32>
      %b = ptrain.binary mul %a, %one : tensor<16x16xf32>, tensor<16x16xf32>
      return %b : tensor<16x16xf32>
    })mlir");
  ASSERT_TRUE(f);
  Value zero = result(f, 0), one = result(f, 2);
  BufferLiveness cpu(f, StorageRules::cpu());
  cpu.run();
  EXPECT_EQ(cpu.lookup(zero).kind, ValueStorage::Virtual);
  ASSERT_EQ(cpu.lookup(one).kind, ValueStorage::Arena);
  EXPECT_EQ(cpu.fillIndexOf(one), 2); // two users: filled at its definition
  EXPECT_EQ(cpu.buffers()[cpu.lookup(one).buffer].last, 4);
  EXPECT_EQ(cpu.formOf(one)->kind, ConstantForm::Splat);

  BufferLiveness cuda(f, StorageRules::cuda());
  cuda.run();
  EXPECT_EQ(cuda.lookup(zero).kind, ValueStorage::Constant);
  EXPECT_EQ(cuda.lookup(one).kind, ValueStorage::Constant);
  EXPECT_EQ(cuda.formOf(one), nullptr);
}

// A state read is used in place unless a write of the state comes before one of its uses.
TEST_F(BufferLivenessTest, StateReadCopiedWhenOverwritten) {
  func::FuncOp f = parse(R"mlir(
    ptrain.state @m key "m" kind optimizer_moment : tensor<4xf32>
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %m = ptrain.state_read @m : tensor<4xf32>
      %n = ptrain.state_read @m : tensor<4xf32>
      %m2 = ptrain.binary add %m, %x : tensor<4xf32>, tensor<4xf32>
      ptrain.state_write %m2 to @m : tensor<4xf32>
      %y = ptrain.binary sub %x, %m : tensor<4xf32>, tensor<4xf32>
      return %y : tensor<4xf32>
    })mlir");
  ASSERT_TRUE(f);
  for (StorageRules rules : {StorageRules::cpu(), StorageRules::cuda()}) {
    BufferLiveness liveness(f, rules);
    liveness.run();
    EXPECT_EQ(liveness.lookup(result(f, 0)).kind, ValueStorage::Arena); // read again after the write
    EXPECT_EQ(liveness.lookup(result(f, 1)).kind, ValueStorage::State); // never used
  }
}

// A call writes every state its callee writes, also through a nested call (deterministic-dp's step reads a
// micro-batch's gradient after one backward call and adds it after the next): a read used after such a call
// is copied; one used before it, or of a state no callee writes, stays in place.
TEST_F(BufferLivenessTest, StateReadCopiedWhenACallOverwritesIt) {
  func::FuncOp f = parse(R"mlir(
    ptrain.state @g key "g" kind gradient : tensor<4xf32>
    ptrain.state @m key "m" kind optimizer_moment : tensor<4xf32>
    func.func private @inner(%x: tensor<4xf32>) {
      ptrain.state_write %x to @g : tensor<4xf32>
      return
    }
    func.func private @backward(%x: tensor<4xf32>) {
      call @inner(%x) : (tensor<4xf32>) -> ()
      return
    }
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      call @backward(%x) : (tensor<4xf32>) -> ()
      %g0 = ptrain.state_read @g : tensor<4xf32>
      %m = ptrain.state_read @m : tensor<4xf32>
      %u = ptrain.binary mul %g0, %x : tensor<4xf32>, tensor<4xf32>
      call @backward(%u) : (tensor<4xf32>) -> ()
      %g1 = ptrain.state_read @g : tensor<4xf32>
      %s = ptrain.binary add %g0, %g1 : tensor<4xf32>, tensor<4xf32>
      %y = ptrain.binary add %s, %m : tensor<4xf32>, tensor<4xf32>
      return %y : tensor<4xf32>
    })mlir");
  ASSERT_TRUE(f);
  for (StorageRules rules : {StorageRules::cpu(), StorageRules::cuda()}) {
    BufferLiveness liveness(f, rules);
    liveness.run();
    EXPECT_EQ(liveness.lookup(result(f, 1)).kind, ValueStorage::Arena); // %g0: used after the second call
    EXPECT_EQ(liveness.lookup(result(f, 2)).kind, ValueStorage::State); // %m: no callee writes it
    EXPECT_EQ(liveness.lookup(result(f, 5)).kind, ValueStorage::State); // %g1: no write after it
  }
}

} // namespace
