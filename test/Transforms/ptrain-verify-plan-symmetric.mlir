// The verifier's symmetry shortcut (Passes.td, "Symmetry"): on a grid with dp (and tp) replicas whose ranks
// run the same function and transfer only along pp, one rank per pp coordinate runs, and the pass says so
// in a remark. Every mutation below gets the same verdict with all-ranks=true (every rank runs). The bundled
// GPT at dp x tp x pp: test/Integration/ptrain-verify-plan.mlir.
// RUN: split-file %s %t
// RUN: ptrain-opt %t/mutations.mlir --split-input-file --verify-diagnostics --ptrain-verify-plan
// RUN: ptrain-opt %t/mutations.mlir --split-input-file --verify-diagnostics --ptrain-verify-plan="all-ranks=true"
// RUN: not ptrain-opt %t/mutations.mlir --split-input-file --ptrain-verify-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTE
// RUN: ptrain-opt %t/valid.mlir --ptrain-verify-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// RUN: ptrain-opt %t/valid.mlir --ptrain-verify-plan="all-ranks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL --allow-empty

// VALID: remark: --ptrain-verify-plan: ran 2 of 4 ranks, one per coordinate of the other axes: the replicas over dp run the same steps and post the same communication (all-ranks=true runs every rank)
// ALL-NOT: remark
// An error found on the representatives says so.
// NOTE: error: --ptrain-verify-plan: train step: deadlock: no rank can progress
// NOTE: (verified one rank per coordinate of the other axes: the replicas over dp run the same steps and post the same communication; all-ranks=true runs every rank)

//--- valid.mlir
// A dp = 2 x pp = 2 plan: stage 0 sends an activation and receives its gradient, stage 1 the reverse, then
// a dp gradient average and the loss all-reduce over [dp, pp].
module {
  ptrain.grid @grid(dp = 2, pp = 2)
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %h = arith.constant dense<1.0> : tensor<2xf32>
    %s = ptrain.send_start %h to @grid axis pp offset 1 {ptrain.tag = 0} : tensor<2xf32>
    %r = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1} : !ptrain.request<tensor<2xf32>>
    %dh = ptrain.wait %r : !ptrain.request<tensor<2xf32>>
    ptrain.wait %s : !ptrain.request
    %g = ptrain.all_reduce_start %dh on @grid axes [dp] reduction = avg : tensor<2xf32>
    %gw = ptrain.wait %g : !ptrain.request<tensor<2xf32>>
    %z = arith.constant dense<0.0> : tensor<f32>
    %l = ptrain.all_reduce_start %z on @grid axes [dp, pp] reduction = sum : tensor<f32>
    %lw = ptrain.wait %l : !ptrain.request<tensor<f32>>
    return %lw : tensor<f32>
  }
  func.func @stage1_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.entry = "train"} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0} : !ptrain.request<tensor<2xf32>>
    %x = ptrain.wait %r : !ptrain.request<tensor<2xf32>>
    %s = ptrain.send_start %x to @grid axis pp offset -1 {ptrain.tag = 1} : tensor<2xf32>
    ptrain.wait %s : !ptrain.request
    %g = ptrain.all_reduce_start %x on @grid axes [dp] reduction = avg : tensor<2xf32>
    %gw = ptrain.wait %g : !ptrain.request<tensor<2xf32>>
    %z = arith.constant dense<0.0> : tensor<f32>
    %l = ptrain.all_reduce_start %z on @grid axes [dp, pp] reduction = sum : tensor<f32>
    %lw = ptrain.wait %l : !ptrain.request<tensor<f32>>
    return %lw : tensor<f32>
  }
}

//--- mutations.mlir
// Swap two communication steps on a dp = 2 grid: stage 0 waits for the gradient before it sends.
// expected-error@+1 {{deadlock: no rank can progress}}
module {
  ptrain.grid @grid(dp = 2, pp = 2)
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %h = arith.constant dense<1.0> : tensor<2xf32>
    %r = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1} : !ptrain.request<tensor<2xf32>>
    %dh = ptrain.wait %r : !ptrain.request<tensor<2xf32>>
    %s = ptrain.send_start %h to @grid axis pp offset 1 {ptrain.tag = 0} : tensor<2xf32>
    ptrain.wait %s : !ptrain.request
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage1_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.entry = "train"} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0} : !ptrain.request<tensor<2xf32>>
    %x = ptrain.wait %r : !ptrain.request<tensor<2xf32>>
    %s = ptrain.send_start %x to @grid axis pp offset -1 {ptrain.tag = 1} : tensor<2xf32>
    ptrain.wait %s : !ptrain.request
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----
// The loss all-reduce over [dp, pp] meets an all-gather on stage 1: the members of the [dp, pp]
// communicator disagree, among the representatives as among all four ranks.
// expected-error@+1 {{mismatched collectives: collective #0 on the communicator [dp, pp] of ranks}}
module {
  ptrain.grid @grid(dp = 2, pp = 2)
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %z = arith.constant dense<0.0> : tensor<f32>
    %l = ptrain.all_reduce_start %z on @grid axes [dp, pp] reduction = sum : tensor<f32>
    %lw = ptrain.wait %l : !ptrain.request<tensor<f32>>
    return %lw : tensor<f32>
  }
  func.func @stage1_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.entry = "train"} {
    %h = arith.constant dense<1.0> : tensor<2xf32>
    %a = ptrain.all_gather_start %h on @grid axes [dp, pp] gather_dim = 0 : tensor<2xf32> -> !ptrain.request<tensor<8xf32>>
    %aw = ptrain.wait %a : !ptrain.request<tensor<8xf32>>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----
// A transfer along dp: dp is not symmetric, so every rank runs and the last replica's send leaves the grid
// (with dp collapsed, replica 1 would never run and the error would be missed).
// expected-error@+1 {{rank 2 (dp=1, pp=0): 'ptrain.send_start' (tag 3)}}
module {
  ptrain.grid @grid(dp = 2, pp = 2)
  func.func @stage0_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.entry = "train"} {
    %h = arith.constant dense<1.0> : tensor<2xf32>
    %s = ptrain.send_start %h to @grid axis dp offset 1 {ptrain.tag = 3} : tensor<2xf32>
    ptrain.wait %s : !ptrain.request
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @stage1_train_step(%t: tensor<1x2xi64>) -> tensor<f32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.entry = "train"} {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}
