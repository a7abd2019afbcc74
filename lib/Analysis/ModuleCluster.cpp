//===- ModuleCluster.cpp - the cluster a module is timed on ---------*- C++ -*-===//

#include "ptrain/Analysis/ModuleCluster.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::ptrain;
namespace json = llvm::json;

Attribute mlir::ptrain::jsonToAttribute(MLIRContext *context, const json::Value &value) {
  Builder b(context);
  if (const json::Object *o = value.getAsObject()) {
    SmallVector<NamedAttribute> entries;
    for (const auto &kv : *o)
      entries.push_back(b.getNamedAttr(kv.first.str(), jsonToAttribute(context, kv.second)));
    return b.getDictionaryAttr(entries);
  }
  if (const json::Array *a = value.getAsArray()) {
    SmallVector<Attribute> elements;
    for (const json::Value &v : *a)
      elements.push_back(jsonToAttribute(context, v));
    return b.getArrayAttr(elements);
  }
  if (std::optional<StringRef> s = value.getAsString())
    return b.getStringAttr(*s);
  if (std::optional<bool> v = value.getAsBoolean())
    return b.getBoolAttr(*v);
  if (value.kind() == json::Value::Number) {
    // Integral numbers become i64 (counts), the others f64.
    if (std::optional<int64_t> i = value.getAsInteger())
      return b.getI64IntegerAttr(*i);
    return b.getF64FloatAttr(*value.getAsNumber());
  }
  return b.getUnitAttr(); // null
}

json::Value mlir::ptrain::attributeToJSON(Attribute attr) {
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json::Object o;
    for (NamedAttribute n : d)
      o[n.getName().str()] = attributeToJSON(n.getValue());
    return o;
  }
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json::Array arr;
    for (Attribute e : a)
      arr.push_back(attributeToJSON(e));
    return arr;
  }
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.str();
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  return nullptr;
}

llvm::Expected<ClusterSpec> mlir::ptrain::getModuleCluster(ModuleOp module, StringRef path) {
  if (!path.empty()) {
    json::Value value = nullptr;
    auto cluster = loadCluster(path, &value);
    if (cluster)
      module->setAttr("ptrain.cluster", jsonToAttribute(module.getContext(), value));
    return cluster;
  }
  Attribute attr = module->getAttr("ptrain.cluster");
  if (!attr)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no cluster: give cluster=FILE or attach ptrain.cluster to the module");
  auto cluster = parseCluster(attributeToJSON(attr));
  if (!cluster)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "ptrain.cluster: " + llvm::toString(cluster.takeError()));
  return cluster;
}
