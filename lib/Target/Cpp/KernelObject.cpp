//===- KernelObject.cpp - Generated kernels to object code ----------------===//
//
// See include/ptrain/Target/Cpp/KernelObject.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Cpp/KernelObject.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>

using namespace mlir;
using namespace mlir::ptrain;

std::string mlir::ptrain::kernelDeclaration(func::FuncOp kernel, unsigned numInputs) {
  FunctionType type = kernel.getFunctionType();
  std::string text =
      std::string("extern \"C\" ") + (type.getNumResults() ? "int64_t " : "void ") + kernel.getSymName().str() + "(";
  for (auto [i, param] : llvm::enumerate(type.getInputs())) {
    text += i ? ", " : "";
    // A scalar argument (the AdamW kernels' coefficients) is passed by value.
    if (!isa<MemRefType>(param)) {
      text += param.isF32() ? "float" : "int64_t";
      continue;
    }
    const bool bytes = cast<MemRefType>(param).getElementType().isInteger(8);
    text += std::string(i < numInputs ? "const " : "") + (bytes ? "uint8_t *" : "float *");
  }
  return text + ");\n";
}

/// The target machine of `cpu` ("native": the host's model and features) for the host's triple, position
/// independent (the object goes into a shared library).
static std::unique_ptr<llvm::TargetMachine> hostTargetMachine(StringRef cpu, unsigned optLevel, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpuName = cpu.str(), features;
  if (cpu == "native") {
    cpuName = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(feature.getValue() ? "+" : "-") + feature.getKey().str();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(target->createMCSubtargetInfo(triple, cpuName, features));
  if (!subtarget || !subtarget->isCPUStringValid(cpuName)) {
    error = "unknown CPU '" + cpuName + "' for " + triple.str();
    return nullptr;
  }
  auto level = optLevel == 0   ? llvm::CodeGenOptLevel::None
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                               : llvm::CodeGenOptLevel::Aggressive;
  // The default TargetOptions contract no fmul + fadd pair into an FMA (AllowFPOpFusion = Standard fuses only
  // what the IR marks `contract`, and the lowering marks nothing): the kernels round like the runtime's.
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpuName, features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt, level));
}

LogicalResult mlir::ptrain::writeKernelObject(ModuleOp kernels, llvm::raw_pwrite_stream &os,
                                              const KernelObjectOptions &options, KernelObjectTarget *target) {
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(kernels->clone()));
  MLIRContext *ctx = kernels.getContext();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);

  // linalg -> loops -> cf -> LLVM dialect; memref arguments as bare pointers (static shapes); a codec kernel's
  // i64 result is the C function's int64_t.
  PassManager pm(ctx, ModuleOp::getOperationName());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  // vector.load/store/reduction/shuffle/broadcast of the codec kernels (QuantArith.h), before the memrefs they
  // index become LLVM pointers.
  pm.addPass(createConvertVectorToLLVMPass());
  // math.sqrt of the AdamW kernels (AdamWArith.h): llvm.intr.sqrt, correctly rounded like std::sqrt.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(*module)))
    return kernels.emitError("--emit-cpp-kernels: lowering the generated kernels to the LLVM dialect failed");

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(*module, llvmContext, "ptrain_kernels");
  if (!llvmModule)
    return kernels.emitError("--emit-cpp-kernels: translating the generated kernels to LLVM IR failed");
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = hostTargetMachine(options.cpu, options.optLevel, error);
  if (!machine)
    return kernels.emitError("--emit-cpp-kernels: no target machine: ") << error;
  // Local to libstep.so: two steps loaded in one process (ctypes, tests) keep their own kernels.
  for (llvm::Function &function : *llvmModule)
    if (!function.isDeclaration())
      function.setVisibility(llvm::GlobalValue::HiddenVisibility);
  if (target) {
    target->cpu = machine->getTargetCPU().str();
    target->features.clear();
    const llvm::MCSubtargetInfo *subtarget = machine->getMCSubtargetInfo();
    for (const char *feature : {"sse4.2", "avx", "fma", "avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl"})
      if (subtarget->checkFeatures(std::string("+") + feature))
        target->features.push_back(feature);
  }
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  // opt -O3 with the target machine: without it the loop vectorizer has no vector width and does nothing.
  if (llvm::Error e = makeOptimizingTransformer(options.optLevel, /*sizeLevel=*/0, machine.get())(llvmModule.get()))
    return kernels.emitError("--emit-cpp-kernels: optimizing the kernels failed: ") << llvm::toString(std::move(e));
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return kernels.emitError("--emit-cpp-kernels: the target cannot emit object files");
  codegen.run(*llvmModule);
  return success();
}
