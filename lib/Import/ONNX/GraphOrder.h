//===- GraphOrder.h - the order and references of an ONNX graph's nodes -*- C++ -*-===//
//
// ONNX requires a graph's nodes in topological order, and every node input named by a graph input, an
// initializer or an earlier node (onnx/IR.md, "Graphs"). Exporters and optimizers do not always comply (some
// append nodes whose outputs earlier nodes read, e.g. onnxruntime's bert_toy_optimized.onnx), and ONNX's own
// shape inference dereferences the missing type of an input that no earlier node defines (libonnx 1.12:
// Shape with start, a segmentation fault; found by fuzz/ImportONNXFuzzer.cpp). Both layers of the importer use
// these: the loader checks the references and runs shape inference in this order, the faithful import builds
// its ops in it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_GRAPHORDER_H
#define PTRAIN_LIB_IMPORT_ONNX_GRAPHORDER_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::ptrain::onnx_import {

/// The node indices of `graph` in a topological order that keeps the file's order wherever it is already
/// valid. Kahn's algorithm with the smallest ready index first. Nodes on a cycle, or reading a name nothing
/// defines, stay at the end in file order (checkGraphReferences reports the missing name).
llvm::SmallVector<int> topologicalOrder(const onnx::GraphProto &graph);

/// The node's name in messages: its name, or its op type and index ("Shape#0") when it has none, as the
/// faithful import's node locations name it; bytes that are not UTF-8 escaped.
std::string displayNodeName(const onnx::NodeProto &node, int index);

/// A node input that nothing defines, or a cycle: which top-level node (index in the graph, -1 when none) and
/// what is wrong.
struct GraphReferenceError {
  int node = -1;
  std::string message;
};

/// Checks that every non-empty node input of `graph`, and of the graphs in its nodes' graph attributes (which
/// also see the enclosing graphs' names), is defined by a graph input, an initializer or a node of its graph,
/// and that the nodes form no cycle. Returns the first violation, with the top-level node that holds it and a
/// message naming the op, the node and the input; an empty message when the graph is well formed.
GraphReferenceError checkGraphReferences(const onnx::GraphProto &graph);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_GRAPHORDER_H
