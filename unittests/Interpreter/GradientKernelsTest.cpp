//===- GradientKernelsTest.cpp - backward kernels vs finite differences ---===//
//
// Each backward kernel of PTrainGradientOps.td against central finite differences of its forward kernel, both
// run by the interpreter on f64 tensors. For a forward f and a random cotangent w, the scalar
// L(x) = sum(w * f(x)) has gradient dL/dx = (backward op)(w, ...), and
//   dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / 2h,
// with truncation error O(h^2 |f'''|) and rounding error O(eps |L| / h). With h = 1e-5 and O(1) data both are
// about 1e-10, so the tolerance kTol = 1e-7 is three orders above the method's error, while every wrong formula
// we could write (a missing term of the layer-norm backward, softmax without the dot product, the erf GELU
// derivative for the tanh form, a cross-entropy gradient without the 1/positions of the mean, a sum over the
// wrong dimensions, a misplaced pad) is off by 1e-4 or (mostly) far more: the GeluFormsDiffer test shows the
// closest pair is separated by > 1e-4.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <random>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {

/// Central-difference step and tolerance (see the file comment).
constexpr double kStep = 1e-5;
constexpr double kTol = 1e-7;

template <typename T> T ok(llvm::Expected<T> value) {
  if (!value) {
    ADD_FAILURE() << llvm::toString(value.takeError());
    return T();
  }
  return std::move(*value);
}

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(value.takeError());
}

#define EXPECT_ERROR_CONTAINS(expr, text)                                                                          \
  do {                                                                                                             \
    std::string message = errorOf(expr);                                                                           \
    EXPECT_NE(message.find(text), std::string::npos) << message;                                                   \
  } while (false)

/// A reproducible f64 tensor with elements uniform in [lo, hi).
Tensor random(llvm::ArrayRef<int64_t> shape, unsigned seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<double> values(numElements(shape));
  for (double &v : values)
    v = uniform(engine);
  return Tensor::fromFloats(DType::F64, shape, values);
}

Tensor i64(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> values) {
  return llvm::cantFail(Tensor::fromInts(DType::I64, shape, values));
}

/// sum(a * b) in double (same shapes).
double dot(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.getShape(), b.getShape());
  if (a.getShape() != b.getShape() || !a.isFloat() || !b.isFloat() ||
      a.floats().size() != static_cast<size_t>(a.getNumElements()) || b.floats().size() != a.floats().size())
    return std::nan("");
  double sum = 0.0;
  for (int64_t i = 0, e = a.getNumElements(); i < e; ++i)
    sum += a.floats()[i] * b.floats()[i];
  return sum;
}

using Forward = std::function<llvm::Expected<Tensor>(const Tensor &)>;

/// d/dx sum(w * forward(x)) by central differences, one element of x at a time.
Tensor numericGradient(const Forward &forward, const Tensor &x, const Tensor &w) {
  Tensor gradient(DType::F64, x.getShape());
  Tensor probe = x;
  for (int64_t i = 0, e = x.getNumElements(); i < e; ++i) {
    double saved = probe.floats()[i];
    probe.floats()[i] = saved + kStep;
    double plus = dot(w, ok(forward(probe)));
    probe.floats()[i] = saved - kStep;
    double minus = dot(w, ok(forward(probe)));
    probe.floats()[i] = saved;
    gradient.floats()[i] = (plus - minus) / (2 * kStep);
  }
  return gradient;
}

/// Expects `analytic` to match `numeric` within kTol everywhere, and not to be trivially zero.
void expectGradient(const Tensor &analytic, const Tensor &numeric, llvm::StringRef what) {
  ASSERT_EQ(analytic.getShape(), numeric.getShape()) << what.str();
  for (int64_t i = 0, e = numeric.getNumElements(); i < e; ++i)
    EXPECT_NEAR(analytic.floats()[i], numeric.floats()[i], kTol) << what.str() << ", element " << i;
  EXPECT_GT(numeric.maxAbs(), 1e-3) << what.str() << ": the check would be vacuous";
}

//===--- sum_to vs broadcasting add ---------------------------------------===//

TEST(SumToGrad, MatchesBroadcastingAdd) {
  // y = b + z with z of the big shape: dL/db = sum_to(dy, b.shape), for every way b can broadcast.
  llvm::SmallVector<int64_t> big = {2, 4, 3};
  Tensor z = random(big, 1);
  Tensor dy = random(big, 2);
  std::vector<llvm::SmallVector<int64_t>> smalls = {{3}, {4, 1}, {1, 1, 3}, {}, {2, 1, 3}, {2, 4, 3}, {1}};
  for (auto [i, small] : llvm::enumerate(smalls)) {
    Tensor b = random(small, 10 + i);
    Forward forward = [&](const Tensor &x) { return evalBinary(BinaryKind::Add, x, z); };
    expectGradient(ok(evalSumTo(dy, small)), numericGradient(forward, b, dy), "sum_to " + formatShape(small));
  }
}

TEST(SumToGrad, Errors) {
  Tensor dy = random({2, 4, 3}, 3);
  EXPECT_ERROR_CONTAINS(evalSumTo(dy, {4}), "do not broadcast");
  // [3,2,4,3] broadcasts with the input but to a larger shape.
  EXPECT_ERROR_CONTAINS(evalSumTo(dy, {3, 2, 4, 3}), "does not broadcast to");
  EXPECT_ERROR_CONTAINS(evalSumTo(i64({2}, {1, 2}), {1}), "needs a float tensor");
}

//===--- pad vs slice, concat vs split ------------------------------------===//

TEST(PadGrad, MatchesSlice) {
  // y = slice(x): dL/dx = pad(dy, low = offsets, high = dim - offsets - sizes).
  Tensor x = random({3, 4, 5}, 4);
  llvm::SmallVector<int64_t> offsets = {1, 0, 2}, sizes = {2, 4, 2}, high = {0, 0, 1};
  Tensor dy = random(sizes, 5);
  Forward forward = [&](const Tensor &t) { return evalSlice(t, offsets, sizes); };
  expectGradient(ok(evalPad(dy, offsets, high)), numericGradient(forward, x, dy), "pad");
}

TEST(ConcatGrad, MatchesSplit) {
  // The pieces of split(x) weighted by w_i: dL/dx = concat(w_i) (the split rule builds this concat).
  Tensor x = random({2, 6}, 6);
  llvm::SmallVector<int64_t> sizes = {1, 3, 2};
  Tensor w0 = random({2, 1}, 7), w1 = random({2, 3}, 8), w2 = random({2, 2}, 9);
  Tensor analytic = ok(evalConcat({&w0, &w1, &w2}, -1));
  Tensor numeric(DType::F64, {2, 6});
  for (int64_t i = 0; i < 12; ++i) {
    auto loss = [&](double delta) {
      Tensor probe = x;
      probe.floats()[i] += delta;
      std::vector<Tensor> pieces = ok(evalSplit(probe, 1, sizes));
      return dot(w0, pieces[0]) + dot(w1, pieces[1]) + dot(w2, pieces[2]);
    };
    numeric.floats()[i] = (loss(kStep) - loss(-kStep)) / (2 * kStep);
  }
  expectGradient(analytic, numeric, "concat");
}

TEST(SliceConcatPad, ValuesAndIntegers) {
  Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor s = ok(evalSlice(x, {0, 1}, {2, 2}));
  EXPECT_EQ(s.getShape(), llvm::ArrayRef<int64_t>({2, 2}));
  EXPECT_EQ(s.ints(), llvm::ArrayRef<int64_t>({2, 3, 5, 6}));
  Tensor p = ok(evalPad(i64({1, 2}, {7, 8}), {1, 0}, {0, 1}));
  EXPECT_EQ(p.getShape(), llvm::ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(p.ints(), llvm::ArrayRef<int64_t>({0, 0, 0, 7, 8, 0}));
  Tensor a = i64({1, 3}, {1, 2, 3}), b = i64({2, 3}, {4, 5, 6, 7, 8, 9});
  Tensor c = ok(evalConcat({&a, &b}, 0));
  EXPECT_EQ(c.getShape(), llvm::ArrayRef<int64_t>({3, 3}));
  EXPECT_EQ(c.ints(), llvm::ArrayRef<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // Empty pieces are allowed.
  Tensor empty = ok(evalSlice(x, {1, 3}, {1, 0}));
  EXPECT_EQ(empty.getNumElements(), 0);
}

TEST(SliceConcatPad, Errors) {
  Tensor x = random({2, 3}, 11);
  EXPECT_ERROR_CONTAINS(evalSlice(x, {0}, {2}), "one offset and one size per dimension");
  EXPECT_ERROR_CONTAINS(evalSlice(x, {1, 0}, {2, 3}), "does not fit");
  EXPECT_ERROR_CONTAINS(evalSlice(x, {-1, 0}, {1, 3}), "does not fit");
  EXPECT_ERROR_CONTAINS(evalPad(x, {0, -1}, {0, 0}), "must be >= 0");
  EXPECT_ERROR_CONTAINS(evalPad(x, {0}, {0}), "one low and one high entry");
  EXPECT_ERROR_CONTAINS(evalConcat({}, 0), "at least one input");
  Tensor y = random({3, 3}, 12), z = random({2, 2}, 13);
  EXPECT_ERROR_CONTAINS(evalConcat({&x, &z}, 0), "differ");
  EXPECT_ERROR_CONTAINS(evalConcat({&x, &y}, 2), "out of range");
  Tensor ints = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_ERROR_CONTAINS(evalConcat({&x, &ints}, 0), "differ");
}

//===--- layer_norm_grad vs layer_norm ------------------------------------===//

/// Checks dx, dscale and dbias of layer_norm over [axis, rank) of a `shape` input.
void checkLayerNorm(llvm::ArrayRef<int64_t> shape, int64_t axis, unsigned seed) {
  int64_t dim = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  llvm::ArrayRef<int64_t> normShape = shape.drop_front(dim);
  Tensor x = random(shape, seed, -2.0, 2.0);
  Tensor scale = random(normShape, seed + 1, 0.5, 1.5);
  Tensor bias = random(normShape, seed + 2);
  Tensor dy = random(shape, seed + 3);
  const double epsilon = 1e-5;
  std::vector<Tensor> grads = ok(evalLayerNormGrad(dy, x, scale, axis, epsilon, /*withBias=*/true));
  ASSERT_EQ(grads.size(), 3u);
  expectGradient(grads[0],
                 numericGradient([&](const Tensor &t) { return evalLayerNorm(t, scale, &bias, axis, epsilon); }, x,
                                 dy),
                 "layer_norm dx");
  expectGradient(grads[1],
                 numericGradient([&](const Tensor &t) { return evalLayerNorm(x, t, &bias, axis, epsilon); }, scale,
                                 dy),
                 "layer_norm dscale");
  expectGradient(grads[2],
                 numericGradient([&](const Tensor &t) { return evalLayerNorm(x, scale, &t, axis, epsilon); }, bias,
                                 dy),
                 "layer_norm dbias");
  // Without a bias: the same dx and dscale, no third result.
  std::vector<Tensor> noBias = ok(evalLayerNormGrad(dy, x, scale, axis, epsilon, /*withBias=*/false));
  ASSERT_EQ(noBias.size(), 2u);
  EXPECT_EQ(noBias[0].floats(), grads[0].floats());
  EXPECT_EQ(noBias[1].floats(), grads[1].floats());
}

TEST(LayerNormGrad, LastAxis) { checkLayerNorm({3, 2, 8}, -1, 20); }

TEST(LayerNormGrad, TwoNormalizedDimensions) { checkLayerNorm({2, 3, 4}, 1, 30); }

TEST(LayerNormGrad, Errors) {
  Tensor x = random({2, 4}, 40), dy = random({2, 4}, 41);
  EXPECT_ERROR_CONTAINS(evalLayerNormGrad(dy, x, random({2, 4}, 42), -1, 1e-5, false),
                        "does not match the normalized shape");
  EXPECT_ERROR_CONTAINS(evalLayerNormGrad(random({4, 2}, 43), x, random({4}, 44), -1, 1e-5, false),
                        "does not match the input");
  EXPECT_ERROR_CONTAINS(evalLayerNormGrad(dy, x, random({4}, 45), 2, 1e-5, false), "out of range");
  EXPECT_ERROR_CONTAINS(evalLayerNormGrad(dy, x, random({4}, 46), -1, 0.0, false), "epsilon");
}

//===--- softmax_grad vs softmax ------------------------------------------===//

TEST(SoftmaxGrad, MatchesSoftmaxOnEachAxis) {
  Tensor x = random({2, 3, 4}, 50, -2.0, 2.0);
  Tensor dy = random({2, 3, 4}, 51);
  for (int64_t axis : {-1, 1, 0}) {
    Tensor y = ok(evalSoftmax(x, axis));
    expectGradient(ok(evalSoftmaxGrad(dy, y, axis)),
                   numericGradient([&](const Tensor &t) { return evalSoftmax(t, axis); }, x, dy),
                   "softmax axis " + std::to_string(axis));
  }
}

TEST(SoftmaxGrad, Errors) {
  Tensor y = random({2, 3}, 52);
  EXPECT_ERROR_CONTAINS(evalSoftmaxGrad(random({3, 2}, 53), y, -1), "one float type");
  EXPECT_ERROR_CONTAINS(evalSoftmaxGrad(random({2, 3}, 54), y, 2), "out of range");
}

//===--- gelu_grad vs gelu -------------------------------------------------===//

TEST(GeluGrad, MatchesBothForms) {
  Tensor x = random({5, 7}, 60, -4.0, 4.0);
  Tensor dy = random({5, 7}, 61);
  for (GeluApproximation form : {GeluApproximation::None, GeluApproximation::Tanh})
    expectGradient(ok(evalGeluGrad(form, dy, x)),
                   numericGradient([&](const Tensor &t) { return evalGelu(form, t); }, x, dy),
                   "gelu " + stringifyGeluApproximation(form).str());
}

TEST(GeluGrad, FormsDiffer) {
  // The erf and tanh derivatives differ by far more than kTol, so each form's check above would catch the
  // other form's formula.
  Tensor x = random({64}, 62, -4.0, 4.0);
  Tensor ones = Tensor::fromFloats(DType::F64, {64}, std::vector<double>(64, 1.0));
  Tensor erfForm = ok(evalGeluGrad(GeluApproximation::None, ones, x));
  Tensor tanhForm = ok(evalGeluGrad(GeluApproximation::Tanh, ones, x));
  Tensor difference = ok(evalBinary(BinaryKind::Sub, erfForm, tanhForm));
  EXPECT_GT(difference.maxAbs(), 1e-4);
}

TEST(GeluGrad, Errors) {
  EXPECT_ERROR_CONTAINS(evalGeluGrad(GeluApproximation::None, random({2}, 63), random({3}, 64)), "one float type");
  EXPECT_ERROR_CONTAINS(evalGeluGrad(GeluApproximation::None, i64({1}, {1}), i64({1}, {1})), "one float type");
}

//===--- embedding_grad vs embedding --------------------------------------===//

TEST(EmbeddingGrad, MatchesEmbeddingWithRepeatedIds) {
  // Ids repeat (1 three times, 3 twice) so rows must accumulate; rows 2 and 4 are unused and stay zero.
  Tensor table = random({5, 3}, 70);
  Tensor ids = i64({2, 3}, {1, 3, 1, 0, 3, 1});
  Tensor dy = random({2, 3, 3}, 71);
  Tensor analytic = ok(evalEmbeddingGrad(dy, ids, 5));
  expectGradient(analytic, numericGradient([&](const Tensor &t) { return evalEmbedding(t, ids); }, table, dy),
                 "embedding");
  for (int64_t row : {2, 4})
    for (int64_t h = 0; h < 3; ++h)
      EXPECT_EQ(analytic.floats()[row * 3 + h], 0.0);
}

TEST(EmbeddingGrad, Errors) {
  Tensor dy = random({2, 3}, 72);
  EXPECT_ERROR_CONTAINS(evalEmbeddingGrad(dy, i64({2}, {0, 5}), 5), "id 5 at flat position 1 is out of range [0, 5)");
  EXPECT_ERROR_CONTAINS(evalEmbeddingGrad(dy, i64({2}, {-1, 0}), 5), "id -1");
  EXPECT_ERROR_CONTAINS(evalEmbeddingGrad(dy, i64({3}, {0, 1, 2}), 5), "ids x H");
  EXPECT_ERROR_CONTAINS(evalEmbeddingGrad(dy, random({2}, 73), 5), "must be integers");
}

//===--- cross_entropy_grad vs cross_entropy ------------------------------===//

TEST(CrossEntropyGrad, MatchesMeanLossOverAllPositions) {
  // Two leading dimensions (6 positions): the gradient carries dloss / 6, not dloss / 3 or dloss.
  Tensor logits = random({2, 3, 5}, 80, -3.0, 3.0);
  Tensor labels = i64({2, 3}, {0, 4, 2, 2, 1, 3});
  Tensor dloss = Tensor::fromFloats(DType::F64, {}, {0.7});
  expectGradient(ok(evalCrossEntropyGrad(dloss, logits, labels)),
                 numericGradient([&](const Tensor &t) { return evalCrossEntropy(t, labels); }, logits, dloss),
                 "cross_entropy");
}

TEST(CrossEntropyGrad, Errors) {
  Tensor logits = random({2, 3}, 81);
  Tensor dloss = Tensor::fromFloats(DType::F64, {}, {1.0});
  EXPECT_ERROR_CONTAINS(evalCrossEntropyGrad(dloss, logits, i64({2}, {0, 3})),
                        "label 3 at flat position 1 is out of range [0, 3)");
  EXPECT_ERROR_CONTAINS(evalCrossEntropyGrad(random({1}, 82), logits, i64({2}, {0, 1})), "float scalar");
  EXPECT_ERROR_CONTAINS(evalCrossEntropyGrad(dloss, logits, i64({3}, {0, 1, 2})), "leading shape");
  EXPECT_ERROR_CONTAINS(evalCrossEntropyGrad(dloss, logits, random({2}, 83)), "must be integers");
}

TEST(CrossEntropyGrad, WeightsIgnoreIndexAndSumMatchTheLoss) {
  // PyTorch's weighted mean sum(w[y] nll) / sum(w[y]) over the labels that are not -100 (positions 1 and 4),
  // and the sum; the gradient of each against central differences of the loss, exact zeros where ignored.
  Tensor logits = random({2, 3, 5}, 84, -3.0, 3.0);
  Tensor labels = i64({2, 3}, {0, -100, 2, 4, -100, 3});
  Tensor weights = Tensor::fromFloats(DType::F64, {5}, {0.5, 1.0, 1.5, 2.0, 3.0});
  Tensor dloss = Tensor::fromFloats(DType::F64, {}, {0.7});
  for (bool sum : {false, true}) {
    CrossEntropyOptions options{&weights, -100, sum};
    Tensor grad = ok(evalCrossEntropyGrad(dloss, logits, labels, options));
    expectGradient(
        grad, numericGradient([&](const Tensor &t) { return evalCrossEntropy(t, labels, options); }, logits, dloss),
        sum ? "cross_entropy sum" : "cross_entropy weighted mean");
    for (int64_t c = 0; c < 5; ++c)
      EXPECT_EQ(grad.floats()[1 * 5 + c], 0.0) << "ignored position 1, class " << c;
  }
  // The mean by hand: w = 0.5, 1.5, 3.0, 2.0 at positions 0, 2, 3, 5.
  Tensor mean = ok(evalCrossEntropy(logits, labels, {&weights, -100, false}));
  Tensor total = ok(evalCrossEntropy(logits, labels, {&weights, -100, true}));
  EXPECT_NEAR(mean.floats()[0], total.floats()[0] / 7.0, 1e-12);
  // An ignored label may be outside [0, C); any other is an error naming ignore_index.
  EXPECT_ERROR_CONTAINS(evalCrossEntropy(logits, i64({2, 3}, {0, -1, 2, 4, 0, 3}), {nullptr, -100, false}),
                        "label -1 at flat position 1 is out of range [0, 5) and is not ignore_index -100");
  // Every position ignored: NaN, as PyTorch.
  EXPECT_TRUE(
      std::isnan(ok(evalCrossEntropy(logits, i64({2, 3}, {-100, -100, -100, -100, -100, -100}), {nullptr, -100, false}))
                     .floats()[0]));
}

} // namespace
