// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp --emit-cpp-fold-head-permutes=false %s | FileCheck %s --check-prefix=OFF
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// The attention's head split and merge read and written in place by the GEMMs (GemmFusion.h, head permutes):
// [B, T, H, D] = [2, 4, 2, 3] tensors read as [B, H, T, D] with rows H*D = 6 apart, heads D = 3 apart and
// batch entries T*H*D = 24 apart (ptrain_gemm_strided_f32's layout {6, 24, 3}); the context written back as
// [B, T, H, D] the same way. Each case after the first keeps a permute for the reason its comment gives.
module {
  func.func @attention(%q: tensor<2x4x2x3xf32>, %k: tensor<2x4x2x3xf32>, %v: tensor<2x4x2x3xf32>,
                       %dctx: tensor<2x2x4x3xf32>) -> (tensor<2x4x2x3xf32>, tensor<2x2x4x3xf32>) {
    %qh = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x3xf32> -> tensor<2x2x4x3xf32> loc("/att/q")
    %kt = ptrain.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x3xf32> -> tensor<2x2x3x4xf32> loc("/att/kT")
    %vh = ptrain.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x3xf32> -> tensor<2x2x4x3xf32> loc("/att/v")
    %s = ptrain.matmul %qh, %kt : tensor<2x2x4x3xf32>, tensor<2x2x3x4xf32> loc("/att/scores")
    %c = ptrain.matmul %s, %vh : tensor<2x2x4x4xf32>, tensor<2x2x4x3xf32> loc("/att/context")
    %cm = ptrain.transpose %c {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x3xf32> -> tensor<2x4x2x3xf32> loc("/att/merge")
    // The backward's dP = dC V^T: V^T through a last-two-dims transpose of the head permute, read transposed.
    %vt = ptrain.transpose %vh {perm = array<i64: 0, 1, 3, 2>} : tensor<2x2x4x3xf32> -> tensor<2x2x3x4xf32> loc("/att/vT")
    %dp = ptrain.matmul %dctx, %vt : tensor<2x2x4x3xf32>, tensor<2x2x3x4xf32> loc("/att/dP")
    // Kept: the merge of a transposed product ({0, 3, 1, 2}, dK^T back to [B, T, H, D]) would need the operands
    // swapped, which OpenBLAS's Haswell kernels sum in another order.
    %dkt = ptrain.matmul %kt, %dp : tensor<2x2x3x4xf32>, tensor<2x2x4x4xf32> loc("/att/dKT")
    %dk = ptrain.transpose %dkt {perm = array<i64: 0, 3, 1, 2>} : tensor<2x2x3x4xf32> -> tensor<2x4x2x3xf32> loc("/att/dK")
    %sum = ptrain.binary add %cm, %dk : tensor<2x4x2x3xf32>, tensor<2x4x2x3xf32> loc("/att/sum")
    // Kept: a head permute with a user other than a GEMM (returned) is materialized; the GEMM still reads in place.
    %qh2 = ptrain.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x3xf32> -> tensor<2x2x4x3xf32> loc("/kept/q")
    %qq = ptrain.matmul %qh2, %vt : tensor<2x2x4x3xf32>, tensor<2x2x3x4xf32> loc("/kept/qvT")
    %out = ptrain.binary add %qh2, %dctx : tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32> loc("/kept/add")
    %q2 = ptrain.matmul %qq, %vh : tensor<2x2x4x4xf32>, tensor<2x2x4x3xf32> loc("/kept/qq")
    %out2 = ptrain.binary add %out, %q2 : tensor<2x2x4x3xf32>, tensor<2x2x4x3xf32> loc("/kept/add2")
    return %sum, %out2 : tensor<2x4x2x3xf32>, tensor<2x2x4x3xf32>
  }
}

// CHECK-LABEL: ptrain_step_attention(const float *arg0, const float *arg1, const float *arg2, const float *arg3,
// The split permutes are read in place: not emitted, not even a comment.
// CHECK-NOT: "/att/q"
// CHECK-NOT: "/att/kT"
// CHECK-NOT: "/att/v"
// CHECK: // "/att/scores"
// Q^T K: both operands [B, T, H, D] in place (K's {0, 2, 3, 1} permute read transposed), scores dense.
// CHECK: static const int64_t a_layout[3] = {6, 24, 3};
// CHECK-NEXT: static const int64_t b_layout[3] = {6, 24, 3};
// CHECK-NEXT: static const int64_t c_layout[3] = {4, 32, 16};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_gemm_strided_f32(0, 1, 2, 2, 4, 4, 3, 1.0f, arg0, a_layout, arg1, b_layout, 0.0f, [[S:v[0-9]+]], c_layout));
// P V written straight into the merged [B, T, H, D] layout; the merge is its alias.
// CHECK: // "/att/context"
// CHECK: static const int64_t a_layout[3] = {4, 32, 16};
// CHECK-NEXT: static const int64_t b_layout[3] = {6, 24, 3};
// CHECK-NEXT: static const int64_t c_layout[3] = {6, 24, 3};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_gemm_strided_f32(0, 0, 2, 2, 4, 3, 4, 1.0f, [[S]], a_layout, arg2, b_layout, 0.0f, [[C:v[0-9]+]], c_layout));
// CHECK-NOT: "/att/merge"
// CHECK-NOT: "/att/vT"
// CHECK: // "/att/dP"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_strided_f32(0, 1, 2, 2, 4, 4, 3, 1.0f, arg3, a_layout, arg2, b_layout, 0.0f, {{v[0-9]+}}, c_layout));
// CHECK: // "/att/dKT"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_strided_f32(1, 0, 2, 2, 3, 4, 4, 1.0f, arg1, a_layout, {{v[0-9]+}}, b_layout, 0.0f, [[DKT:v[0-9]+]], c_layout));
// CHECK: // "/att/dK"
// CHECK: static const int32_t perm[4] = {0, 3, 1, 2};
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_permute_f32([[DKT]], 4, dims, perm, [[DK:v[0-9]+]]));
// The merge is an alias of the context's buffer, declared where the sum reads it.
// CHECK: // "/att/sum"
// CHECK: float *[[CM:v[0-9]+]] = [[C]];
// CHECK: ptrain_binary_f32(PTRAIN_BINARY_ADD, [[CM]], 4, a_dims, [[DK]], 4,
// CHECK: // "/kept/q"
// CHECK: PTRAIN_STEP_CALL(ptrain_permute_f32(arg0, 4, dims, perm, {{v[0-9]+}}));
// CHECK: // "/kept/qvT"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_strided_f32(0, 1, 2, 2, 4, 4, 3, 1.0f, arg0, a_layout, arg2, b_layout, 0.0f, {{v[0-9]+}}, c_layout));

// Off: every permute materialized, every GEMM ptrain_gemm_f32 over the [B * H] batch.
// OFF-LABEL: ptrain_step_attention(
// OFF-NOT: ptrain_gemm_strided_f32
// OFF: // "/att/q"
// OFF: ptrain_permute_f32(arg0, 4, dims, perm,
// OFF: // "/att/scores"
// OFF: ptrain_gemm_f32(0, 0, 4, 4, 4, 3, 1.0f,
// OFF: // "/att/merge"
// OFF: ptrain_permute_f32(
// OFF-NOT: ptrain_gemm_strided_f32
