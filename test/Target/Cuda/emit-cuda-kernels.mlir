// RUN: ptrain-translate --emit-cuda %s --emit-cuda-kernels=sm_80,sm_90 | FileCheck %s
// RUN: ptrain-translate --emit-cuda %s --emit-cuda-kernels=sm_80,sm_90 | FileCheck %s --check-prefix=PTX
// RUN: ptrain-translate --emit-cuda %s --emit-cuda-kernels=sm_80,sm_90 -o %t.cu && c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu
// Without a CUDA toolkit (CI): the same PTX, and nothing on stderr (MLIR's libdevice lookup reports a missing
// toolkit, which the kernels do not need: KernelPtx.cpp drops that report).
// RUN: env CUDA_ROOT=%t.none CUDA_HOME=%t.none CUDA_PATH=%t.none ptrain-translate --emit-cuda %s --emit-cuda-kernels=sm_80,sm_90 -o %t.none.cu 2> %t.none.err
// RUN: count 0 < %t.none.err
// RUN: FileCheck %s --input-file=%t.none.cu --check-prefix=PTX
// RUN: ptrain-translate --emit-cuda %s | FileCheck %s --check-prefix=OFF
// RUN: not ptrain-translate --emit-cuda %s --emit-cuda-kernels=sm_60 2>&1 | FileCheck %s --check-prefix=OLDARCH
// RUN: not ptrain-translate --emit-cuda %s --emit-cuda-kernels=gfx90a 2>&1 | FileCheck %s --check-prefix=NOARCH

// --emit-cuda-kernels (docs/GeneratedKernels.md, "The CUDA route"): the elementwise chains outlined as for the
// CPU, lowered in-process to one PTX image per architecture, embedded in the unit, loaded at set-up
// (ptrain_cuda_kernels_load, a handle per kernel) and launched on the step's stream at the chain's last op, one
// element per thread, or one row group per thread for a chain that ends in a softmax (@scores); a chain whose
// kernel has no GPU version (@vector: a softmax over a 1-D tensor, no loop over rows) keeps the runtime's calls.
// Without the option nothing is generated.

// The images, the sm_80 one first, and the handles.
// CHECK: const char kGeneratedPtx_sm_80[] = R"ptx(
// CHECK: .target sm_80
// CHECK: )ptx";
// CHECK: const char kGeneratedPtx_sm_90[] = R"ptx(
// CHECK: .target sm_90
// CHECK: )ptx";
// CHECK: const char *const kGeneratedPtx[] = {kGeneratedPtx_sm_80, kGeneratedPtx_sm_90};
// CHECK-NEXT: const int32_t kGeneratedPtxSm[] = {80, 90};
// CHECK-NEXT: void *generated_module = nullptr;
// CHECK-NEXT: void *generated_[[MLP:ptrain_kernel_[0-9]+]] = nullptr; ///< 3 inputs, 1 outputs, 64 elements
// CHECK-NEXT: void *generated_[[SCORES:ptrain_kernel_[0-9]+]] = nullptr; ///< 3 inputs, 1 outputs, 16 rows or row groups
// CHECK-NEXT: void *generated_[[BCAST:ptrain_kernel_[0-9]+]] = nullptr; ///< 4 inputs, 2 outputs, 1155 elements
// CHECK-NOT: void *generated_
// Loaded once the stream exists.
// CHECK-LABEL: ptrain_status_t setUpDevice() {
// CHECK: ptrain_cuda_set_stream(stream)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernels_load(kGeneratedPtx, kGeneratedPtxSm, 2, &generated_module));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernel_function(generated_module, "[[MLP]]", &generated_[[MLP]]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernel_function(generated_module, "[[SCORES]]", &generated_[[SCORES]]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernel_function(generated_module, "[[BCAST]]", &generated_[[BCAST]]));

// Bias + GELU + residual: one launch of one block (64 elements), the two first ops nothing.
// CHECK-LABEL: @mlp on device buffers
// CHECK-COUNT-2: // computed by [[MLP]] at the last op of its chain
// CHECK: // 3 ops in one generated kernel (--ptrain-outline-elementwise), 64 elements, one per thread
// CHECK-NEXT: void *params[] = {&d_arg0, &d_arg1, &d_arg2, &[[OUT:v[0-9]+]]};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernel_launch(generated_[[MLP]], 1, 256, params));
// CHECK-NOT: ptrain_cuda_binary_f32
// CHECK-NOT: ptrain_cuda_gelu
// CHECK: return PTRAIN_OK;

// Scale + mask + softmax over 2 x 4 x 8 rows of 8: the CPU kernel's groups of 4 rows, one per thread (16).
// CHECK-LABEL: @scores on device buffers
// CHECK: // 3 ops in one generated kernel (--ptrain-outline-elementwise), 16 rows or row groups, one per thread
// CHECK-NEXT: void *params[] = {&d_arg0, &[[SCALE:v[0-9]+]], &d_arg1, &{{v[0-9]+}}};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernel_launch(generated_[[SCORES]], 1, 256, params));
// CHECK-NOT: ptrain_cuda_binary_f32
// CHECK-NOT: ptrain_cuda_softmax_fwd_f32
// CHECK: return PTRAIN_OK;

// A softmax over a vector: the CPU's kernel has no loop over rows to map onto threads, the runtime's calls.
// CHECK-LABEL: @vector on device buffers
// CHECK-NOT: ptrain_cuda_kernel_launch
// CHECK: ptrain_cuda_binary_f32(
// CHECK: ptrain_cuda_softmax_fwd_f32(
// CHECK: return PTRAIN_OK;

// Broadcasts (a row, a column, a scalar constant) and an intermediate read after the chain: 1155 elements in 5 blocks.
// CHECK-LABEL: @bcast on device buffers
// CHECK: void *params[] = {&d_arg0, &d_arg1, &d_arg2, &[[C:v[0-9]+]], &[[MID:v[0-9]+]], &[[LAST:v[0-9]+]]};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_kernel_launch(generated_[[BCAST]], 5, 256, params));
// CHECK-NOT: ptrain_cuda_binary_f32
// CHECK: return PTRAIN_OK;

// The images: the entries with bare pointers, the guard, correctly rounded operations (fp32 adds, the GELU's
// fp64 multiplies, adds and reciprocal, the fp32 division) and no fused multiply-add or approximation anywhere:
// the CPU kernels' operations in their order.
// PTX-LABEL: kGeneratedPtx_sm_80[]
// PTX: .version 8.0
// PTX: .target sm_80
// PTX: .visible .entry ptrain_kernel_{{[0-9]+}}(
// PTX-NOT: fma.rn
// PTX: setp.{{.*}}
// PTX: add.rn.f32
// PTX-NOT: fma.rn
// PTX: mul.rn.f64
// PTX-NOT: fma.rn
// PTX: rcp.rn.f64
// PTX-NOT: {{fma.rn|approx}}
// PTX: )ptx";
// PTX-LABEL: kGeneratedPtx_sm_90[]
// PTX: .target sm_90
// PTX-NOT: {{fma.rn|approx}}
// PTX: div.rn.f32
// PTX-NOT: {{fma.rn|approx}}
// PTX: )ptx";

// OFF-NOT: kGeneratedPtx
// OFF-NOT: ptrain_cuda_kernel_launch
// OFF: ptrain_cuda_gelu_fwd_f32(

// OLDARCH: error: --emit-cuda-kernels: 'sm_60' is no CUDA architecture the generated kernels can target (sm_<NN> with NN >= 70, e.g. sm_80 or sm_90)
// NOARCH: error: --emit-cuda-kernels: 'gfx90a' is no CUDA architecture the generated kernels can target
module {
  func.func @mlp(%x: tensor<4x16xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %0 = ptrain.binary add %x, %b : tensor<4x16xf32>, tensor<16xf32>
    %1 = ptrain.gelu %0 : tensor<4x16xf32>
    %2 = ptrain.binary add %1, %r : tensor<4x16xf32>, tensor<4x16xf32>
    return %2 : tensor<4x16xf32>
  }
  func.func @scores(%x: tensor<2x4x8x8xf32>, %mask: tensor<8x8xf32>) -> tensor<2x4x8x8xf32> {
    %scale = arith.constant dense<0.125> : tensor<f32>
    %0 = ptrain.binary mul %x, %scale : tensor<2x4x8x8xf32>, tensor<f32>
    %1 = ptrain.binary add %0, %mask : tensor<2x4x8x8xf32>, tensor<8x8xf32>
    %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<2x4x8x8xf32>
    return %2 : tensor<2x4x8x8xf32>
  }
  func.func @vector(%x: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
    %0 = ptrain.binary add %x, %b : tensor<16xf32>, tensor<16xf32>
    %1 = ptrain.softmax %0 {axis = -1 : i64} : tensor<16xf32>
    return %1 : tensor<16xf32>
  }
  func.func @bcast(%x: tensor<7x11x15xf32>, %row: tensor<15xf32>, %col: tensor<7x1x1xf32>) -> (tensor<7x11x15xf32>, tensor<7x11x15xf32>) {
    %c = arith.constant dense<3.0> : tensor<f32>
    %0 = ptrain.binary sub %x, %row : tensor<7x11x15xf32>, tensor<15xf32>
    %1 = ptrain.binary mul %0, %col : tensor<7x11x15xf32>, tensor<7x1x1xf32>
    %2 = ptrain.binary div %1, %c : tensor<7x11x15xf32>, tensor<f32>
    return %1, %2 : tensor<7x11x15xf32>, tensor<7x11x15xf32>
  }
}
