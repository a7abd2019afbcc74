//===- DistributedOptimizer.cpp - ZeRO-1 sharded AdamW over dp ----*- C++ -*-===//
//
// See DistributedOptimizer.h and docs/DistributedOptimizer.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/DistributedOptimizer.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Transforms/GradientClipping.h"
#include "ptrain/Transforms/LossScaling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

#include <string>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// One bucket of a ZeRO-1 optimizer step.
struct Bucket {
  SmallVector<StateOp> params;
  int64_t elements = 0; ///< N: the parameters' elements
  int64_t padded = 0;   ///< N': N rounded up to a multiple of dp
  bool decayed = false; ///< parameters of rank >= 2 (weight decay applies)
  NormTerm term = NormTerm::Owned; ///< how its gradients count in the clipping norm
};

/// Buckets of consecutive parameters of `params` (at most `bucketBytes` each, a larger parameter alone).
void fillBuckets(ArrayRef<StateOp> params, int64_t bucketBytes, bool decayed, NormTerm term,
                 SmallVectorImpl<Bucket> &buckets) {
  int64_t filled = 0;
  bool open = false;
  for (StateOp param : params) {
    RankedTensorType type = param.getTensorType();
    int64_t bytes = type.getNumElements() * static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
    if (!open || filled + bytes > bucketBytes) {
      buckets.emplace_back();
      buckets.back().decayed = decayed;
      buckets.back().term = term;
      filled = 0;
      open = true;
    }
    buckets.back().params.push_back(param);
    buckets.back().elements += type.getNumElements();
    filled += bytes;
  }
}

/// The bucket's values (`read(param)`) flattened, concatenated and zero-padded to [padded].
Value flatBucket(OpBuilder &b, Location loc, const Bucket &bucket, llvm::function_ref<Value(StateOp)> read) {
  Type element = StateOp(bucket.params.front()).getTensorType().getElementType();
  SmallVector<Value> pieces;
  for (StateOp param : bucket.params) {
    RankedTensorType type = param.getTensorType();
    Value v = read(param);
    auto flatType = RankedTensorType::get({type.getNumElements()}, element);
    pieces.push_back(type.getRank() == 1 ? v : Value(ReshapeOp::create(b, loc, flatType, v)));
  }
  if (bucket.padded > bucket.elements) {
    auto padType = RankedTensorType::get({bucket.padded - bucket.elements}, element);
    pieces.push_back(arith::ConstantOp::create(b, loc, DenseElementsAttr::get(padType, b.getFloatAttr(element, 0.0))));
  }
  if (pieces.size() == 1)
    return pieces.front();
  auto type = RankedTensorType::get({bucket.padded}, element);
  return ConcatOp::create(b, loc, type, pieces, b.getI64IntegerAttr(0));
}

} // namespace

int64_t mlir::ptrain::buildShardedAdamW(OpBuilder &b, Location loc, GridOp grid, int64_t stage,
                                        ArrayRef<StateOp> params, llvm::function_ref<StateOp(StateOp)> gradState,
                                        AddMomentState addMoment, const ShardedAdamWOptions &options, Value t,
                                        llvm::function_ref<NormTerm(StateOp)> normTerm) {
  const int64_t dp = options.dp;
  const bool clip = options.clipNorm > 0.0;
  // Groups by (weight decay, norm term); without clipping every parameter is Owned: two groups.
  SmallVector<Bucket> buckets;
  for (bool decayed : {true, false})
    for (NormTerm term : {NormTerm::Owned, NormTerm::Replicated, NormTerm::Uncounted}) {
      SmallVector<StateOp> group;
      for (StateOp param : params)
        if ((param.getTensorType().getRank() >= 2) == decayed &&
            (clip && normTerm ? normTerm(param) : NormTerm::Owned) == term)
          group.push_back(param);
      fillBuckets(group, options.bucketBytes, decayed, term, buckets);
    }
  for (Bucket &bucket : buckets)
    bucket.padded = (bucket.elements + dp - 1) / dp * dp;

  ArrayAttr dpAxes = b.getStrArrayAttr({"dp"});
  // 1. Every bucket's reduce-scatter (avg over dp), all in flight before the first wait.
  SmallVector<Value> scattered;
  for (const Bucket &bucket : buckets) {
    Value flat = flatBucket(b, loc, bucket, [&](StateOp param) -> Value {
      return StateReadOp::create(b, loc, param.getTensorType(), gradState(param).getSymName());
    });
    auto shardType = RankedTensorType::get({bucket.padded / dp}, getElementTypeOrSelf(flat.getType()));
    auto start =
        ReduceScatterStartOp::create(b, StateOp(bucket.params.front()).getLoc(),
                                     RequestType::get(b.getContext(), shardType), flat, grid.getSymName(), dpAxes,
                                     /*scatter_dim=*/0, ReductionKind::Avg);
    scattered.push_back(start.getRequest());
  }
  // With clipping or loss scaling: every shard first, unscaled (fp16), then the global norm of the shards and
  // its scale.
  SmallVector<Value> shardGrads(buckets.size());
  const bool waitFirst = clip || options.unscale;
  if (waitFirst)
    for (auto [k, request] : llvm::enumerate(scattered))
      shardGrads[k] = WaitOp::create(b, loc, request).getResult();
  Value skip = options.unscale ? options.unscale(shardGrads, t) : Value();
  if (clip) {
    GlobalNormTerms terms;
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      if (bucket.term == NormTerm::Owned)
        terms.owned.push_back(shardGrads[k]);
      else if (bucket.term == NormTerm::Replicated)
        terms.replicated.push_back(shardGrads[k]);
    }
    Value scale = buildGlobalNormClipScale(b, loc, terms, options.tp, grid, options.normAxes, options.clipNorm);
    for (Value &grad : shardGrads)
      grad = scaleGradient(b, loc, grad, scale);
  }
  // 2. Per bucket: AdamW on this rank's shard, then the all-gather of the new shard.
  SmallVector<Value> gathered;
  for (auto [k, bucket] : llvm::enumerate(buckets)) {
    Value grad = waitFirst ? shardGrads[k] : Value(WaitOp::create(b, loc, scattered[k]).getResult());
    auto shardType = cast<RankedTensorType>(grad.getType());
    Value full = flatBucket(b, loc, bucket, [&](StateOp param) -> Value {
      return StateReadOp::create(b, loc, param.getTensorType(), param.getSymName());
    });
    Value shard = TPSplitOp::create(b, loc, shardType, full, grid.getSymName(), "dp", /*dim=*/0);
    std::string name = "stage" + std::to_string(stage) + "_zero_bucket" + std::to_string(k);
    std::string key = "stage" + std::to_string(stage) + ".zero_bucket" + std::to_string(k);
    SmallVector<Attribute> keys;
    for (StateOp param : bucket.params)
      keys.push_back(param.getKeyAttr());
    auto layout = ZeroBucketAttr::get(b.getContext(), b.getArrayAttr(keys), bucket.elements, bucket.padded, "dp");
    StateOp m = addMoment(name + "_adam_m", key + "/adam_m", shardType);
    StateOp v = addMoment(name + "_adam_v", key + "/adam_v", shardType);
    setZeroBucket(m, layout);
    setZeroBucket(v, layout);
    Value mv = StateReadOp::create(b, loc, shardType, m.getSymName());
    Value vv = StateReadOp::create(b, loc, shardType, v.getSymName());
    double decay = bucket.decayed ? options.weightDecay : 0.0;
    auto update =
        AdamWOp::create(b, bucket.params.front().getLoc(), shardType, shardType, shardType, shard, grad, mv, vv, t,
                        options.schedule, b.getF64FloatAttr(options.beta1), b.getF64FloatAttr(options.beta2),
                        b.getF64FloatAttr(options.epsilon), b.getF64FloatAttr(decay));
    // A skipped step (fp16) keeps the shard's old values.
    auto kept = [&](Value old, Value updated) { return skip ? keepOnSkip(b, loc, skip, old, updated) : updated; };
    StateWriteOp::create(b, loc, kept(mv, update.getNewM()), m.getSymName());
    StateWriteOp::create(b, loc, kept(vv, update.getNewV()), v.getSymName());
    auto fullType = RankedTensorType::get({bucket.padded}, shardType.getElementType());
    gathered.push_back(AllGatherStartOp::create(b, bucket.params.front().getLoc(),
                                                RequestType::get(b.getContext(), fullType),
                                                kept(shard, update.getNewParam()),
                                                grid.getSymName(), dpAxes, /*gather_dim=*/0)
                           .getRequest());
  }
  // 3. The gathered parameters, the padding sliced off, back into their states.
  for (auto [bucket, request] : llvm::zip(buckets, gathered)) {
    Value full = WaitOp::create(b, loc, request).getResult();
    Type element = getElementTypeOrSelf(full.getType());
    if (bucket.padded > bucket.elements)
      full = SliceOp::create(b, loc, RankedTensorType::get({bucket.elements}, element), full, ArrayRef<int64_t>{0},
                             ArrayRef<int64_t>{bucket.elements});
    SmallVector<Value> pieces;
    if (bucket.params.size() == 1) {
      pieces.push_back(full);
    } else {
      SmallVector<Type> flatTypes;
      SmallVector<int64_t> sizes;
      for (StateOp param : bucket.params) {
        int64_t n = param.getTensorType().getNumElements();
        flatTypes.push_back(RankedTensorType::get({n}, element));
        sizes.push_back(n);
      }
      auto split = SplitOp::create(b, loc, flatTypes, full, b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(sizes));
      pieces.append(split.getResults().begin(), split.getResults().end());
    }
    for (auto [param, piece] : llvm::zip(bucket.params, pieces)) {
      Value shaped =
          param.getTensorType().getRank() == 1 ? piece : Value(ReshapeOp::create(b, loc, param.getTensorType(), piece));
      StateWriteOp::create(b, loc, shaped, param.getSymName());
    }
  }
  return static_cast<int64_t>(buckets.size());
}
