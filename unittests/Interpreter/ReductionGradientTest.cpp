//===- ReductionGradientTest.cpp - imported ReduceMax/Min/Prod: gradients ---===//
//
// ReduceMax, ReduceMin and ReduceProd (opset 13: axes attribute, opset 18: axes input) import as
// `ptrain.reduce max`, -max(-x) and a tree of `binary mul` over size-1 splits (lib/Import/ONNX/
// LegalizeReductions.cpp). These tests import hand-built one-node ONNX models on f64 data, check the values
// against a direct evaluation, and the gradient that Autodiff builds from the ops' rules (seeded with a random
// dy) against central finite differences of sum(dy * y) (h = 1e-5, tolerance 1e-7 as in LossGradientTest);
// ties of max/min split dy evenly (PyTorch's amax/amin), checked exactly, and ReduceProd's gradient is the
// product of the others also with one and with two zeros in a group.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Import/ONNX/ImportONNX.h"
#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "onnx/onnx_pb.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

constexpr int64_t N = 3, C = 4, D = 2; // x is [N, C, D], reduced over axis 1
constexpr double kStep = 1e-5;
constexpr double kTol = 1e-7;

/// `opType`(x double[N, C, D]) over axis 1 with keepdims 0 -> y double[N, D]; the axes are an attribute at
/// opset 13 and an initializer input at opset 18.
std::string reduceModel(const std::string &opType, int64_t opset) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(opset);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("reduce");
  auto value = [](onnx::ValueInfoProto *info, const char *name, std::vector<int64_t> dims) {
    info->set_name(name);
    onnx::TypeProto::Tensor *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::DOUBLE);
    for (int64_t d : dims)
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(graph->add_input(), "x", {N, C, D});
  value(graph->add_output(), "y", {N, D});
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type(opType);
  node->set_name("the_reduce");
  node->add_input("x");
  node->add_output("y");
  onnx::AttributeProto *keep = node->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  if (opset >= 18) {
    onnx::TensorProto *axes = graph->add_initializer();
    axes->set_name("axes");
    axes->set_data_type(onnx::TensorProto::INT64);
    axes->add_dims(1);
    axes->add_int64_data(1);
    node->add_input("axes");
  } else {
    onnx::AttributeProto *axes = node->add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    axes->add_ints(1);
  }
  return model.SerializeAsString();
}

class ReductionGradient : public ::testing::Test {
protected:
  ReductionGradient() {
    DialectRegistry registry;
    registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    std::mt19937 engine(11);
    std::uniform_real_distribution<double> uniform(-2.0, 2.0);
    for (double &v : x)
      v = uniform(engine);
    for (double &v : dy)
      v = uniform(engine);
  }

  /// Imports the model and appends dL/dx for L = sum(dy * y) as a second result of @forward.
  OwningOpRef<ModuleOp> importWithGradient(const std::string &bytes) {
    OwningOpRef<ModuleOp> module = importONNX(bytes, "reduce.onnx", &context);
    if (!module)
      return nullptr;
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    OpBuilder builder(ret);
    Value y = ret.getOperand(0);
    auto type = cast<RankedTensorType>(y.getType());
    Value seed = arith::ConstantOp::create(builder, ret.getLoc(), DenseElementsAttr::get(type, ArrayRef<double>(dy)));
    FailureOr<SmallVector<Value>> grads = buildGradients(builder, y, seed, {forward.getArgument(0)});
    if (failed(grads))
      return nullptr;
    ret->setOperands({y, (*grads)[0]});
    forward.setType(builder.getFunctionType(forward.getArgumentTypes(), {y.getType(), (*grads)[0].getType()}));
    return module;
  }

  /// y and dL/dx at `at`.
  std::pair<std::vector<double>, std::vector<double>> run(ModuleOp module, const std::vector<double> &at) {
    interp::Interpreter interpreter(module, interp::makeMapStateProvider({}));
    std::vector<interp::Tensor> args = {interp::Tensor::fromFloats(interp::DType::F64, {N, C, D}, at)};
    llvm::Expected<std::vector<interp::Tensor>> results = interpreter.run("forward", args);
    if (!results) {
      ADD_FAILURE() << llvm::toString(results.takeError());
      return {};
    }
    auto floats = [](const interp::Tensor &t) { return std::vector<double>(t.floats().begin(), t.floats().end()); };
    return {floats((*results)[0]), floats((*results)[1])};
  }

  double objective(ModuleOp module, const std::vector<double> &at) {
    std::vector<double> y = run(module, at).first;
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i)
      sum += dy[i] * y[i];
    return sum;
  }

  /// Checks y against `reduce` over each group x[n, :, d] and the gradient against finite differences.
  void check(const std::string &opType, int64_t opset, double (*reduce)(const std::vector<double> &)) {
    OwningOpRef<ModuleOp> module = importWithGradient(reduceModel(opType, opset));
    ASSERT_TRUE(module);
    auto [y, grad] = run(*module, x);
    ASSERT_EQ(y.size(), static_cast<size_t>(N * D));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        std::vector<double> group;
        for (int64_t c = 0; c < C; ++c)
          group.push_back(x[(n * C + c) * D + d]);
        double expected = reduce(group);
        EXPECT_NEAR(y[n * D + d], expected, 1e-15 * std::abs(expected)) << opType << " at (" << n << ", " << d << ")";
      }
    ASSERT_EQ(grad.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<double> plus = x, minus = x;
      plus[i] += kStep;
      minus[i] -= kStep;
      double numeric = (objective(*module, plus) - objective(*module, minus)) / (2 * kStep);
      EXPECT_NEAR(grad[i], numeric, kTol) << opType << "-" << opset << ": dL / dx[" << i << "]";
    }
  }

  std::vector<double> gradientAt(const std::string &opType, int64_t opset) {
    OwningOpRef<ModuleOp> module = importWithGradient(reduceModel(opType, opset));
    EXPECT_TRUE(module);
    return module ? run(*module, x).second : std::vector<double>();
  }

  MLIRContext context;
  std::vector<double> x = std::vector<double>(N * C * D), dy = std::vector<double>(N * D);
};

double maxOf(const std::vector<double> &g) { return *std::max_element(g.begin(), g.end()); }
double minOf(const std::vector<double> &g) { return *std::min_element(g.begin(), g.end()); }
double prodOf(const std::vector<double> &g) {
  double p = 1.0;
  for (double v : g)
    p *= v;
  return p;
}

TEST_F(ReductionGradient, MaxOpset18) { check("ReduceMax", 18, maxOf); }
TEST_F(ReductionGradient, MinOpset13) { check("ReduceMin", 13, minOf); }
TEST_F(ReductionGradient, MinOpset18) { check("ReduceMin", 18, minOf); }
TEST_F(ReductionGradient, ProdOpset13) { check("ReduceProd", 13, prodOf); }

TEST_F(ReductionGradient, ProdOpset18WithZeros) {
  // Group (0, 0) has one zero, group (1, 1) two zeros, the others none: the product's gradient is a
  // polynomial, so finite differences stay exact there.
  x[(0 * C + 2) * D + 0] = 0.0;
  x[(1 * C + 0) * D + 1] = 0.0;
  x[(1 * C + 3) * D + 1] = 0.0;
  check("ReduceProd", 18, prodOf);
  std::vector<double> grad = gradientAt("ReduceProd", 18);
  ASSERT_EQ(grad.size(), x.size());
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_EQ(grad[(1 * C + c) * D + 1], 0.0) << "two zeros: every element's gradient is 0";
    if (c != 2) {
      EXPECT_EQ(grad[(0 * C + c) * D + 0], 0.0) << "one zero: only the zero element has a gradient";
    }
  }
  double others = x[(0 * C + 0) * D] * x[(0 * C + 1) * D] * x[(0 * C + 3) * D];
  EXPECT_NEAR(grad[(0 * C + 2) * D + 0], dy[0] * others, 1e-14 * std::abs(dy[0] * others));
}

TEST_F(ReductionGradient, TiesSplitEvenly) {
  // Group (2, 1): its maximum 5 three times, its minimum -1 once.
  for (int64_t c = 0; c < C; ++c)
    x[(2 * C + c) * D + 1] = c == 1 ? -1.0 : 5.0;
  std::vector<double> maxGrad = gradientAt("ReduceMax", 18), minGrad = gradientAt("ReduceMin", 18);
  ASSERT_EQ(maxGrad.size(), x.size());
  ASSERT_EQ(minGrad.size(), x.size());
  double g = dy[2 * D + 1];
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_DOUBLE_EQ(maxGrad[(2 * C + c) * D + 1], c == 1 ? 0.0 : g / 3.0) << c;
    EXPECT_DOUBLE_EQ(minGrad[(2 * C + c) * D + 1], c == 1 ? g : 0.0) << c;
  }
}

} // namespace
