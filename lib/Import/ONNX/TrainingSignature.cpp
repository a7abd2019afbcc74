//===- TrainingSignature.cpp - roles of an export's inputs and outputs -*- C++ -*-===//

#include "TrainingSignature.h"
#include "LegalizePatterns.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"

#include <set>

using namespace mlir;
using namespace mlir::ptrain;

static const char *const kRoles[] = {"tokens",       "labels",      "logits",         "position_ids",
                                     "padding_mask", "causal_mask", "token_type_ids", "empty"};

std::string mlir::ptrain::onnx_import::parseSignature(const std::string &text,
                                                      std::map<std::string, std::string> &roles) {
  if (llvm::StringRef(text).trim() == "auto")
    return "";
  llvm::SmallVector<llvm::StringRef> entries;
  llvm::StringRef(text).split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef entry : entries) {
    auto [name, role] = entry.trim().split('=');
    name = name.trim();
    role = role.trim();
    if (name.empty() || role.empty())
      return "--signature entry '" + entry.str() + "' is not of the form onnx_name=role";
    if (!llvm::is_contained(kRoles, role))
      return "--signature entry '" + entry.str() + "': unknown role '" + role.str() +
             "' (roles: tokens, labels, logits, position_ids, padding_mask, causal_mask, token_type_ids, empty)";
    if (!roles.emplace(name.str(), role.str()).second)
      return "--signature names '" + name.str() + "' twice";
  }
  return "";
}

/// The role inferred for graph input `name` of `type`, or "" when the name does not say.
static std::string inferInputRole(StringRef name, RankedTensorType type) {
  std::string lower = name.lower();
  StringRef n(lower);
  if (n.contains("label")) // before "mask": masked_lm_labels
    return "labels";
  if (n.contains("past"))
    return "empty";
  if (n.contains("position"))
    return "position_ids";
  if (n.contains("token_type") || n.contains("segment"))
    return "token_type_ids";
  if (n.contains("mask"))
    return type.getRank() == 2 ? "padding_mask" : "causal_mask";
  if (n == "input_ids" || n == "tokens")
    return "tokens";
  return "";
}

/// The vocabularies `tokens` [batch, seq] indexes: the rows of every ptrain.embedding table whose ids are the
/// token ids, directly or through integer ops that keep their element count (cast, reshape, squeeze). Empty when
/// no embedding reads the tokens (then the logits are picked by shape alone).
static std::set<int64_t> vocabularySizes(Value tokens) {
  std::set<int64_t> sizes;
  int64_t count = cast<RankedTensorType>(tokens.getType()).getNumElements();
  SmallVector<Value> work = {tokens};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (!seen.insert(user).second)
        continue;
      if (auto embedding = dyn_cast<EmbeddingOp>(user)) {
        if (embedding.getIds() == v)
          sizes.insert(cast<RankedTensorType>(embedding.getTable().getType()).getDimSize(0));
        continue;
      }
      for (Value result : user->getResults()) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (type && type.getElementType().isSignlessInteger() && !type.getElementType().isInteger(1) &&
            type.hasStaticShape() && type.getNumElements() == count)
          work.push_back(result);
      }
    }
  }
  return sizes;
}

/// `v` as an attribute of the float, integer or i1 type `elt`.
static Attribute elementAttr(OpBuilder &b, Type elt, double v) {
  if (isa<FloatType>(elt))
    return b.getFloatAttr(elt, v);
  return b.getIntegerAttr(elt, elt.isInteger(1) ? APInt(1, v != 0)
                                                : APInt(elt.getIntOrFloatBitWidth(), static_cast<int64_t>(v), true));
}

/// A dense constant of `type` whose element at multi-index `index` is `value(index)`.
static Value generate(OpBuilder &b, Location loc, RankedTensorType type,
                      llvm::function_ref<double(ArrayRef<int64_t>)> value) {
  SmallVector<Attribute> elements;
  SmallVector<int64_t> index(type.getRank(), 0);
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    elements.push_back(elementAttr(b, type.getElementType(), value(index)));
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (++index[d] < type.getDimSize(d))
        break;
      index[d] = 0;
    }
  }
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, elements));
}

/// A value of `type` whose element depends only on the last `varying` dimensions: a constant of those dimensions
/// (the leading ones 1) broadcast to `type` (ptrain.broadcast_to), or a splat when `varying` is 0. The constant
/// is then Q x K for a causal mask and 1 x S for position ids, whatever the batch: a [B, 1, S, S] mask at batch
/// 20,000 and sequence 1,024 would be 20 G elements printed into the module.
static Value generateRows(OpBuilder &b, Location loc, RankedTensorType type, int64_t varying,
                          llvm::function_ref<double(ArrayRef<int64_t>)> value) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t d = 0, e = type.getRank() - varying; d < e; ++d)
    shape[d] = 1;
  if (varying == 0) // One value: a splat.
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, elementAttr(b, type.getElementType(), value(SmallVector<int64_t>(type.getRank(), 0)))));
  auto small = RankedTensorType::get(shape, type.getElementType());
  Value rows = generate(b, loc, small, value);
  return small == type ? rows : BroadcastToOp::create(b, loc, type, rows).getResult();
}

LogicalResult mlir::ptrain::onnx_import::applyTrainingSignature(ModuleOp module, StringRef entry,
                                                                const std::map<std::string, std::string> &roles) {
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn)
    return emitError(module.getLoc()) << "--signature: no function @" << entry;
  Location loc = fn.getLoc();
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&fn.getBody().front());

  std::map<std::string, bool> used;
  for (const auto &[name, role] : roles)
    used[name] = false;
  auto explicitRole = [&](StringRef name) -> std::string {
    auto it = roles.find(name.str());
    if (it == roles.end())
      return "";
    used[it->first] = true;
    return it->second;
  };

  // Inputs.
  int tokenIndex = -1;
  SmallVector<NamedAttribute> generated;
  SmallVector<Attribute> empty;
  SmallVector<std::pair<unsigned, std::string>> pending; // Arguments without a name-based role.
  SmallVector<std::string> argRoles(fn.getNumArguments());
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, "ptrain.onnx_name");
    StringRef onnxName = name ? name.getValue() : StringRef();
    auto type = cast<RankedTensorType>(fn.getArgument(i).getType());
    std::string role = explicitRole(onnxName);
    if (role.empty())
      role = inferInputRole(onnxName, type);
    if (role == "logits")
      return emitError(loc) << "--signature: '" << onnxName << "' is a graph input; 'logits' names an output";
    argRoles[i] = role;
  }
  // The tokens: the one input so named, else the one integer [B, S] input without a role.
  for (unsigned i = 0; i < argRoles.size(); ++i)
    if (argRoles[i] == "tokens") {
      if (tokenIndex >= 0)
        return emitError(loc) << "--signature: two graph inputs have the role 'tokens'";
      tokenIndex = i;
    }
  if (tokenIndex < 0) {
    for (unsigned i = 0; i < argRoles.size(); ++i) {
      auto type = cast<RankedTensorType>(fn.getArgument(i).getType());
      if (argRoles[i].empty() && type.getRank() == 2 && type.getElementType().isSignlessInteger() &&
          !type.getElementType().isInteger(1)) {
        if (tokenIndex >= 0)
          return emitError(loc) << "--signature: cannot tell which integer [batch, seq] input holds the token ids; "
                                   "give it with --signature <name>=tokens";
        tokenIndex = i;
      }
    }
    if (tokenIndex >= 0)
      argRoles[tokenIndex] = "tokens";
  }
  if (tokenIndex < 0)
    return emitError(loc) << "--signature: no graph input holds the token ids (an integer [batch, seq] input); "
                             "give it with --signature <name>=tokens";
  auto tokensType = cast<RankedTensorType>(fn.getArgument(tokenIndex).getType());
  if (tokensType.getRank() != 2 || !tokensType.getElementType().isSignlessInteger())
    return emitError(loc) << "--signature: the token input must be an integer [batch, seq] tensor, got " << tokensType;
  int64_t seq = tokensType.getDimSize(1);
  // A zero-size batch or sequence (an export traced so, or --bind batch=0) trains on nothing.
  if (tokensType.getDimSize(0) == 0 || seq == 0)
    return emitError(loc) << "--signature: the token ids " << tokensType << " have a zero-size "
                          << (tokensType.getDimSize(0) == 0 ? "batch" : "sequence")
                          << ": a training step needs at least one sequence of at least 2 tokens (--bind the "
                             "batch and sequence sizes)";

  llvm::BitVector eraseArgs(fn.getNumArguments());
  int labelsIndex = -1;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    if (static_cast<int>(i) == tokenIndex)
      continue;
    auto name = fn.getArgAttrOfType<StringAttr>(i, "ptrain.onnx_name");
    std::string onnxName = name ? name.getValue().str() : ("#" + std::to_string(i));
    auto type = cast<RankedTensorType>(fn.getArgument(i).getType());
    const std::string &role = argRoles[i];
    auto bad = [&](StringRef why) {
      return emitError(loc) << "--signature: graph input '" << onnxName << "' (" << type << ") as " << role << ": "
                            << why;
    };
    Value replacement;
    if (role.empty())
      return emitError(loc) << "--signature: cannot infer the role of graph input '" << onnxName << "' (" << type
                            << "); give it with --signature " << onnxName
                            << "=<tokens|labels|position_ids|padding_mask|causal_mask|token_type_ids|empty>";
    if (role == "labels") {
      // Class ids per position, used by --ptrain-build-training-step instead of the shifted tokens.
      if (labelsIndex >= 0)
        return emitError(loc) << "--signature: two graph inputs have the role 'labels'";
      if (!type.getElementType().isSignlessInteger() || type.getElementType().isInteger(1))
        return bad("labels must be integer class ids");
      if (type.getShape() != tokensType.getShape())
        return bad("labels must have the token ids' shape " + std::to_string(tokensType.getDimSize(0)) + "x" +
                   std::to_string(seq));
      labelsIndex = i;
      continue;
    }
    if (role == "empty") {
      if (type.getNumElements() != 0)
        return bad("it is bound empty but has elements; bind its past length to 0 (e.g. --bind past_seq_len=0)");
      replacement = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, ArrayRef<Attribute>()));
      empty.push_back(b.getStringAttr(onnxName));
    } else if (role == "position_ids" || role == "token_type_ids" || role == "padding_mask") {
      if (type.getRank() != 2 || type.getShape() != tokensType.getShape())
        return bad("it must have the token ids' shape " + std::to_string(tokensType.getDimSize(0)) + "x" +
                   std::to_string(seq));
      if (role == "position_ids" && !type.getElementType().isSignlessInteger())
        return bad("position ids must be integers");
      if (role == "position_ids")
        replacement = generateRows(b, loc, type, /*varying=*/1,
                                   [&](ArrayRef<int64_t> index) -> double { return index[1]; });
      else
        replacement = generateRows(b, loc, type, /*varying=*/0,
                                   [&](ArrayRef<int64_t>) -> double { return role == "padding_mask" ? 1.0 : 0.0; });
    } else if (role == "causal_mask") {
      if (type.getRank() < 2)
        return bad("a causal mask needs rank >= 2");
      int64_t queries = type.getDimSize(type.getRank() - 2), keys = type.getDimSize(type.getRank() - 1);
      if (keys < queries)
        return bad("it has fewer key positions than query positions");
      // The export may reserve more positions than the sequence (a max-length buffer the graph slices).
      int64_t offset = keys - queries;
      replacement = generateRows(b, loc, type, /*varying=*/2, [&](ArrayRef<int64_t> index) -> double {
        return index[index.size() - 1] <= index[index.size() - 2] + offset ? 1.0 : 0.0;
      });
    } else {
      return bad("this role is not supported for an input");
    }
    generated.push_back(b.getNamedAttr(onnxName, b.getStringAttr(role)));
    fn.getArgument(i).replaceAllUsesWith(replacement);
    eraseArgs.set(i);
  }

  // Outputs: logits stays, the rest goes.
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  int logitsIndex = -1;
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, "ptrain.onnx_name");
    std::string role = name ? explicitRole(name.getValue()) : "";
    if (role.empty() && name && name.getValue() == "logits")
      role = "logits";
    if (role == "logits") {
      if (logitsIndex >= 0)
        return emitError(loc) << "--signature: two graph outputs have the role 'logits'";
      logitsIndex = i;
    } else if (!role.empty()) {
      return emitError(loc) << "--signature: '" << name.getValue() << "' is a graph output; only 'logits' names one";
    }
  }
  if (logitsIndex < 0) {
    // By shape: a float [batch, seq, V] output whose V is the vocabulary (docs/ImportONNX.md, "Training signature").
    std::set<int64_t> vocab = vocabularySizes(fn.getArgument(tokenIndex));
    SmallVector<unsigned> candidates, matching;
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[i]);
      if (!type || type.getRank() != 3 || !isa<FloatType>(type.getElementType()) ||
          type.getShape().drop_back() != tokensType.getShape())
        continue;
      candidates.push_back(i);
      if (vocab.empty() || vocab.count(type.getDimSize(2)))
        matching.push_back(i);
    }
    auto listCandidates = [&](InFlightDiagnostic &diag) {
      diag << "; the float [batch, seq, V] outputs:";
      if (candidates.empty())
        diag << " none";
      for (unsigned i : candidates) {
        auto name = fn.getResultAttrOfType<StringAttr>(i, "ptrain.onnx_name");
        diag << " '" << (name ? name.getValue().str() : "#" + std::to_string(i)) << "' "
             << fn.getResultTypes()[i];
      }
      diag << "; give the logits with --signature <name>=logits";
      return failure();
    };
    std::string vocabText;
    for (int64_t v : vocab)
      vocabText += (vocabText.empty() ? "" : " or ") + std::to_string(v);
    if (matching.size() > 1) {
      InFlightDiagnostic diag = emitError(loc) << "--signature: several float [batch, seq, vocab] outputs";
      if (!vocab.empty())
        diag << " with the vocabulary " << vocabText;
      return listCandidates(diag);
    }
    if (matching.empty()) {
      InFlightDiagnostic diag = emitError(loc) << "--signature: no graph output is the logits (a float [batch, seq, "
                                               << (vocab.empty() ? std::string("vocab") : vocabText) << "] tensor";
      if (!vocab.empty())
        diag << ", the vocabulary being the rows of the token embedding";
      diag << ")";
      return listCandidates(diag);
    }
    logitsIndex = matching.front();
  }
  auto logitsType = cast<RankedTensorType>(fn.getResultTypes()[logitsIndex]);
  if (logitsType.getRank() != 3 || logitsType.getShape().drop_back() != tokensType.getShape())
    return emitError(loc) << "--signature: the logits must be [batch, seq, vocab] for tokens " << tokensType << ", got "
                          << logitsType;
  // A next-token loss scores positions 0..S-2 against tokens 1..S-1: with S = 1 there is nothing to predict.
  if (labelsIndex < 0 && seq < 2)
    return emitError(loc) << "--signature: the token ids " << tokensType
                          << " have a sequence of length " << seq
                          << ": a next-token loss has nothing to predict; export (or --bind) a sequence of at least 2 "
                             "tokens, or give the labels with --signature <name>=labels";
  for (const auto &[name, wasUsed] : used)
    if (!wasUsed)
      return emitError(loc) << "--signature: '" << name << "' is neither a graph input nor a graph output";

  SmallVector<Attribute> dropped;
  // A dropped loss that is the export's SoftmaxCrossEntropyLoss with an ignore_index (Hugging Face's -100)
  // hands it to the training step's own loss (--ptrain-build-training-step, docs/TrainingStep.md).
  std::optional<int64_t> lossIgnoreIndex;
  llvm::BitVector eraseResults(fn.getNumResults());
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (static_cast<int>(i) != logitsIndex) {
      if (auto ce = ret.getOperand(i).getDefiningOp<CrossEntropyOp>())
        if (std::optional<int64_t> ignore = ce.getIgnoreIndex())
          lossIgnoreIndex = *ignore;
      eraseResults.set(i);
      if (auto name = fn.getResultAttrOfType<StringAttr>(i, "ptrain.onnx_name"))
        dropped.push_back(name);
    }
  auto tokensName = fn.getArgAttrOfType<StringAttr>(tokenIndex, "ptrain.onnx_name");
  auto logitsName = fn.getResultAttrOfType<StringAttr>(logitsIndex, "ptrain.onnx_name");
  auto labelsName = labelsIndex >= 0 ? fn.getArgAttrOfType<StringAttr>(labelsIndex, "ptrain.onnx_name") : nullptr;
  Value logits = ret.getOperand(logitsIndex);
  ret->setOperands(ValueRange{logits});
  if (labelsIndex >= 0 && labelsIndex < tokenIndex) {
    // The labels go after the tokens: a new last argument takes the labels' uses.
    BlockArgument old = fn.getArgument(labelsIndex);
    if (failed(fn.insertArgument(fn.getNumArguments(), old.getType(), fn.getArgAttrDict(labelsIndex), old.getLoc())))
      return emitError(loc) << "--signature: could not rewrite the function signature";
    old.replaceAllUsesWith(fn.getArgument(fn.getNumArguments() - 1));
    eraseArgs.resize(fn.getNumArguments());
    eraseArgs.set(labelsIndex);
  }
  if (failed(fn.eraseResults(eraseResults)) || failed(fn.eraseArguments(eraseArgs)))
    return emitError(loc) << "--signature: could not rewrite the function signature";
  fn.setArgAttr(0, "ptrain.role", b.getStringAttr("tokens"));
  if (labelsIndex >= 0)
    fn.setArgAttr(1, "ptrain.role", b.getStringAttr("labels"));
  fn.setResultAttr(0, "ptrain.role", b.getStringAttr("logits"));
  // What only the dropped outputs needed (e.g. the export's own loss from the labels) goes too.
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isPure(op))
      op->erase();

  SmallVector<NamedAttribute> signature = {
      b.getNamedAttr("tokens", tokensName ? Attribute(tokensName) : b.getStringAttr("")),
      b.getNamedAttr("logits", logitsName ? Attribute(logitsName) : b.getStringAttr("")),
      b.getNamedAttr("generated", b.getDictionaryAttr(generated)),
      b.getNamedAttr("empty", b.getArrayAttr(empty)),
      b.getNamedAttr("dropped_outputs", b.getArrayAttr(dropped)),
  };
  if (labelsIndex >= 0)
    signature.push_back(b.getNamedAttr("labels", labelsName ? Attribute(labelsName) : b.getStringAttr("")));
  if (lossIgnoreIndex)
    signature.push_back(b.getNamedAttr("loss_ignore_index", b.getI64IntegerAttr(*lossIgnoreIndex)));
  module->setAttr("ptrain.signature", b.getDictionaryAttr(signature));
  return success();
}

LogicalResult onnx_import::checkExportLossWeights(ModuleOp module, StringRef entry) {
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn)
    return success(); // applyTrainingSignature names the missing function.
  WalkResult result = fn.walk([](OnnxNodeOp node) {
    StringRef type = node.getOpType();
    if ((type != "SoftmaxCrossEntropyLoss" && type != "NegativeLogLikelihoodLoss") || node.getInputs().size() < 3 ||
        node.getNumResults() == 0 || node.getResult(0).use_empty())
      return WalkResult::advance();
    nodeError(node) << "--signature: the export's loss has class weights (input #2); the signature drops the "
                       "export's loss for the training step's own cross-entropy, which would train without them. "
                       "Export the model without the loss weights and give them to ptrain-compile with "
                       "--class-weights FILE (one weight per vocabulary entry, docs/TrainingStep.md)";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
