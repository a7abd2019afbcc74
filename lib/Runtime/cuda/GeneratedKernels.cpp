//===- GeneratedKernels.cpp - The compiler's PTX kernels on the device ----===//
//
// Loads and launches the kernels the compiler generated for a step
// (--emit-cuda-kernels: the elementwise chains lowered through MLIR's NVVM
// route to PTX, one image per architecture; docs/GeneratedKernels.md, "The
// CUDA route"). The driver API (cuModuleLoadDataEx, cuModuleGetFunction,
// cuLaunchKernel) is reached through cudart's cudaGetDriverEntryPointByVersion,
// so libptrain_runtime_cuda links no libcuda: a machine without a driver
// still loads the library and fails at the first call with a DEVICE error.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"
#include "ptrain/Runtime/ptrain_runtime_cuda.h"

#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

using namespace ptrain::cuda;

/// The driver API entry points this file uses, as of CUDA 12.0's ABI.
struct DriverApi {
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void **, void **) = nullptr;
  CUresult (*getErrorName)(CUresult, const char **) = nullptr;
};

/// The entry points, once; a DEVICE error naming the missing one (an old or absent driver).
ptrain_status_t driverApi(const char *call, const DriverApi *&out) {
  static DriverApi api;
  static bool loaded = false;
  if (!loaded) {
    struct Entry {
      const char *symbol;
      void **fn;
    } entries[] = {{"cuModuleLoadDataEx", reinterpret_cast<void **>(&api.moduleLoadDataEx)},
                   {"cuModuleGetFunction", reinterpret_cast<void **>(&api.moduleGetFunction)},
                   {"cuLaunchKernel", reinterpret_cast<void **>(&api.launchKernel)},
                   {"cuGetErrorName", reinterpret_cast<void **>(&api.getErrorName)}};
    for (const Entry &e : entries) {
      cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
      const cudaError_t err = cudaGetDriverEntryPointByVersion(e.symbol, e.fn, 12000, cudaEnableDefault, &found);
      if (err != cudaSuccess)
        return check(call, err, e.symbol);
      if (found != cudaDriverEntryPointSuccess || !*e.fn)
        return fail(PTRAIN_ERROR_DEVICE, call, "the CUDA driver has no %s (CUDA 12.0's driver API): update the driver",
                    e.symbol);
    }
    loaded = true;
  }
  out = &api;
  return PTRAIN_OK;
}

const char *errorName(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  if (api.getErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "an unknown CUresult";
  return name;
}

/// The PTX ISA version an image declares (".version 8.0"), or "unknown".
std::string ptxVersionOf(const char *ptx) {
  const char *v = std::strstr(ptx, ".version ");
  if (!v)
    return "unknown";
  v += std::strlen(".version ");
  size_t n = std::strspn(v, "0123456789.");
  return std::string(v, n);
}

/// The CUDA release that introduced PTX ISA `version` ("7.8" -> 11.8, "8.0" -> 12.0, "9.0" -> 13.0), for the
/// error message of an old driver; empty when unknown.
std::string cudaReleaseOf(const std::string &version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2)
    return "";
  if (major == 7)
    return "11." + std::to_string(minor);
  if (major == 8 && minor <= 5)
    return "12." + std::to_string(minor);
  if (major == 9 && minor == 0)
    return "13.0";
  return "";
}

struct Module {
  CUmodule module = nullptr;
  int32_t sm = 0; ///< the image's architecture
};

struct Function {
  CUfunction function = nullptr;
  int32_t sm = 0;
  char name[128] = {};
};

} // namespace

extern "C" ptrain_status_t ptrain_cuda_kernels_load(const char *const *ptx_images, const int32_t *sm_versions,
                                                    int32_t num_images, void **out_module) {
  PTRAIN_CUDA_CHECK_PTR(ptx_images);
  PTRAIN_CUDA_CHECK_PTR(sm_versions);
  PTRAIN_CUDA_CHECK_PTR(out_module);
  PTRAIN_CUDA_CHECK_ARG(num_images > 0, "'num_images' must be > 0, got %d", num_images);
  *out_module = nullptr;
  int device = 0, major = 0, minor = 0;
  PTRAIN_CUDA_TRY(cudaGetDevice(&device));
  PTRAIN_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  PTRAIN_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const int32_t sm = major * 10 + minor;
  // The newest image the device runs: PTX of an older architecture JIT-compiles for a newer one, not back.
  int32_t chosen = -1;
  std::string archs;
  for (int32_t i = 0; i < num_images; ++i) {
    PTRAIN_CUDA_CHECK_ARG(ptx_images[i] != nullptr, "'ptx_images[%d]' must not be null", i);
    archs += (i ? ", sm_" : "sm_") + std::to_string(sm_versions[i]);
    if (sm_versions[i] <= sm && (chosen < 0 || sm_versions[i] > sm_versions[chosen]))
      chosen = i;
  }
  if (chosen < 0)
    return fail(PTRAIN_ERROR_DEVICE, __func__,
                "the generated kernels were compiled for %s and device %d is sm_%d: recompile with an architecture "
                "it runs (ptrain-compile --target cuda; docs/GeneratedKernels.md) or --fuse-elementwise off",
                archs.c_str(), device, sm);
  // The runtime API's primary context is the driver's current one (cudaFree(0) creates it if nothing has yet).
  PTRAIN_CUDA_TRY(cudaFree(nullptr));
  const DriverApi *api = nullptr;
  PTRAIN_CUDA_RETURN_IF_ERROR(driverApi(__func__, api));
  char log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(log)))};
  CUmodule module = nullptr;
  const CUresult loaded = api->moduleLoadDataEx(&module, ptx_images[chosen], 2, options, values);
  if (loaded == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    const std::string version = ptxVersionOf(ptx_images[chosen]), release = cudaReleaseOf(version);
    const std::string needs = release.empty() ? "" : " (PTX ISA " + version + " needs CUDA " + release + " or newer)";
    return fail(PTRAIN_ERROR_DEVICE, __func__,
                "cuModuleLoadDataEx(sm_%d): CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the driver (CUDA %d.%d) cannot "
                "compile PTX ISA %s of the generated kernels%s: update the driver, or compile with "
                "--fuse-elementwise off",
                sm_versions[chosen], driver / 1000, driver % 1000 / 10, version.c_str(), needs.c_str());
  }
  if (loaded != CUDA_SUCCESS)
    return fail(PTRAIN_ERROR_DEVICE, __func__, "cuModuleLoadDataEx(sm_%d) of the generated kernels: %s%s%s",
                sm_versions[chosen], errorName(*api, loaded), log[0] ? ": " : "", log);
  *out_module = new Module{module, sm_versions[chosen]};
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_kernel_function(void *module, const char *name, void **out_function) {
  PTRAIN_CUDA_CHECK_PTR(module);
  PTRAIN_CUDA_CHECK_PTR(name);
  PTRAIN_CUDA_CHECK_PTR(out_function);
  PTRAIN_CUDA_CHECK_ARG(std::strlen(name) < sizeof(Function::name), "the kernel name '%s' is too long", name);
  *out_function = nullptr;
  const DriverApi *api = nullptr;
  PTRAIN_CUDA_RETURN_IF_ERROR(driverApi(__func__, api));
  const Module &m = *static_cast<const Module *>(module);
  CUfunction function = nullptr;
  if (const CUresult result = api->moduleGetFunction(&function, m.module, name); result != CUDA_SUCCESS)
    return fail(PTRAIN_ERROR_DEVICE, __func__, "cuModuleGetFunction(%s) in the generated kernels' sm_%d image: %s",
                name, m.sm, errorName(*api, result));
  auto *f = new Function;
  f->function = function;
  f->sm = m.sm;
  std::snprintf(f->name, sizeof(f->name), "%s", name);
  *out_function = f;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_kernel_launch(void *function, int64_t blocks, int32_t threads, void **params) {
  PTRAIN_CUDA_CHECK_PTR(function);
  PTRAIN_CUDA_CHECK_PTR(params);
  const Function &f = *static_cast<const Function *>(function);
  PTRAIN_CUDA_CHECK_ARG(blocks > 0 && blocks <= 0x7fffffff, "%s: 'blocks' must be in [1, 2^31 - 1], got %lld", f.name,
                        static_cast<long long>(blocks));
  PTRAIN_CUDA_CHECK_ARG(threads > 0 && threads <= 1024, "%s: 'threads' must be in [1, 1024], got %d", f.name, threads);
  const DriverApi *api = nullptr;
  PTRAIN_CUDA_RETURN_IF_ERROR(driverApi(__func__, api));
  const CUresult result = api->launchKernel(f.function, static_cast<unsigned>(blocks), 1, 1,
                                            static_cast<unsigned>(threads), 1, 1, 0, currentStream(), params, nullptr);
  if (result != CUDA_SUCCESS)
    return fail(PTRAIN_ERROR_DEVICE, __func__, "cuLaunchKernel(%s, sm_%d image, %lld x %d threads): %s", f.name, f.sm,
                static_cast<long long>(blocks), threads, errorName(*api, result));
  return PTRAIN_OK;
}
