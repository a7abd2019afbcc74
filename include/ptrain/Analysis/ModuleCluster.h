//===- ModuleCluster.h - the cluster a module is timed on ------------*- C++ -*-===//
//
// DESIGN decision 11: the cluster description travels with the module as the attribute `ptrain.cluster`, the
// file's JSON as a dictionary (objects -> dictionaries, arrays -> arrays, numbers -> f64 or i64, strings),
// so that every lit test and every later pass sees the same machine.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_MODULECLUSTER_H
#define PTRAIN_ANALYSIS_MODULECLUSTER_H

#include "ptrain/Analysis/Cluster.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::ptrain {

/// With a non-empty `path`: reads and checks the file and attaches it to `module` as `ptrain.cluster`
/// (replacing an earlier one). Otherwise reads `ptrain.cluster` from the module. Errors name the file and
/// field, or say that the module has no cluster.
llvm::Expected<ClusterSpec> getModuleCluster(ModuleOp module, llvm::StringRef path);

/// The JSON value as an attribute, and back.
Attribute jsonToAttribute(MLIRContext *context, const llvm::json::Value &value);
llvm::json::Value attributeToJSON(Attribute attr);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_MODULECLUSTER_H
