// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp
// RUN: nm %t.o | FileCheck %s --check-prefix=OBJECT
// RUN: ptrain-translate --emit-cpp %s | FileCheck %s --check-prefix=OFF

// --emit-cpp-kernels (docs/GeneratedKernels.md, "Codec encode + error feedback per site"): a block quantization
// site with error feedback calls its generated encoder after the residual's copy (a non-finite block is coded
// with a NaN scale, as the runtime's encoder does, so its result is no error); without the option the runtime's
// encoder is called.
// CHECK: extern "C" int64_t ptrain_codec_kernel_0(const float *, float *, uint8_t *, float *, float *);
// CHECK-LABEL: ptrain_step_quant(
// CHECK: ptrain_copy_bytes(arg1, 131072, [[E:v[0-9]+]])
// CHECK: static_cast<void>(ptrain_codec_kernel_0(arg0, [[E]], [[B:v[0-9]+]], [[S:v[0-9]+]], [[Z:v[0-9]+]]));
// CHECK-NOT: ptrain_record_error
// CHECK-NOT: ptrain_quant_encode_f32(
// CHECK: ptrain_quant_decode_f32([[B]], [[S]], [[Z]], 256, 128, 4, PTRAIN_QUANT_BLOCK, 64, 0,
// OBJECT: T ptrain_codec_kernel_0
// OFF-NOT: ptrain_codec_kernel
// OFF: ptrain_quant_encode_f32(arg0, {{v[0-9]+}}, 256, 128, 4, PTRAIN_QUANT_BLOCK, 64, 0,
module {
  func.func @quant(%g: tensor<4x64x128xf32>, %e: tensor<4x64x128xf32>) -> (tensor<4x64x128xf32>, tensor<4x64x128xf32>) {
    %b, %s, %z, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>, error_feedback}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>) -> (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>) state(tensor<4x64x128xf32>)
    %d = ptrain.decompress %b, %s, %z {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>}
        : (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>) -> tensor<4x64x128xf32>
    return %d, %e1 : tensor<4x64x128xf32>, tensor<4x64x128xf32>
  }
}
