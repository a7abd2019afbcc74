//===- LegalizeNewestOpsets.h - patterns of ONNX opsets 18-23 -----*- C++ -*-===//
//
// Internal to lib/Import/ONNX: the registration functions of the patterns for semantics new in opsets 18-23
// (LegalizeOpset18.cpp, LegalizeOpset23.cpp, LegalizeSequenceOps.cpp), called by the pattern table in LegalizeONNX.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_LEGALIZENEWESTOPSETS_H
#define PTRAIN_LIB_IMPORT_ONNX_LEGALIZENEWESTOPSETS_H

#include "LegalizePatterns.h"

namespace mlir::ptrain::onnx_import {

/// Split-18 (num_outputs), Gelu-20, Sigmoid (LegalizeOpset18.cpp).
void populateOpset18Patterns(PatternTable &table);
/// RMSNormalization-23, RotaryEmbedding-23, Attention-23 (LegalizeOpset23.cpp).
void populateOpset23Patterns(PatternTable &table);
/// SplitToSequence, SequenceConstruct, SequenceAt, SequenceLength, ConcatFromSequence, CumSum, Cos, Sin
/// (LegalizeSequenceOps.cpp): the ops of the newest exporter's unfolded graphs.
void populateSequencePatterns(PatternTable &table);
/// Erases the sequence values (tuple-typed casts) the sequence patterns made once nothing reads them; a
/// sequence still used (a graph output, an op without a pattern) is an error at the node that built it.
LogicalResult eraseSequences(ModuleOp module);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_LEGALIZENEWESTOPSETS_H
