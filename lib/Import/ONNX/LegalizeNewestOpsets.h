//===- LegalizeNewestOpsets.h - patterns of ONNX opsets 18-23 -----*- C++ -*-===//
//
// Internal to lib/Import/ONNX: the registration functions of the patterns for semantics new in opsets 18-23
// (LegalizeOpset18.cpp, LegalizeOpset23.cpp), called by the pattern table in LegalizeONNX.cpp.
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

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_LEGALIZENEWESTOPSETS_H
