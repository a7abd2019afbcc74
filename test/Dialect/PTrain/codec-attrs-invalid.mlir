// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// Codec attribute constraints that hold without a tensor, checked when the attribute is built.

// MatrixView (C2): no dimension twice.
// expected-error@+1 {{matrix view lists dimension 1 twice}}
func.func private @matrix_view_c2() attributes {v = #ptrain.matrix_view<rows = [0, 1], cols = [1]>}

// -----

// MatrixView (C2): no negative dimension.
// expected-error@+1 {{matrix view dimension -1 is negative}}
func.func private @matrix_view_c2_negative() attributes {v = #ptrain.matrix_view<rows = [-1], cols = [0]>}

// -----

// PowerSGD (C1): rank >= 1.
// expected-error@+1 {{PowerSGD rank must be >= 1, got 0}}
func.func private @powersgd_c1() attributes {c = #ptrain.powersgd<rank = 0>}

// -----

// TopK (C1): k or ratio is given.
// expected-error@+1 {{top-k needs k >= 1 or a ratio in (0, 1], got ratio 0}}
func.func private @topk_c1_none() attributes {c = #ptrain.topk<>}

// -----

// TopK (C1): not both.
// expected-error@+1 {{top-k takes either k or ratio, not both}}
func.func private @topk_c1_both() attributes {c = #ptrain.topk<k = 4, ratio = 0.5>}

// -----

// TopK (C1): ratio in (0, 1].
// expected-error@+1 {{top-k needs k >= 1 or a ratio in (0, 1], got ratio 1.5}}
func.func private @topk_c1_ratio() attributes {c = #ptrain.topk<ratio = 1.5>}

// -----

// TopK (C1): k >= 1.
// expected-error@+1 {{top-k k must be >= 1, got -3}}
func.func private @topk_c1_negative() attributes {c = #ptrain.topk<k = -3>}

// -----

// RandK (C1): k or ratio is given.
// expected-error@+1 {{rand-k needs k >= 1 or a ratio in (0, 1], got ratio 0}}
func.func private @randk_c1() attributes {c = #ptrain.randk<seed = 1>}

// -----

// Quant (C1): bits is 2, 4 or 8.
// expected-error@+1 {{quantization bits must be 2, 4 or 8, got 3}}
func.func private @quant_c1() attributes {c = #ptrain.quant<bits = 3>}

// -----

// Quant (C2): block granularity needs block_size.
// expected-error@+1 {{block quantization needs block_size >= 1, got 0}}
func.func private @quant_c2_missing() attributes {c = #ptrain.quant<bits = 4, granularity = block>}

// -----

// Quant (C2): block_size only with block granularity.
// expected-error@+1 {{block_size is only allowed with granularity = block}}
func.func private @quant_c2_extra() attributes {c = #ptrain.quant<bits = 4, block_size = 32>}

// -----

// Cast (C1): f16 or bf16.
// expected-error@+1 {{cast codec target must be f16 or bf16, got 'f32'}}
func.func private @cast_c1() attributes {c = #ptrain.cast<f32>}

// -----

// LinearAE (C1): dim >= 1.
// expected-error@+1 {{linear autoencoder dim must be >= 1, got 0}}
func.func private @linear_ae_c1() attributes {c = #ptrain.linear_ae<dim = 0>}

// -----

// TahQuant (C1): the tile size is 8, 16, 32 or 64 (a power of two whose pivot fits the flag byte's 6 bits).
// expected-error@+1 {{tahquant tile_size must be 8, 16, 32 or 64, got 128}}
func.func private @tahquant_c1() attributes {c = #ptrain.tahquant<tile_size = 128>}

// -----

// TahQuant (C1): not a power of two.
// expected-error@+1 {{tahquant tile_size must be 8, 16, 32 or 64, got 48}}
func.func private @tahquant_c1_odd() attributes {c = #ptrain.tahquant<tile_size = 48>}

// -----

// TahQuant (C2): low_bits >= 1.
// expected-error@+1 {{tahquant needs 1 <= low_bits <= high_bits <= 8, got low_bits = 0, high_bits = 4}}
func.func private @tahquant_c2_low() attributes {c = #ptrain.tahquant<low_bits = 0>}

// -----

// TahQuant (C2): low_bits <= high_bits.
// expected-error@+1 {{tahquant needs 1 <= low_bits <= high_bits <= 8, got low_bits = 5, high_bits = 4}}
func.func private @tahquant_c2_order() attributes {c = #ptrain.tahquant<low_bits = 5>}

// -----

// TahQuant (C2): high_bits <= 8.
// expected-error@+1 {{tahquant needs 1 <= low_bits <= high_bits <= 8, got low_bits = 3, high_bits = 9}}
func.func private @tahquant_c2_high() attributes {c = #ptrain.tahquant<high_bits = 9>}

// -----

// TahQuant (C3): high_ratio in [0, 1].
// expected-error@+1 {{tahquant high_ratio must be in [0, 1], got 1.5}}
func.func private @tahquant_c3() attributes {c = #ptrain.tahquant<high_ratio = 1.5>}
