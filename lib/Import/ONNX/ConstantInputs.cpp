//===- ConstantInputs.cpp - graph inputs given constant values ----*- C++ -*-===//

#include "ConstantInputs.h"

#include "ptrain/Import/ONNX/Initializers.h"
#include "ptrain/Interpreter/Tensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace mlir::ptrain;

std::string mlir::ptrain::onnx_import::parseConstantInputs(const std::string &text,
                                                           std::map<std::string, std::string> &inputs) {
  llvm::SmallVector<llvm::StringRef> entries;
  llvm::StringRef(text).split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef entry : entries) {
    auto [name, path] = entry.split('=');
    name = name.trim();
    path = path.trim();
    if (name.empty() || path.empty())
      return "--constant-input entry '" + entry.str() + "' is not of the form onnx_name=tensor.pb";
    if (!inputs.emplace(name.str(), path.str()).second)
      return "--constant-input names '" + name.str() + "' twice";
  }
  return "";
}

LogicalResult mlir::ptrain::onnx_import::applyConstantInputs(ModuleOp module, StringRef entry,
                                                             const std::map<std::string, std::string> &inputs) {
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn)
    return emitError(module.getLoc()) << "--constant-input: no function @" << entry;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(&fn.getBody().front());
  llvm::BitVector erase(fn.getNumArguments());
  for (const auto &[name, path] : inputs) {
    std::optional<unsigned> index;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto attr = fn.getArgAttrOfType<StringAttr>(i, "ptrain.onnx_name"); attr && attr.getValue() == name)
        index = i;
    if (!index)
      return emitError(fn.getLoc()) << "--constant-input " << name << "=" << path << ": no graph input is named '"
                                    << name << "' (initializers are constants already)";
    llvm::Expected<interp::Tensor> tensor = onnx_data::readTensorProtoFile(path);
    if (!tensor)
      return emitError(fn.getLoc()) << "--constant-input " << name << "=" << path << ": "
                                    << llvm::toString(tensor.takeError());
    auto type = cast<RankedTensorType>(fn.getArgument(*index).getType());
    if (!tensor->hasType(type))
      return emitError(fn.getLoc()) << "--constant-input " << name << "=" << path << ": the file holds "
                                    << tensor->getTypeString() << " but graph input '" << name << "' is " << type;
    Value constant = arith::ConstantOp::create(b, fn.getArgument(*index).getLoc(),
                                               interp::denseElementsFromTensor(*tensor, module.getContext()));
    fn.getArgument(*index).replaceAllUsesWith(constant);
    erase.set(*index);
  }
  if (failed(fn.eraseArguments(erase)))
    return emitError(fn.getLoc()) << "--constant-input: could not rewrite the function signature";
  return success();
}
