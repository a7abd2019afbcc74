// RUN: ptrain-translate --emit-plan-json --split-input-file %s | FileCheck %s
// RUN: ptrain-translate --emit-plan-json --plan-json-target=cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// A single-rank step: the entry points are named after @train_step and @forward, batch and seq come from the
// tokens, the vocabulary from the logits, and each result of @train_step is the loss or a gradient.
// CHECK-LABEL: "entry_points": {
// CHECK-NEXT:    "train_step": "ptrain_step_train_step",
// CHECK-NEXT:    "forward": "ptrain_step_forward",
// CHECK-NEXT:    "init": "ptrain_step_init",
// CHECK-NEXT:    "save": "ptrain_step_save",
// CHECK-NEXT:    "load": "ptrain_step_load"
// CHECK-NEXT:  },
// CHECK-NEXT:  "batch": 2,
// CHECK-NEXT:  "seq": 4,
// CHECK-NEXT:  "vocab": 16,
// CHECK-NEXT:  "states": [
// CHECK-NEXT:    {
// CHECK-NEXT:      "symbol": "wte",
// CHECK-NEXT:      "key": "transformer.wte.weight",
// CHECK-NEXT:      "kind": "parameter",
// CHECK-NEXT:      "shape": [
// CHECK-NEXT:        16,
// CHECK-NEXT:        8
// CHECK-NEXT:      ],
// CHECK-NEXT:      "dtype": "f32"
// CHECK-NEXT:    },
// CHECK:         "symbol": "step",
// CHECK-NEXT:    "key": "adam/step",
// CHECK-NEXT:    "kind": "step_counter",
// CHECK-NEXT:    "shape": [],
// CHECK-NEXT:    "dtype": "i64"
// CHECK:       "train_step_results": [
// CHECK-NEXT:    {
// CHECK-NEXT:      "shape": [],
// CHECK-NEXT:      "dtype": "f32",
// CHECK-NEXT:      "name": "loss"
// CHECK-NEXT:    },
// CHECK-NEXT:    {
// CHECK-NEXT:      "shape": [
// CHECK-NEXT:        16,
// CHECK-NEXT:        8
// CHECK-NEXT:      ],
// CHECK-NEXT:      "dtype": "f32",
// CHECK-NEXT:      "grad_of": "transformer.wte.weight"
// CHECK-NEXT:    }
// CHECK-NEXT:  ]
// CHECK-NEXT: }
// A single-rank plan has no device state blocks in its plan, also for CUDA.
// CUDA-NOT: cuda_state_bytes
// CUDA: "train_step_results"
module {
  ptrain.state @wte key "transformer.wte.weight" kind parameter : tensor<16x8xf32>
  ptrain.state @step key "adam/step" kind step_counter : tensor<i64>
  func.func @forward(%t: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
    %l = arith.constant dense<0.0> : tensor<2x4x16xf32>
    return %l : tensor<2x4x16xf32>
  }
  func.func @train_step(%t: tensor<2x4xi64>) -> (tensor<f32>, tensor<16x8xf32> {ptrain.grad_of = "transformer.wte.weight"}) {
    %l = arith.constant dense<0.0> : tensor<f32>
    %g = ptrain.state_read @wte : tensor<16x8xf32>
    return %l, %g : tensor<f32>, tensor<16x8xf32>
  }
}

// -----

// A dp 2 x pp 2 x tp 2 pipeline: the grid gives dp and tp, ptrain.pipeline pp, the micro-batches and the
// stages, ptrain.schedule the schedule; a sliced parameter's shape is the rank's and its global_shape the
// model's (padded: a vocabulary padded to a multiple of tp); a parameter the model does not hold names its
// init; the codec states are listed again on their own; a replica's batch is M micro-batches, the global
// batch dp replicas.
// CHECK-LABEL: "dp": 2,
// CHECK-NEXT:  "pp": 2,
// CHECK-NEXT:  "tp": 2,
// CHECK-NEXT:  "micro_batches": 3,
// CHECK-NEXT:  "schedule": "gpipe",
// CHECK-NEXT:  "virtual_stages": 1,
// CHECK-NEXT:  "entry_points": {
// CHECK-NEXT:    "train": "ptrain_step_train",
// CHECK-NEXT:    "eval": "ptrain_step_eval",
// CHECK-NEXT:    "init": "ptrain_step_init",
// CHECK-NEXT:    "save": "ptrain_step_save",
// CHECK-NEXT:    "load": "ptrain_step_load",
// CHECK-NEXT:    "finalize": "ptrain_step_finalize",
// CHECK-NEXT:    "error": "ptrain_step_last_error"
// CHECK-NEXT:  },
// CHECK-NEXT:  "batch": 2,
// CHECK-NEXT:  "seq": 4,
// CHECK-NEXT:  "vocab": 9,
// CHECK-NEXT:  "states": [
// CHECK-NEXT:    {
// CHECK-NEXT:      "symbol": "wte",
// CHECK-NEXT:      "key": "transformer.wte.weight",
// CHECK-NEXT:      "kind": "parameter",
// CHECK-NEXT:      "shape": [
// CHECK-NEXT:        9,
// CHECK-NEXT:        8
// CHECK-NEXT:      ],
// CHECK-NEXT:      "dtype": "f32",
// CHECK-NEXT:      "tp_slice": {
// CHECK-NEXT:        "axis": "tp",
// CHECK-NEXT:        "dim": 0,
// CHECK-NEXT:        "groups": 1,
// CHECK-NEXT:        "global_shape": [
// CHECK-NEXT:          17,
// CHECK-NEXT:          8
// CHECK-NEXT:        ],
// CHECK-NEXT:        "padded": 18
// CHECK-NEXT:      }
// CHECK-NEXT:    },
// CHECK:           "symbol": "ae_encoder_0",
// CHECK:           "tp_slice": {
// CHECK-NEXT:        "axis": "tp",
// CHECK-NEXT:        "dim": 1,
// CHECK-NEXT:        "groups": 3,
// CHECK-NEXT:        "global_shape": [
// CHECK-NEXT:          8,
// CHECK-NEXT:          6
// CHECK-NEXT:        ]
// CHECK-NEXT:      },
// CHECK-NEXT:      "init": {
// CHECK-NEXT:        "kind": "orthogonal",
// CHECK-NEXT:        "seed": 7
// CHECK-NEXT:      }
// CHECK-NEXT:    },
// CHECK:           "symbol": "resid",
// CHECK:       "codec_states": [
// CHECK-NEXT:    {
// CHECK-NEXT:      "symbol": "resid",
// CHECK-NEXT:      "key": "cb/link1->0/residual",
// CHECK-NEXT:      "kind": "codec_residual",
// CHECK-NOT:     "symbol"
// CHECK:         "dtype": "f32"
// CHECK-NEXT:    }
// CHECK-NEXT:  ],
// CHECK-NEXT:  "replica_batch": 6,
// CHECK-NEXT:  "global_batch": 12
// CHECK-NEXT: }
// With --target cuda: each stage's device state block (its states at 256-byte alignment: 288 + 96 bytes on
// stage 0, 256 on stage 1) and the module's.
// CUDA-LABEL: "cuda_state_bytes": {
// CUDA-NEXT:    "per_stage": [
// CUDA-NEXT:      768,
// CUDA-NEXT:      256
// CUDA-NEXT:    ],
// CUDA-NEXT:    "module": 1024
// CUDA-NEXT:  },
// CUDA-NEXT:  "batch": 2,
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 3>,
    ptrain.schedule = #ptrain.schedule<kind = "gpipe", micro_batches = 3, table = [["F0", "F1", "F2", "B0", "B1", "B2", "O"], ["F0", "B0", "F1", "B1", "F2", "B2", "O"]]>} {
  ptrain.grid @grid(dp = 2, pp = 2, tp = 2)
  ptrain.state @wte key "transformer.wte.weight" kind parameter
      {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [17, 8], padded = 18>} : tensor<9x8xf32>
  ptrain.state @ae_encoder_0 key "ae/0->1/encoder" kind parameter
      {ptrain.init = {kind = "orthogonal", seed = 7 : i64},
       ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 6]>} : tensor<8x3xf32>
  ptrain.state @resid key "cb/link1->0/residual" kind codec_residual : tensor<2x4x8xf32>
  func.func @forward_stage0(%t: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @wte : tensor<9x8xf32>
    %e = ptrain.state_read @ae_encoder_0 : tensor<8x3xf32>
    %h = arith.constant dense<0.0> : tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
  func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x9xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.state_read @resid : tensor<2x4x8xf32>
    %l = arith.constant dense<0.0> : tensor<2x4x9xf32>
    return %l : tensor<2x4x9xf32>
  }
}

// -----

// Interleaved 1F1B: the virtual stages of ptrain.pipeline; the logits are the last chunk's; without a dp or tp
// axis each is 1.
// CHECK-LABEL: "dp": 1,
// CHECK-NEXT:  "pp": 2,
// CHECK-NEXT:  "tp": 1,
// CHECK-NEXT:  "micro_batches": 2,
// CHECK-NEXT:  "schedule": "interleaved",
// CHECK-NEXT:  "virtual_stages": 2,
// CHECK:       "vocab": 5,
// CHECK:       "codec_states": [],
// CHECK-NEXT:  "replica_batch": 2,
// CHECK-NEXT:  "global_batch": 2
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 2>,
    ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 2, virtual_stages = 2,
        table = [["F0", "F1", "F0.1", "F1.1", "B0.1", "B1.1", "B0", "B1", "O"], ["F0", "F1", "FB0.1", "FB1.1", "B0", "B1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %h = arith.constant dense<0.0> : tensor<1x4x8xf32>
    return %h : tensor<1x4x8xf32>
  }
  func.func @forward_stage1(%h: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<1x4x8xf32>
  }
  func.func @forward_stage2(%h: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    return %h : tensor<1x4x8xf32>
  }
  func.func @forward_stage3(%h: tensor<1x4x8xf32>) -> tensor<1x4x5xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    %l = arith.constant dense<0.0> : tensor<1x4x5xf32>
    return %l : tensor<1x4x5xf32>
  }
}
