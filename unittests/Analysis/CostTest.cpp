//===- CostTest.cpp - CostOpInterface and its fallback ---------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainCost.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

TEST(CostTest, InterfaceAndFallback) {
  DialectRegistry registry;
  registerPTrainDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"(
    func.func @f(%x: tensor<4x64x128xf32>, %w: tensor<128x384xf32>, %ids: tensor<4x64xi64>,
                 %t: tensor<256x128xf32>) -> tensor<4x64x384xf32> {
      %y = ptrain.matmul %x, %w : tensor<4x64x128xf32>, tensor<128x384xf32>
      %z = ptrain.unary exp %y : tensor<4x64x384xf32>
      %r = ptrain.reshape %z : tensor<4x64x384xf32> -> tensor<256x384xf32>
      %e = ptrain.embedding %t, %ids : tensor<256x128xf32>, tensor<4x64xi64>
      return %z : tensor<4x64x384xf32>
    })",
                                                             &ctx);
  ASSERT_TRUE(module);
  SmallVector<OpCost> costs;
  module->walk([&](Operation *op) {
    if (!isa<ModuleOp, func::FuncOp>(op))
      costs.push_back(getOpCost(op));
  });
  ASSERT_EQ(costs.size(), 5u);
  double y = 4 * 64 * 384;
  EXPECT_DOUBLE_EQ(costs[0].flops, 2 * y * 128);                           // matmul: 2 n k m
  EXPECT_DOUBLE_EQ(costs[0].bytes, 4.0 * (4 * 64 * 128 + 128 * 384 + y));  // operands + result
  EXPECT_DOUBLE_EQ(costs[1].flops, y);                                     // fallback: 1 per element
  EXPECT_DOUBLE_EQ(costs[1].bytes, 8.0 * y);                               // fallback: in + out
  EXPECT_DOUBLE_EQ(costs[2].bytes, 0);                                     // reshape is a view
  EXPECT_DOUBLE_EQ(costs[3].bytes, 8.0 * 4 * 64 + 2 * 4.0 * 4 * 64 * 128); // gather
  EXPECT_DOUBLE_EQ(costs[4].flops, 0);                                     // return
}

} // namespace
