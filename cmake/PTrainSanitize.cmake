# PTRAIN_SANITIZE: build ptrain's own code with GCC's sanitizers (docs/Sanitizers.md). GCC: the Python
# tests preload the runtimes `gcc -print-file-name` names, and gcc links them into shared libraries, which keeps
# the runtime's -Wl,--no-undefined (Clang leaves shared libraries' sanitizer symbols undefined).
#
#   cmake -DPTRAIN_SANITIZE=address,undefined ...     (scripts/test.sh --sanitize: build-asan)
#
# The value is the -fsanitize= list. It instruments the compiler, the tools, the unit tests, libptrain_runtime and,
# through PTRAIN_SANITIZE_STEP_FLAGS (written into <build>/lib/Runtime/step_flags.json for ptrain-compile), every
# libstep.so the build tree compiles. Debian's MLIR, LLVM, protobuf, ONNX, OpenBLAS and MPI stay uninstrumented:
# ASan still sees their heap through its malloc interceptors, UBSan sees only project code.
#
# Defines the CTest ENVIRONMENT of each kind of test (the GoogleTest cases, discovered at test time, are
# instrumented executables and run with the sanitizers' defaults: leak checks on, and -fno-sanitize-recover makes a
# UBSan finding fatal):
#   PTRAIN_SANITIZE_PLAIN_ENV   instrumented binaries (lit runs only the tools): leak checks on;
#   PTRAIN_SANITIZE_MPI_ENV     instrumented binaries under mpirun: OpenMPI's own leaks suppressed (lsan-openmpi.supp);
#   PTRAIN_SANITIZE_PYTHON_ENV  Python, which loads instrumented libraries with ctypes (LD_PRELOAD of the sanitizer
#                               runtimes, no leak check of the interpreter);
#   ptrain_sanitize_tests()     gives them to tests.
set(PTRAIN_SANITIZE "" CACHE STRING
  "Sanitizers for ptrain's code, as -fsanitize= takes them (e.g. address,undefined); empty: none")

set(PTRAIN_SANITIZE_STEP_FLAGS "")
# Instrumented code runs slower; each test's TIMEOUT is scaled by this factor (docs/Sanitizers.md).
set(PTRAIN_SANITIZE_TIMEOUT_FACTOR 3)
# ptrain_sanitize_tests(<plain|mpi|python> [test...]): gives the named tests, or without names every test of the
# calling directory not given one yet, the environment of PTRAIN_SANITIZE_<KIND>_ENV, and scales their TIMEOUT.
# Call after the add_test()s. A test that runs neither Python nor ptrain code (e.g. diff) is unaffected.
function(ptrain_sanitize_tests kind)
  if(NOT PTRAIN_SANITIZE)
    return()
  endif()
  string(TOUPPER "${kind}" kind)
  set(_tests ${ARGN})
  if(NOT _tests)
    get_property(_tests DIRECTORY PROPERTY TESTS)
  endif()
  foreach(_test IN LISTS _tests)
    get_test_property(${_test} PTRAIN_SANITIZE_KIND _done)
    if(_done)
      continue()
    endif()
    set_property(TEST ${_test} PROPERTY PTRAIN_SANITIZE_KIND ${kind})
    set_property(TEST ${_test} APPEND PROPERTY ENVIRONMENT ${PTRAIN_SANITIZE_${kind}_ENV})
    get_test_property(${_test} TIMEOUT _timeout)
    if(_timeout)
      math(EXPR _timeout "${_timeout} * ${PTRAIN_SANITIZE_TIMEOUT_FACTOR}")
      set_tests_properties(${_test} PROPERTIES TIMEOUT ${_timeout})
    endif()
  endforeach()
endfunction()
if(NOT PTRAIN_SANITIZE)
  return()
endif()

if(PTRAIN_ENABLE_CUDA)
  # nvcc takes no -fsanitize, and the CUDA runtime's code runs only on a GPU, where ASan's shadow memory would
  # need protect_shadow_gap=0: the sanitized build is the CPU build.
  message(FATAL_ERROR "PTRAIN_SANITIZE=${PTRAIN_SANITIZE} needs -DPTRAIN_ENABLE_CUDA=OFF")
endif()

string(REPLACE "," ";" PTRAIN_SANITIZE_LIST "${PTRAIN_SANITIZE}")
# A finding must fail its test: UBSan otherwise prints and continues (ASan always stops).
set(PTRAIN_SANITIZE_FLAGS -fsanitize=${PTRAIN_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
# -O1 and line tables: ASan's recommended setting (exact stack traces), and a cold build that fits 2 cores.
# -Wno-maybe-uninitialized: GCC documents that the sanitizers' instrumentation makes this warning report false
# positives; at -O1 it fires inside LLVM's own headers (llvm::SmallDenseSet's inline buckets, DenseMap.h:1060, from
# lib/Import/ONNX/LegalizeShapeOps.cpp). The normal build (-O3) keeps it as an error for project code.
foreach(_flag IN LISTS PTRAIN_SANITIZE_FLAGS ITEMS -O1 -g1 -Wno-maybe-uninitialized)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:${_flag}>)
endforeach()
add_link_options(${PTRAIN_SANITIZE_FLAGS})
# The generated step keeps ptrain-compile's -O2; it gets the same checks as the runtime it links.
set(PTRAIN_SANITIZE_STEP_FLAGS ${PTRAIN_SANITIZE_FLAGS})

# allow_user_poisoning=0: Debian's libMLIR/libLLVM are not instrumented, but llvm/Support/Allocator.h is a header:
# its BumpPtrAllocator, inlined into our instrumented code, poisons the unused tail of each slab
# (LLVM_ADDRESS_SANITIZER_BUILD), and libMLIR's uninstrumented copy of the same allocator later hands that tail out
# without unpoisoning it. Any tool parsing a DenseArrayAttr then stops on a use-after-poison inside libMLIR's memmove
# (lit's Dialect/PTrain/codec-ops.mlir, 2026-12-06; the same cause as fuzz finding 7, cmake/AsanDefaults.cpp). Only
# that allocator-level bookkeeping is turned off; heap, stack and global checks stay on.
set(_asan_options "detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:allow_user_poisoning=0")
set(_ubsan_options "print_stacktrace=1:halt_on_error=1")
set(PTRAIN_SANITIZE_PLAIN_ENV "ASAN_OPTIONS=${_asan_options}" "UBSAN_OPTIONS=${_ubsan_options}")
# MPI programs: OpenMPI's own never-freed memory is suppressed by the OpenMPI functions on its stacks (the reasons
# are in the file), which needs complete stacks through Debian's libmpi (no frame pointers): the slow unwinder.
# use_tls=0: GCC 12's LeakSanitizer crashes ("Tracer caught signal 11") scanning the dynamic TLS of the OpenMPI
# components that MPI_Finalize dlclosed (a garbage range, "DTLS 10 at 0xd2c-0x400001e2e", runtime-collectives-np4).
# Without TLS as a root LSan can only report more, never fewer, leaks.
set(PTRAIN_SANITIZE_MPI_ENV "ASAN_OPTIONS=${_asan_options}:fast_unwind_on_malloc=0"
  "UBSAN_OPTIONS=${_ubsan_options}"
  "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/cmake/lsan-openmpi.supp:use_tls=0")

# A python process that ctypes-loads libptrain_runtime.so or a libstep.so must have the sanitizer runtimes first
# in its library list (ASan refuses to start otherwise): LD_PRELOAD them. Every child inherits it (mpirun, the
# ranks, the tools). detect_leaks=0: CPython does not free its interned objects and module state at exit, so
# LeakSanitizer would report the interpreter, not ptrain (the tools' leaks are checked by lit and the unit tests).
set(_preload "")
foreach(_sanitizer IN ITEMS address undefined)
  if(_sanitizer IN_LIST PTRAIN_SANITIZE_LIST)
    if(_sanitizer STREQUAL "address")
      set(_runtime libasan.so)
    else()
      set(_runtime libubsan.so)
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_runtime}
      OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${_path}" OR NOT EXISTS "${_path}")
      message(FATAL_ERROR "PTRAIN_SANITIZE: ${CMAKE_CXX_COMPILER} -print-file-name=${_runtime} gave '${_path}'")
    endif()
    get_filename_component(_path "${_path}" REALPATH)
    list(APPEND _preload "${_path}")
  endif()
endforeach()
string(REPLACE ";" ":" _preload "${_preload}")
string(REPLACE "detect_leaks=1" "detect_leaks=0" _python_asan_options "${_asan_options}")
set(PTRAIN_SANITIZE_PYTHON_ENV "LD_PRELOAD=${_preload}" "ASAN_OPTIONS=${_python_asan_options}"
  "UBSAN_OPTIONS=${_ubsan_options}")
message(STATUS "PTRAIN_SANITIZE=${PTRAIN_SANITIZE}: preloading ${_preload} into Python tests")

