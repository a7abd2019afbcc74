//===- LossGradientTest.cpp - imported ONNX losses: values and gradients ---===//
//
// SoftmaxCrossEntropyLoss with class weights and ignore_index (and NegativeLogLikelihoodLoss) import as a
// composition of model ops (lib/Import/ONNX/LegalizeLosses.cpp). These tests import hand-built ONNX models
// with f64 scores, interpret them, and check
//   - the loss against a direct evaluation of the ONNX formula in this file (per position
//     -w[label] * log_softmax(scores)[label], 0 where label == ignore_index; mean = sum / sum of the weights
//     of the positions not ignored), and
//   - the gradient that Autodiff builds from the ops' gradient rules against central finite differences of
//     the interpreted loss (h = 1e-5 on O(1) data: method error about 1e-10; tolerance 1e-7, as in
//     GradientKernelsTest), with exact zeros at the ignored positions.
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

#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

constexpr int64_t N = 3, C = 4, D = 2;
constexpr double kStep = 1e-5;
constexpr double kTol = 1e-7;

/// A one-node model: `opType`(scores double[N, C, D], labels int64[N, D], weights = `weights` as a
/// Constant when given) -> loss, with `reduction` and `ignoreIndex` (when set).
std::string lossModel(const std::string &opType, const std::string &reduction, const int64_t *ignoreIndex,
                      const std::vector<double> &weights) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("loss");
  auto value = [](onnx::ValueInfoProto *info, const char *name, int type, std::vector<int64_t> dims) {
    info->set_name(name);
    onnx::TypeProto::Tensor *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t d : dims)
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(graph->add_input(), "scores", onnx::TensorProto::DOUBLE, {N, C, D});
  value(graph->add_input(), "labels", onnx::TensorProto::INT64, {N, D});
  value(graph->add_output(), "loss", onnx::TensorProto::DOUBLE,
        reduction == "none" ? std::vector<int64_t>{N, D} : std::vector<int64_t>{});
  if (!weights.empty()) {
    onnx::NodeProto *constant = graph->add_node();
    constant->set_op_type("Constant");
    constant->add_output("weights");
    onnx::AttributeProto *attr = constant->add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto *t = attr->mutable_t();
    t->set_data_type(onnx::TensorProto::DOUBLE);
    t->add_dims(static_cast<int64_t>(weights.size()));
    for (double w : weights)
      t->add_double_data(w);
  }
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type(opType);
  node->set_name("the_loss");
  node->add_input("scores");
  node->add_input("labels");
  if (!weights.empty())
    node->add_input("weights");
  node->add_output("loss");
  onnx::AttributeProto *attr = node->add_attribute();
  attr->set_name("reduction");
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(reduction);
  if (ignoreIndex) {
    onnx::AttributeProto *ignore = node->add_attribute();
    ignore->set_name("ignore_index");
    ignore->set_type(onnx::AttributeProto::INT);
    ignore->set_i(*ignoreIndex);
  }
  return model.SerializeAsString();
}

/// The ONNX definition, evaluated directly: `logProb` says whether scores are already log-probabilities (NLL)
/// or logits (SCE).
double referenceLoss(const std::vector<double> &scores, const std::vector<int64_t> &labels, bool logProb,
                     const std::string &reduction, const int64_t *ignoreIndex, const std::vector<double> &weights) {
  double total = 0.0, weightSum = 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      int64_t label = labels[n * D + d];
      if (ignoreIndex && label == *ignoreIndex)
        continue;
      auto at = [&](int64_t c) { return scores[(n * C + c) * D + d]; };
      double lse = 0.0;
      if (!logProb) {
        double m = at(0);
        for (int64_t c = 1; c < C; ++c)
          m = std::max(m, at(c));
        double sum = 0.0;
        for (int64_t c = 0; c < C; ++c)
          sum += std::exp(at(c) - m);
        lse = m + std::log(sum);
      }
      double w = weights.empty() ? 1.0 : weights[label];
      total += -w * (at(label) - lse);
      weightSum += w;
    }
  return reduction == "sum" ? total : total / weightSum;
}

class LossGradient : public ::testing::Test {
protected:
  LossGradient() {
    DialectRegistry registry;
    registerPTrainDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    std::mt19937 engine(7);
    std::uniform_real_distribution<double> uniform(-2.0, 2.0);
    for (double &s : scores)
      s = uniform(engine);
  }

  /// Imports the model, appends the gradient of the loss with respect to the scores as a second result of
  /// @forward (built by Autodiff from the gradient rules), and returns the module (null after a failure).
  OwningOpRef<ModuleOp> importWithGradient(const std::string &bytes) {
    OwningOpRef<ModuleOp> module = importONNX(bytes, "loss.onnx", &context);
    if (!module)
      return nullptr;
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    OpBuilder builder(ret);
    Value loss = ret.getOperand(0);
    auto lossType = cast<RankedTensorType>(loss.getType());
    Value seed = arith::ConstantOp::create(builder, ret.getLoc(),
                                           DenseElementsAttr::get(lossType, builder.getF64FloatAttr(1.0)));
    FailureOr<SmallVector<Value>> grads = buildGradients(builder, loss, seed, {forward.getArgument(0)});
    if (failed(grads))
      return nullptr;
    ret->setOperands({loss, (*grads)[0]});
    forward.setType(builder.getFunctionType(forward.getArgumentTypes(), {loss.getType(), (*grads)[0].getType()}));
    return module;
  }

  /// Loss and gradient at `at` (the interpreter runs @forward).
  std::pair<double, std::vector<double>> run(ModuleOp module, const std::vector<double> &at) {
    interp::Interpreter interpreter(module, interp::makeMapStateProvider({}));
    std::vector<interp::Tensor> args = {interp::Tensor::fromFloats(interp::DType::F64, {N, C, D}, at),
                                        llvm::cantFail(interp::Tensor::fromInts(interp::DType::I64, {N, D}, labels))};
    llvm::Expected<std::vector<interp::Tensor>> results = interpreter.run("forward", args);
    if (!results) {
      ADD_FAILURE() << llvm::toString(results.takeError());
      return {std::nan(""), {}};
    }
    return {(*results)[0].floats()[0],
            std::vector<double>((*results)[1].floats().begin(), (*results)[1].floats().end())};
  }

  /// Checks loss and gradient of `opType` against the reference and finite differences.
  void check(const std::string &opType, const std::string &reduction, const int64_t *ignoreIndex,
             const std::vector<double> &weights) {
    OwningOpRef<ModuleOp> module = importWithGradient(lossModel(opType, reduction, ignoreIndex, weights));
    ASSERT_TRUE(module);
    auto [loss, grad] = run(*module, scores);
    double expected =
        referenceLoss(scores, labels, opType == "NegativeLogLikelihoodLoss", reduction, ignoreIndex, weights);
    EXPECT_NEAR(loss, expected, 1e-12 * std::max(1.0, std::abs(expected)));
    ASSERT_EQ(grad.size(), scores.size());
    for (size_t i = 0; i < scores.size(); ++i) {
      std::vector<double> plus = scores, minus = scores;
      plus[i] += kStep;
      minus[i] -= kStep;
      double numeric = (run(*module, plus).first - run(*module, minus).first) / (2 * kStep);
      EXPECT_NEAR(grad[i], numeric, kTol) << "d loss / d scores[" << i << "]";
      int64_t n = static_cast<int64_t>(i) / (C * D), d = static_cast<int64_t>(i) % D;
      if (ignoreIndex && labels[n * D + d] == *ignoreIndex) {
        EXPECT_EQ(grad[i], 0.0) << "ignored position, scores[" << i << "]";
      }
    }
  }

  MLIRContext context;
  std::vector<double> scores = std::vector<double>(N * C * D);
  /// Position (1, 0) and (2, 1) carry the ignored label 1; class 3 appears once.
  std::vector<int64_t> labels = {0, 3, 1, 2, 2, 1};
};

TEST_F(LossGradient, SoftmaxCrossEntropyIgnoreIndexMean) {
  int64_t ignore = 1;
  check("SoftmaxCrossEntropyLoss", "mean", &ignore, {});
}

TEST_F(LossGradient, SoftmaxCrossEntropyWeightsIgnoreIndexMean) {
  int64_t ignore = 1;
  check("SoftmaxCrossEntropyLoss", "mean", &ignore, {0.5, 2.0, 1.5, 0.25});
}

TEST_F(LossGradient, SoftmaxCrossEntropyWeightsSum) {
  check("SoftmaxCrossEntropyLoss", "sum", nullptr, {0.5, 2.0, 1.5, 0.25});
}

TEST_F(LossGradient, SoftmaxCrossEntropyPlainMean) { check("SoftmaxCrossEntropyLoss", "mean", nullptr, {}); }

TEST_F(LossGradient, NegativeLogLikelihoodIgnoreIndex) {
  // An ignore_index outside [0, C) (as PyTorch's -100): it selects no class and never indexes out of range.
  labels = {0, -100, 3, 2, -100, 1};
  int64_t ignore = -100;
  check("NegativeLogLikelihoodLoss", "mean", &ignore, {0.5, 2.0, 1.5, 0.25});
}

TEST_F(LossGradient, ErrorsNameTheNode) {
  // weights of the wrong length: an error at the node, no module.
  ScopedDiagnosticHandler silence(&context, [](Diagnostic &) { return success(); });
  EXPECT_FALSE(importONNX(lossModel("SoftmaxCrossEntropyLoss", "mean", nullptr, {1.0, 2.0}), "loss.onnx", &context));
}

} // namespace
