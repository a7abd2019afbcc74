//===- KernelPtx.cpp - Generated kernels to PTX for the CUDA step ---------===//
//
// See include/ptrain/Target/Cuda/KernelPtx.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Cuda/KernelPtx.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// The name of the gpu.module that holds the kernels (and of the gpu.binary that replaces it).
constexpr llvm::StringLiteral kGpuModuleName = "ptrain_cuda_kernels";

/// Whether `kernel`'s parameters are all f32 memrefs of static shape and identity layout.
bool hasF32MemrefParams(func::FuncOp kernel) {
  return llvm::all_of(kernel.getArgumentTypes(), [](Type t) {
    auto m = dyn_cast<MemRefType>(t);
    return m && m.hasStaticShape() && m.getElementType().isF32() && m.getLayout().isIdentity();
  });
}

/// The one scf.for of `block` when every other op but the terminator is an arith.constant and the loop carries
/// nothing and has constant bounds (a level of a row kernel's loops over the leading dimensions), else null.
scf::ForOp passThroughLoop(Block &block) {
  scf::ForOp only;
  for (Operation &op : block) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (only || loop.getNumResults() || !getConstantIntValue(loop.getLowerBound()) ||
          !getConstantIntValue(loop.getUpperBound()) || !getConstantIntValue(loop.getStep()))
        return {};
      only = loop;
    } else if (!op.hasTrait<OpTrait::IsTerminator>() && !isa<arith::ConstantOp>(op)) {
      return {};
    }
  }
  return only;
}

/// The loops over the leading dimensions of a row kernel (SoftmaxArith.h: a softmax at a chain's end, its
/// gradient at the start), outermost first: the function's body is constants, one scf.for and the return, and
/// each loop's body the same down to the innermost, whose body is a row (or a group of rows) of work. Empty for
/// any other kernel (a codec kernel returns a value; an AdamW kernel takes scalars and uses vectors).
SmallVector<scf::ForOp> rowLoopNest(Operation *op) {
  auto kernel = dyn_cast<func::FuncOp>(op);
  if (!kernel || kernel.isExternal() || kernel.getNumResults() != 0 || !kernel.getBody().hasOneBlock() ||
      !hasF32MemrefParams(kernel))
    return {};
  bool vectors = false;
  kernel.walk([&](Operation *o) { vectors |= o->getName().getDialectNamespace() == "vector"; });
  if (vectors)
    return {};
  SmallVector<scf::ForOp> nest;
  for (scf::ForOp loop = passThroughLoop(kernel.getBody().front()); loop; loop = passThroughLoop(*loop.getBody()))
    nest.push_back(loop);
  return nest;
}

/// The iterations of `loop` (constant bounds).
int64_t tripCount(scf::ForOp loop) {
  const int64_t lb = *getConstantIntValue(loop.getLowerBound()), ub = *getConstantIntValue(loop.getUpperBound());
  const int64_t step = *getConstantIntValue(loop.getStep());
  return ub > lb ? (ub - lb + step - 1) / step : 0;
}

/// The thread's index over a one-dimensional grid and the guard `index < work`: returns the builder inside the
/// guard and the index; the gpu.func's return is built after the guard.
std::pair<OpBuilder, Value> threadIndexAndGuard(OpBuilder &b, Location loc, int64_t work) {
  Value blockId = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value blockDim = gpu::BlockDimOp::create(b, loc, gpu::Dimension::x);
  Value threadId = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value linear = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, blockId, blockDim), threadId);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear, arith::ConstantIndexOp::create(b, loc, work));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::ReturnOp::create(b, loc);
  return {guard.getThenBodyBuilder(), linear};
}

/// Row-major delinearization of `linear` over `sizes` (the last fastest).
SmallVector<Value> delinearize(OpBuilder &t, Location loc, Value linear, ArrayRef<int64_t> sizes) {
  SmallVector<Value> ivs(sizes.size());
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    Value size = arith::ConstantIndexOp::create(t, loc, sizes[d]);
    ivs[d] = d ? Value(arith::RemUIOp::create(t, loc, rest, size)) : rest;
    if (d)
      rest = arith::DivUIOp::create(t, loc, rest, size);
  }
  return ivs;
}

/// `gpu.func @name(memrefs...) kernel` of a row kernel: thread i < rows computes iteration i of `nest`
/// (delinearized, each loop's induction variable lb + i_d step), the innermost loop's body cloned unchanged
/// (the row's loops over its columns in their order).
void buildGpuRowKernel(OpBuilder &builder, func::FuncOp kernel, ArrayRef<scf::ForOp> nest, int64_t rows) {
  Location loc = kernel.getLoc();
  auto gpuFunc = gpu::GPUFuncOp::create(builder, loc, kernel.getSymName(), kernel.getFunctionType());
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  Block &entry = gpuFunc.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  IRMapping mapping;
  mapping.map(kernel.getArguments(), entry.getArguments());
  // The function's constants, then the thread's rows.
  for (Operation &op : kernel.getBody().front())
    if (isa<arith::ConstantOp>(op))
      b.clone(op, mapping);
  auto guarded = threadIndexAndGuard(b, loc, rows);
  OpBuilder &t = guarded.first;
  SmallVector<int64_t> trips;
  for (scf::ForOp loop : nest)
    trips.push_back(tripCount(loop));
  SmallVector<Value> iterations = delinearize(t, loc, guarded.second, trips);
  for (auto [level, i] : llvm::zip_equal(nest, iterations)) {
    scf::ForOp loop = level;
    Value iv = arith::AddIOp::create(
        t, loc, arith::ConstantIndexOp::create(t, loc, *getConstantIntValue(loop.getLowerBound())),
        arith::MulIOp::create(t, loc, i, arith::ConstantIndexOp::create(t, loc, *getConstantIntValue(loop.getStep()))));
    mapping.map(loop.getInductionVar(), iv);
    for (Operation &op : loop.getBody()->without_terminator())
      if (loop == nest.back() || isa<arith::ConstantOp>(op))
        t.clone(op, mapping);
  }
}

/// The kernel's single linalg.generic when hasGpuKernel holds.
linalg::GenericOp elementwiseGeneric(Operation *op) {
  auto kernel = dyn_cast<func::FuncOp>(op);
  if (!kernel || kernel.isExternal() || kernel.getNumResults() != 0 || !kernel.getBody().hasOneBlock())
    return {};
  Block &body = kernel.getBody().front();
  if (body.getOperations().size() != 2)
    return {};
  auto generic = dyn_cast<linalg::GenericOp>(body.front());
  if (!generic || !isa<func::ReturnOp>(body.back()) || generic.getNumResults() != 0)
    return {};
  if (!llvm::all_of(generic.getIteratorTypesArray(),
                    [](utils::IteratorType t) { return t == utils::IteratorType::parallel; }))
    return {};
  for (OpOperand &operand : generic->getOpOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand.get());
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!arg || arg.getOwner() != &body || !type || !type.hasStaticShape() || !type.getElementType().isF32() ||
        !type.getLayout().isIdentity())
      return {};
    AffineMap map = generic.getMatchingIndexingMap(&operand);
    if (generic.isDpsInit(&operand) ? !map.isIdentity() : !llvm::all_of(map.getResults(), [](AffineExpr e) {
          auto c = dyn_cast<AffineConstantExpr>(e);
          return isa<AffineDimExpr>(e) || (c && c.getValue() == 0);
        }))
      return {};
  }
  return generic;
}

/// `gpu.func @name(memrefs...) kernel`: thread i = block_id.x * block_dim.x + thread_id.x computes element i of
/// `generic`'s iteration space when i < its elements (hasGpuKernel's form).
void buildGpuKernel(OpBuilder &builder, func::FuncOp kernel, linalg::GenericOp generic, int64_t elements) {
  Location loc = kernel.getLoc();
  auto gpuFunc = gpu::GPUFuncOp::create(builder, loc, kernel.getSymName(), kernel.getFunctionType());
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  Block &entry = gpuFunc.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  auto guarded = threadIndexAndGuard(b, loc, elements);
  OpBuilder &t = guarded.first;
  // Row-major delinearization, the last dimension fastest (neighbouring threads read neighbouring elements).
  SmallVector<Value> ivs = delinearize(t, loc, guarded.second, generic.getStaticLoopRanges());
  auto indicesOf = [&](AffineMap map) {
    SmallVector<Value> indices;
    for (AffineExpr e : map.getResults())
      indices.push_back(isa<AffineDimExpr>(e) ? ivs[cast<AffineDimExpr>(e).getPosition()]
                                              : Value(arith::ConstantIndexOp::create(t, loc, 0)));
    return indices;
  };
  // The body's block arguments: the inputs' elements (and, unused by the chains, the outputs' current ones).
  IRMapping mapping;
  Block &body = generic.getRegion().front();
  for (OpOperand &operand : generic->getOpOperands()) {
    BlockArgument elem = body.getArgument(operand.getOperandNumber());
    if (elem.use_empty())
      continue;
    Value memref = entry.getArgument(cast<BlockArgument>(operand.get()).getArgNumber());
    mapping.map(
        elem, memref::LoadOp::create(t, loc, memref, indicesOf(generic.getMatchingIndexingMap(&operand))).getResult());
  }
  for (Operation &op : body.without_terminator())
    t.clone(op, mapping);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [value, init] : llvm::zip_equal(yield.getValues(), generic.getDpsInitsMutable())) {
    Value memref = entry.getArgument(cast<BlockArgument>(init.get()).getArgNumber());
    memref::StoreOp::create(t, loc, mapping.lookupOrDefault(value), memref, ivs);
  }
}

/// NN of `sm_NN` (NN >= 70, 2 or 3 digits), or none.
std::optional<int64_t> smVersionOf(StringRef arch) {
  int64_t version = 0;
  if (!arch.consume_front("sm_") || arch.size() < 2 || arch.size() > 3 || arch.getAsInteger(10, version) ||
      version < 70)
    return std::nullopt;
  return version;
}

} // namespace

bool mlir::ptrain::hasGpuKernel(Operation *kernel) {
  return static_cast<bool>(elementwiseGeneric(kernel)) || !rowLoopNest(kernel).empty();
}

OwningOpRef<ModuleOp> mlir::ptrain::buildGpuKernels(ModuleOp kernels, const KernelPtxOptions &options,
                                                    llvm::StringMap<GpuKernelLaunch> &launches) {
  MLIRContext *ctx = kernels.getContext();
  ctx->loadDialect<arith::ArithDialect, gpu::GPUDialect, memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect>();
  OwningOpRef<ModuleOp> host = ModuleOp::create(kernels.getLoc());
  (*host)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  OpBuilder builder = OpBuilder::atBlockEnd(host->getBody());
  SmallVector<Attribute> targets;
  for (const std::string &arch : options.archs)
    targets.push_back(NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", arch, options.ptxFeature));
  auto gpuModule = gpu::GPUModuleOp::create(builder, kernels.getLoc(), kGpuModuleName, builder.getArrayAttr(targets));
  OpBuilder inModule = OpBuilder::atBlockBegin(gpuModule.getBody());
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    linalg::GenericOp generic = elementwiseGeneric(kernel);
    SmallVector<scf::ForOp> nest = generic ? SmallVector<scf::ForOp>() : rowLoopNest(kernel);
    if (!generic && nest.empty())
      continue;
    int64_t work = 1;
    if (generic)
      for (int64_t size : generic.getStaticLoopRanges())
        work *= size;
    for (scf::ForOp loop : nest)
      work *= tripCount(loop);
    const int64_t blocks = (work + options.threadsPerBlock - 1) / options.threadsPerBlock;
    if (work < 1 || blocks > std::numeric_limits<int32_t>::max())
      continue; // nothing to launch, or more blocks than a grid's x dimension holds: the runtime's kernels
    if (generic)
      buildGpuKernel(inModule, kernel, generic, work);
    else
      buildGpuRowKernel(inModule, kernel, nest, work);
    GpuKernelLaunch launch;
    launch.name = kernel.getSymName().str();
    launch.rows = !generic;
    launch.elements = work;
    launch.threads = options.threadsPerBlock;
    launch.blocks = blocks;
    // The inputs come first, then the outputs: the first parameter a store writes (a row kernel's).
    unsigned firstOutput = kernel.getNumArguments();
    kernel.walk([&](memref::StoreOp store) {
      if (auto arg = dyn_cast<BlockArgument>(store.getMemRef()); arg && arg.getOwner()->getParentOp() == kernel)
        firstOutput = std::min(firstOutput, arg.getArgNumber());
    });
    launch.numInputs = generic ? generic.getNumDpsInputs() : firstOutput;
    launch.numParams = kernel.getNumArguments();
    launches[launch.name] = launch;
  }
  return host;
}

FailureOr<KernelPtx> mlir::ptrain::lowerKernelsToPtx(ModuleOp kernels, const KernelPtxOptions &options) {
  MLIRContext *ctx = kernels.getContext();
  KernelPtx result;
  if (options.archs.empty())
    return kernels.emitError("--emit-cuda-kernels: no CUDA architecture to compile the generated kernels for");
  for (const std::string &arch : options.archs)
    if (!smVersionOf(arch))
      return kernels.emitError("--emit-cuda-kernels: '")
             << arch << "' is no CUDA architecture the generated kernels can target (sm_<NN> with NN >= 70, e.g. "
             << "sm_80 or sm_90)";
  if (options.threadsPerBlock < 32 || options.threadsPerBlock > 1024 || options.threadsPerBlock % 32)
    return kernels.emitError("--emit-cuda-kernels: ")
           << options.threadsPerBlock << " threads per block: must be a multiple of 32 in [32, 1024]";

  DialectRegistry registry;
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<arith::ArithDialect, cf::ControlFlowDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                   memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect>();

  OwningOpRef<ModuleOp> host = buildGpuKernels(kernels, options, result.kernels);
  if (result.kernels.empty())
    return result;

  // The kernels' lowering, as gpu-lower-to-nvvm-pipeline does for a gpu.module (convert-gpu-to-nvvm with bare
  // pointers for the kernels' static memrefs), then the PTX of every target (gpu-module-to-binary, format isa:
  // LLVM's NVPTX back end in this process; no ptxas).
  PassManager pm(ctx, ModuleOp::getOperationName());
  OpPassManager &inGpu = pm.nest<gpu::GPUModuleOp>();
  inGpu.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvmOptions;
  nvvmOptions.useBarePtrCallConv = true;
  inGpu.addPass(createConvertGpuOpsToNVVMOps(nvvmOptions));
  inGpu.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binaryOptions;
  binaryOptions.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binaryOptions));
  // MLIR's NVVM serializer looks for libdevice under the CUDA toolkit (CUDA_ROOT, CUDA_HOME, CUDA_PATH or its
  // built-in default) and reports a missing toolkit or libdevice as an error that it then ignores
  // (SerializeGPUModuleBase::appendStandardLibs). The kernels call no libdevice function (no math op: GELU's and
  // the softmax's exp are arith, GeluArith.h), so the PTX is the same without CUDA (CI machines): that report is
  // dropped here, every other diagnostic passes on. A kernel that did call one is refused below.
  ScopedDiagnosticHandler libdeviceLookup(ctx, [](Diagnostic &d) {
    const std::string text = d.str();
    return success(StringRef(text).starts_with("CUDA path: ") || StringRef(text).starts_with("LibDevice path: "));
  });
  if (failed(pm.run(*host)))
    return kernels.emitError("--emit-cuda-kernels: lowering the generated kernels to PTX failed (the GPU lowering "
                             "or the NVPTX back end; see the error above)");
  auto binary = dyn_cast_or_null<gpu::BinaryOp>(SymbolTable::lookupSymbolIn(*host, kGpuModuleName));
  if (!binary)
    return kernels.emitError("--emit-cuda-kernels: gpu-module-to-binary left no gpu.binary");
  for (Attribute attr : binary.getObjects()) {
    auto object = cast<gpu::ObjectAttr>(attr);
    auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
    if (!target || object.getFormat() != gpu::CompilationTarget::Assembly)
      return kernels.emitError("--emit-cuda-kernels: an object of the gpu.binary is no NVVM PTX");
    PtxImage image;
    image.arch = target.getChip().str();
    image.smVersion = *smVersionOf(image.arch);
    // The serializer may end the text with a NUL (for the driver's cuModuleLoadData); the step's literal adds
    // its own.
    image.ptx = object.getObject().getValue().str();
    while (!image.ptx.empty() && image.ptx.back() == '\0')
      image.ptx.pop_back();
    if (StringRef(image.ptx).contains("__nv_"))
      return kernels.emitError("--emit-cuda-kernels: the ")
             << image.arch << " PTX calls a libdevice function (__nv_*), which the step does not link";
    result.images.push_back(std::move(image));
  }
  return result;
}
