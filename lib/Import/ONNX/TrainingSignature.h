//===- TrainingSignature.h - roles of an export's inputs and outputs -*- C++ -*-===//
//
// An inference export takes more than token ids: position ids, padding and causal masks, token type ids,
// and a KV cache (`past_*`). For training, ptrain needs to know which input carries the token ids, which
// inputs are generated per step, which are bound empty, and which output is the logits
// (`--ptrain-build-training-step` takes `@forward(tokens) -> logits`). The roles are inferred from names and
// types where unambiguous, or given with `--signature name=role,...`; applying the signature turns the
// faithful function into that form and records it as the module attribute `ptrain.signature`.
//
// Roles and what applying them does (shapes are static after --bind; past length 0):
//   tokens          int [B, S]: the function's first argument (`ptrain.role = "tokens"`).
//   labels          int [B, S]: the class id of every position (e.g. masked-LM targets); the second argument
//                   (`ptrain.role = "labels"`), which --ptrain-build-training-step uses instead of the
//                   shifted tokens. Optional; not an integer or not the tokens' shape is an error.
//   logits          float [B, S, V]: the function's only result (`ptrain.role = "logits"`); other outputs
//                   (present_*, pooled scores) are dropped and listed under `dropped_outputs`.
//   position_ids    int [B, S]: the constant p[b, s] = s.
//   padding_mask    [B, S] (any element type): ones, every position is a token (packed sequences).
//   causal_mask     [..., S, T]: 1 where key j <= query i + (T - S), else 0 (lower triangle).
//   token_type_ids  int [B, S]: zeros (a single segment).
//   empty           a zero-size input (past_* with past length 0): a zero-size constant.
// Inference: names containing "label" are labels, "past" empty, "position" position_ids, "token_type" or "segment"
// token_type_ids, "mask" padding_mask (rank 2) or causal_mask (rank >= 3, last two dimensions
// [S, T]); the tokens are "input_ids" or the one remaining integer [B, S] input; the logits are "logits" or
// the one float [B, S, V] output whose V is the vocabulary (the rows of the embedding tables the token ids
// index; any V when no embedding reads them): none or several is an error listing the [B, S, *] outputs with
// their shapes. Anything else is an error naming the input and asking for --signature. Token ids with a
// zero-size batch or sequence, or (without labels) a sequence of 1, are refused: nothing to predict.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_TRAININGSIGNATURE_H
#define PTRAIN_LIB_IMPORT_ONNX_TRAININGSIGNATURE_H

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace mlir::ptrain::onnx_import {

/// Parses `name=role,...` (or `auto`, no explicit roles) into `roles` (ONNX name -> role). Returns "" on
/// success, else a message naming the bad entry or the unknown role.
std::string parseSignature(const std::string &text, std::map<std::string, std::string> &roles);

/// Applies the training signature to function `entry` of the legalized `module` (after legalization, which
/// gives every output its static type). `roles` are the explicit roles by ONNX
/// name; the rest are inferred. Emits an error naming the input or output and fails when a role cannot be
/// inferred, a given name is neither an input nor an output, or an input does not fit its role.
LogicalResult applyTrainingSignature(ModuleOp module, llvm::StringRef entry,
                                     const std::map<std::string, std::string> &roles);
/// Refuses, before legalization, an export whose own loss has class weights (SoftmaxCrossEntropyLoss or
/// NegativeLogLikelihoodLoss with input #2) that reaches an output of function `entry`: applying the signature
/// drops that loss, and the training step's own cross-entropy would silently train without the weights. The
/// error names the node and points to ptrain-compile --class-weights.
LogicalResult checkExportLossWeights(ModuleOp module, llvm::StringRef entry);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_TRAININGSIGNATURE_H
