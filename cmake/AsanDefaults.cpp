// AddressSanitizer defaults for every instrumented executable that CTest or a user may start without ptrain's
// ASAN_OPTIONS: the libFuzzer targets (docs/Fuzzing.md, "Mixed instrumentation") and, in a -DPTRAIN_SANITIZE build,
// the GoogleTest binaries, whose cases CTest discovers at test time and runs without a test ENVIRONMENT
// (docs/Sanitizers.md). Linked as the object library PTrainAsanDefaults (cmake/PTrainSanitize.cmake).
//
// allow_user_poisoning=0: Debian's libMLIR/libLLVM are not instrumented, but llvm/Support/Allocator.h is a
// header: its BumpPtrAllocator, inlined into our instrumented code, poisons the unused tail of each slab
// (__asan_poison_memory_region, LLVM_ADDRESS_SANITIZER_BUILD), and the library's uninstrumented copy of the same
// allocator later hands that tail out without unpoisoning it. The first read of such an attribute storage by
// instrumented code (e.g. memcpy in DenseElementsAttr::getRaw) is then reported as use-after-poison although
// the memory is allocated and initialised (import-onnx, 2026-12-03; the input is fuzz/regressions/import-onnx/
// mixed-poisoning-sce-loss.onnx). Turning manual poisoning off removes only that allocator-level bookkeeping;
// heap, stack and global checks stay on. Every other option stays at its default; ASAN_OPTIONS still wins.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }
