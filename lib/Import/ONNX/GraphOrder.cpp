//===- GraphOrder.cpp - the order and references of an ONNX graph's nodes -*- C++ -*-===//

#include "GraphOrder.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <queue>

using namespace mlir::ptrain;
using llvm::SmallVector;

SmallVector<int> onnx_import::topologicalOrder(const onnx::GraphProto &graph) {
  int n = graph.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string &name : graph.node(i).output())
      if (!name.empty())
        producer.try_emplace(name, i);
  SmallVector<int> pending(n, 0);
  SmallVector<SmallVector<int>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (const std::string &name : graph.node(i).input()) {
      auto it = producer.find(name);
      if (name.empty() || it == producer.end() || it->second == i)
        continue;
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  SmallVector<int> order;
  SmallVector<bool> placed(n, false);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    placed[i] = true;
    for (int c : consumers[i])
      if (--pending[c] == 0)
        ready.push(c);
  }
  for (int i = 0; i < n; ++i)
    if (!placed[i])
      order.push_back(i);
  return order;
}

namespace {

/// `name` for a message: verbatim when it is valid UTF-8 (names with spaces and symbols are legal, see
/// test/Import/ONNX/odd-names.test), else with its bytes escaped (\\HH, printEscapedString) so that the diagnostic stays text.
std::string displayName(const std::string &name) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(name.data());
  if (llvm::isLegalUTF8String(&begin, begin + name.size()))
    return name;
  std::string escaped;
  llvm::raw_string_ostream os(escaped);
  llvm::printEscapedString(name, os);
  return escaped;
}

} // namespace

std::string onnx_import::displayNodeName(const onnx::NodeProto &node, int index) {
  return node.name().empty() ? displayName(node.op_type()) + "#" + std::to_string(index) : displayName(node.name());
}

namespace {

/// checkGraphReferences for `graph` seeing `outer` (the enclosing graphs' names); `where` says which
/// subgraph attribute holds it ("" at the top level).
std::string checkScope(const onnx::GraphProto &graph, const llvm::StringSet<> &outer, const std::string &where,
                       int &badNode) {
  llvm::StringSet<> defined = outer;
  for (const onnx::ValueInfoProto &input : graph.input())
    defined.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    defined.insert(init.name());
  for (const onnx::SparseTensorProto &init : graph.sparse_initializer())
    defined.insert(init.values().name());
  llvm::StringSet<> produced;
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &name : node.output())
      if (!name.empty())
        produced.insert(name);
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &name : node.input())
      if (!name.empty() && !defined.contains(name) && !produced.contains(name)) {
        badNode = i;
        return "ONNX " + displayName(node.op_type()) + " node '" + onnx_import::displayNodeName(node, i) + "'" + where + ": input '" +
               displayName(name) +
               "' is defined by no graph input, initializer or node" +
               (where.empty() ? std::string() : std::string(" of its graph or an enclosing one"));
      }
    for (const onnx::AttributeProto &attr : node.attribute()) {
      llvm::StringSet<> visible = defined;
      for (const auto &entry : produced)
        visible.insert(entry.getKey());
      auto sub = [&](const onnx::GraphProto &g) {
        int ignored = -1;
        return checkScope(g, visible, where + " (in graph attribute '" + attr.name() + "' of node '" +
                                          onnx_import::displayNodeName(node, i) + "')", ignored);
      };
      std::string error;
      if (attr.has_g())
        error = sub(attr.g());
      for (int k = 0; error.empty() && k < attr.graphs_size(); ++k)
        error = sub(attr.graphs(k));
      if (!error.empty()) {
        badNode = i;
        return error;
      }
    }
  }
  return "";
}

} // namespace

onnx_import::GraphReferenceError onnx_import::checkGraphReferences(const onnx::GraphProto &graph) {
  GraphReferenceError error;
  error.message = checkScope(graph, llvm::StringSet<>(), "", error.node);
  if (!error.message.empty())
    return error;
  // Every input is defined: nodes that Kahn's algorithm cannot place are on a cycle.
  SmallVector<int> order = topologicalOrder(graph);
  llvm::StringSet<> available;
  for (const onnx::ValueInfoProto &input : graph.input())
    available.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    available.insert(init.name());
  for (const onnx::SparseTensorProto &init : graph.sparse_initializer())
    available.insert(init.values().name());
  for (int index : order) {
    const onnx::NodeProto &node = graph.node(index);
    for (const std::string &name : node.input())
      if (!name.empty() && !available.contains(name)) {
        error.node = index;
        error.message = "ONNX " + displayName(node.op_type()) + " node '" + onnx_import::displayNodeName(node, index) + "': input '" +
                        displayName(name) +
                        "' is produced on a cycle through this node (ONNX graphs are acyclic)";
        return error;
      }
    for (const std::string &name : node.output())
      if (!name.empty())
        available.insert(name);
  }
  return error;
}
