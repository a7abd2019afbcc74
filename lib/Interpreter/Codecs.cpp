//===- Codecs.cpp - ptrain.compress / decompress / compressed_all_reduce ---*- C++ -*-===//
//
// The reference semantics of the codec ops run the runtime's own CPU codec kernels (lib/Runtime/cpu/codecs,
// linked as the MPI-free object library ptrain_codecs), so that an interpreted plan and a compiled one
// encode bit for bit alike. Every codec the runtime has a kernel for runs here: PowerSGD, top-k, rand-k,
// quantization, TAH-Quant and the f16/bf16 casts (the linear autoencoder has no kernel and is an error). A codec is
// described to the runtime by its ptrain_codec_t descriptor; its codes are serialized by
// ptrain_codec_encode into the runtime's byte layout (cpu/codecs/Codec.h: sections 8-byte aligned, in the
// order of the attribute's code types) and unpacked into the op's code tensors. Tensors are converted to
// fp32 around the kernel calls (the codecs are fp32).
//
// The compressed all-reduce mirrors lib/Runtime/cpu/CompressedCollectives.cpp phase by phase, with the
// executor's deterministic stand-in for MPI_SUM (fp32 sums in member order): summable codes (PowerSGD
// factors, rand-k values, casts) are reduced in compressed form, top-k and quantization codes are gathered,
// decoded and summed.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include "ptrain/Interpreter/CodecPhases.h"

#include "ptrain/Runtime/ptrain_runtime.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cstring>
#include <vector>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {
std::vector<float> toFloats(const Tensor &t) { return std::vector<float>(t.floats().begin(), t.floats().end()); }

Tensor fromFloats(llvm::ArrayRef<int64_t> shape, const std::vector<float> &values) {
  return Tensor::fromFloats(DType::F32, shape, std::vector<double>(values.begin(), values.end()));
}

llvm::Error kernelError(ptrain_status_t status) {
  return makeError(llvm::Twine("codec kernel failed (") + ptrain_status_string(status) + "): " + ptrain_last_error());
}

/// The PowerSGD matrix view (n, m) of `type`.
std::pair<int64_t, int64_t> matrixOf(PowerSGDAttr codec, RankedTensorType type) {
  return *MatrixViewAttr::getMatrixShape(codec.getView(), type, nullptr);
}

/// (n, m) of `view` on `type` when the view is a reshape of the row-major data (rows are the leading
/// dimensions in order, cols the trailing ones): the kernels read the tensor as a row-major n x m matrix.
llvm::Expected<std::pair<int64_t, int64_t>> contiguousMatrixOf(MatrixViewAttr view, RankedTensorType type) {
  if (view) {
    int64_t next = 0;
    for (int64_t d : llvm::concat<const int64_t>(view.getRows(), view.getCols()))
      if (d != next++)
        return makeError("the interpreter runs codecs only on matrix views that reshape the tensor (rows the "
                         "leading dimensions, cols the trailing ones, in order)");
  }
  auto nm = MatrixViewAttr::getMatrixShape(view, type, nullptr);
  if (failed(nm))
    return makeError("the matrix view does not cover the tensor's dimensions");
  return *nm;
}

/// The runtime descriptor of `codec` on tensors of `type` (one batch entry).
llvm::Expected<ptrain_codec_t> descriptorOf(CodecAttrInterface codec, RankedTensorType type) {
  ptrain_codec_t d;
  std::memset(&d, 0, sizeof(d));
  d.batch = 1;
  d.rows = 1;
  d.cols = type.getNumElements();
  auto view = [&](MatrixViewAttr v) -> llvm::Error {
    auto nm = contiguousMatrixOf(v, type);
    if (!nm)
      return nm.takeError();
    d.rows = nm->first;
    d.cols = nm->second;
    return llvm::Error::success();
  };
  llvm::Error error = llvm::TypeSwitch<Attribute, llvm::Error>(codec)
                          .Case([&](PowerSGDAttr c) {
                            d.kind = PTRAIN_CODEC_POWERSGD;
                            d.rank = c.getRank();
                            d.warm_start = c.isWarmStart();
                            d.seed =
                                0; // draws the initial (or, without warm start, every) Q; the C++ emitter uses the same
                            return view(c.getView());
                          })
                          .Case([&](TopKAttr c) {
                            d.kind = PTRAIN_CODEC_TOPK;
                            d.k = c.getKFor(type.getNumElements());
                            return llvm::Error::success();
                          })
                          .Case([&](RandKAttr c) {
                            d.kind = PTRAIN_CODEC_RANDK;
                            d.k = c.getKFor(type.getNumElements());
                            d.seed = static_cast<uint64_t>(c.getSeed());
                            return llvm::Error::success();
                          })
                          .Case([&](QuantAttr c) {
                            d.kind = PTRAIN_CODEC_QUANT;
                            d.bits = static_cast<int32_t>(c.getBits());
                            d.granularity = static_cast<int32_t>(c.getGranularity());
                            d.block_size = c.getBlockSize();
                            d.symmetric = c.isSymmetric();
                            return view(c.getView());
                          })
                          .Case([&](TahQuantAttr c) {
                            d.kind = PTRAIN_CODEC_TAHQUANT;
                            d.tile_size = c.getTileSize();
                            d.low_bits = static_cast<int32_t>(c.getLowBits());
                            d.bits = static_cast<int32_t>(c.getHighBits());
                            d.k = c.getHighTilesFor(c.getNumTiles(type));
                            return llvm::Error::success();
                          })
                          .Case([&](CastAttr c) {
                            d.kind = PTRAIN_CODEC_CAST;
                            d.cast_dtype = c.getType().isF16() ? PTRAIN_DTYPE_F16 : PTRAIN_DTYPE_BF16;
                            return llvm::Error::success();
                          })
                          .Default([&](Attribute a) {
                            std::string text;
                            llvm::raw_string_ostream os(text);
                            os << "the runtime has no kernel for the codec " << a;
                            return makeError(text);
                          });
  if (error)
    return std::move(error);
  if (!type.getElementType().isF32())
    return makeError(isHalfFloat(type.getElementType())
                         ? "the codec kernels take f32 tensors: run --ptrain-widen-half-codecs on a 16-bit plan's codec "
                           "ops first (--ptrain-pipeline does)"
                         : "the codec kernels take f32 tensors");
  return d;
}

/// The codec's own state on one side (PowerSGD's warm-start Q, rand-k's call counter) in the form the
/// runtime takes (`state` of ptrain_codec_encode/decode), and back.
struct CodecState {
  std::vector<float> q;
  int64_t counter = 0;
  bool present = false;

  static CodecState of(const ptrain_codec_t &d, llvm::ArrayRef<const Tensor *> tensors) {
    CodecState s;
    if (tensors.empty())
      return s;
    s.present = true;
    if (d.kind == PTRAIN_CODEC_RANDK)
      s.counter = tensors[0]->ints()[0];
    else
      s.q = toFloats(*tensors[0]);
    return s;
  }
  void *pointer() {
    if (!present)
      return nullptr;
    return q.empty() ? static_cast<void *>(&counter) : static_cast<void *>(q.data());
  }
  /// The new state tensors, of `types`.
  std::vector<Tensor> tensors(llvm::ArrayRef<Type> types) const {
    std::vector<Tensor> out;
    for (Type t : types) {
      auto type = cast<RankedTensorType>(t);
      if (q.empty())
        out.push_back(cantFail(Tensor::fromInts(DType::I64, type.getShape(), {counter})));
      else
        out.push_back(fromFloats(type.getShape(), q));
    }
    return out;
  }
};

size_t elementBytes(Type elt) { return elt.isF16() || elt.isBF16() ? 2 : elt.getIntOrFloatBitWidth() / 8; }
size_t align8(size_t bytes) { return (bytes + 7) / 8 * 8; }

/// The code tensors of `codeTypes` in the runtime's serialized code `buffer`.
llvm::Expected<std::vector<Tensor>> unpackCodes(const std::vector<char> &buffer, llvm::ArrayRef<Type> codeTypes) {
  std::vector<Tensor> codes;
  size_t offset = 0;
  for (Type t : codeTypes) {
    auto type = cast<RankedTensorType>(t);
    Type elt = type.getElementType();
    const int64_t n = type.getNumElements();
    const char *p = buffer.data() + offset;
    if (elt.isF32()) {
      std::vector<float> values(n);
      std::memcpy(values.data(), p, n * 4);
      codes.push_back(fromFloats(type.getShape(), values));
    } else if (elt.isF16() || elt.isBF16()) {
      std::vector<double> values(n);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        llvm::APFloat f(elt.isF16() ? llvm::APFloat::IEEEhalf() : llvm::APFloat::BFloat(), llvm::APInt(16, bits));
        bool lostInfo;
        f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lostInfo);
        values[i] = f.convertToDouble();
      }
      codes.push_back(Tensor::fromFloats(elt.isF16() ? DType::F16 : DType::BF16, type.getShape(), values));
    } else if (elt.isInteger(32) || elt.isInteger(8)) {
      std::vector<int64_t> values(n);
      for (int64_t i = 0; i < n; ++i) {
        if (elt.isInteger(8)) {
          values[i] = static_cast<int8_t>(p[i]);
        } else {
          int32_t v;
          std::memcpy(&v, p + 4 * i, 4);
          values[i] = v;
        }
      }
      auto tensor = Tensor::fromInts(elt.isInteger(8) ? DType::I8 : DType::I32, type.getShape(), values);
      if (!tensor)
        return tensor.takeError();
      codes.push_back(std::move(*tensor));
    } else {
      return makeError("unexpected code element type");
    }
    offset += align8(n * elementBytes(elt));
  }
  if (offset != buffer.size())
    return makeError("the codes of the codec attribute (" + std::to_string(offset) +
                     " bytes) do not match the runtime's code layout (" + std::to_string(buffer.size()) + " bytes)");
  return codes;
}

/// The runtime's serialized code from the code tensors (the inverse of unpackCodes).
std::vector<char> packCodes(llvm::ArrayRef<const Tensor *> codes) {
  size_t total = 0;
  for (const Tensor *c : codes)
    total += align8(c->getNumElements() * (c->getDType() == DType::F16 || c->getDType() == DType::BF16 ? 2
                                           : c->getDType() == DType::I8                                ? 1
                                                                                                       : 4));
  std::vector<char> buffer(total, 0);
  size_t offset = 0;
  for (const Tensor *c : codes) {
    char *p = buffer.data() + offset;
    const int64_t n = c->getNumElements();
    size_t width = 4;
    switch (c->getDType()) {
    case DType::F16:
    case DType::BF16:
      width = 2;
      for (int64_t i = 0; i < n; ++i) {
        llvm::APFloat f(c->floats()[i]);
        bool lostInfo;
        f.convert(c->getDType() == DType::F16 ? llvm::APFloat::IEEEhalf() : llvm::APFloat::BFloat(),
                  llvm::APFloat::rmNearestTiesToEven, &lostInfo);
        uint16_t bits = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
        std::memcpy(p + 2 * i, &bits, 2);
      }
      break;
    case DType::I8:
      width = 1;
      for (int64_t i = 0; i < n; ++i)
        p[i] = static_cast<char>(static_cast<int8_t>(c->ints()[i]));
      break;
    case DType::I32:
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = static_cast<int32_t>(c->ints()[i]);
        std::memcpy(p + 4 * i, &v, 4);
      }
      break;
    default:
      for (int64_t i = 0; i < n; ++i) {
        float v = static_cast<float>(c->floats()[i]);
        std::memcpy(p + 4 * i, &v, 4);
      }
      break;
    }
    offset += align8(n * width);
  }
  return buffer;
}

/// Encodes `g` (updating `residual` when not null, and `state`) into code tensors of `codeTypes`.
llvm::Expected<std::vector<Tensor>> encode(const ptrain_codec_t &d, llvm::ArrayRef<Type> codeTypes,
                                           const std::vector<float> &g, float *residual, CodecState &state) {
  int64_t bytes = 0;
  if (ptrain_status_t status = ptrain_codec_code_bytes(&d, &bytes))
    return kernelError(status);
  std::vector<char> buffer(static_cast<size_t>(bytes), 0);
  if (ptrain_status_t status = ptrain_codec_encode(&d, g.data(), residual, state.pointer(), buffer.data()))
    return kernelError(status);
  return unpackCodes(buffer, codeTypes);
}

/// Decodes code tensors into `numel` floats (advancing `state`).
llvm::Expected<std::vector<float>> decode(const ptrain_codec_t &d, llvm::ArrayRef<const Tensor *> codes,
                                          CodecState &state) {
  std::vector<char> buffer = packCodes(codes);
  std::vector<float> out(static_cast<size_t>(d.batch * d.rows * d.cols));
  if (ptrain_status_t status = ptrain_codec_decode(&d, buffer.data(), state.pointer(), out.data()))
    return kernelError(status);
  return out;
}

llvm::SmallVector<const Tensor *> pointers(llvm::ArrayRef<Tensor> tensors) {
  llvm::SmallVector<const Tensor *> out;
  for (const Tensor &t : tensors)
    out.push_back(&t);
  return out;
}
} // namespace

llvm::Expected<ptrain_codec_t> mlir::ptrain::interp::getCodecDescriptor(CodecAttrInterface codec, RankedTensorType type) {
  return descriptorOf(codec, type);
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalCompress(CompressOp op,
                                                                       llvm::function_ref<const Tensor &(Value)> get) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  llvm::Expected<ptrain_codec_t> d = descriptorOf(op.getCodec(), type);
  if (!d)
    return d.takeError();
  const Tensor &input = get(op.getInput());
  std::vector<float> g = toFloats(input), residual;
  size_t next = 0;
  if (op.getErrorFeedback())
    residual = toFloats(get(op.getState()[next++]));
  llvm::SmallVector<const Tensor *> own;
  for (Value v : op.getState().drop_front(next))
    own.push_back(&get(v));
  CodecState state = CodecState::of(*d, own);
  llvm::Expected<std::vector<Tensor>> results = encode(*d, llvm::to_vector(op.getCodes().getTypes()), g,
                                                       op.getErrorFeedback() ? residual.data() : nullptr, state);
  if (!results)
    return results.takeError();
  if (op.getErrorFeedback())
    results->push_back(fromFloats(input.getShape(), residual));
  for (Tensor &t : state.tensors(llvm::to_vector(op.getNewState().drop_front(next).getTypes())))
    results->push_back(std::move(t));
  return results;
}

llvm::Expected<std::vector<Tensor>>
mlir::ptrain::interp::evalDecompress(DecompressOp op, llvm::function_ref<const Tensor &(Value)> get) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  llvm::Expected<ptrain_codec_t> d = descriptorOf(op.getCodec(), type);
  if (!d)
    return d.takeError();
  llvm::SmallVector<const Tensor *> codes, own;
  for (Value v : op.getCodes())
    codes.push_back(&get(v));
  for (Value v : op.getState())
    own.push_back(&get(v));
  CodecState state = CodecState::of(*d, own);
  llvm::Expected<std::vector<float>> out = decode(*d, codes, state);
  if (!out)
    return out.takeError();
  std::vector<Tensor> results{fromFloats(type.getShape(), *out)};
  for (Tensor &t : state.tensors(llvm::to_vector(op.getNewState().getTypes())))
    results.push_back(std::move(t));
  return results;
}

namespace {
/// Data-parallel PowerSGD (Vogels et al., NeurIPS 2019, Algorithm 2) with the runtime's phase kernels.
llvm::Expected<std::vector<std::pair<Tensor, std::vector<Tensor>>>>
powerSgdAllReduce(CompressedAllReduceStartOp op, PowerSGDAttr codec, llvm::ArrayRef<const Tensor *> inputs,
                  llvm::ArrayRef<std::vector<Tensor>> states) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  auto [n, m] = matrixOf(codec, type);
  const int64_t r = codec.getRank(), size = static_cast<int64_t>(inputs.size());
  const bool ef = op.getErrorFeedback(), warm = codec.isWarmStart();
  const bool exact = (n + m) * r >= n * m;
  // Per rank: M (in the residual with error feedback), P and Q codes, the warm-start Q.
  std::vector<std::vector<float>> g(size), e(size), q(size), p(size, std::vector<float>(n * r)),
      qs(size, std::vector<float>(m * r));
  for (int64_t i = 0; i < size; ++i) {
    g[i] = toFloats(*inputs[i]);
    size_t next = 0;
    if (ef)
      e[i] = toFloats(states[i][next++]);
    if (warm)
      q[i] = toFloats(states[i][next++]);
    if (ptrain_status_t status =
            ptrain_powersgd_phase_p_f32(g[i].data(), ef ? e[i].data() : nullptr, warm ? q[i].data() : nullptr, 1, n, m,
                                        r, /*seed=*/0, p[i].data(), qs[i].data()))
      return kernelError(status);
  }
  // The all-reduces: fp32 sums in rank order (the executor's deterministic stand-in for MPI_SUM).
  auto sum = [&](std::vector<std::vector<float>> &parts) {
    std::vector<float> total(parts[0].size(), 0.0f);
    for (const std::vector<float> &part : parts)
      for (size_t j = 0; j < total.size(); ++j)
        total[j] += part[j];
    return total;
  };
  std::vector<float> pSum = sum(p), qSum;
  if (exact) {
    qSum = sum(qs);
  } else {
    for (int64_t i = 0; i < size; ++i) {
      std::vector<float> pi = pSum; // every rank orthogonalizes the same reduced P
      if (ptrain_status_t status =
              ptrain_powersgd_phase_q_f32(ef ? e[i].data() : g[i].data(), 1, n, m, r, pi.data(), qs[i].data()))
        return kernelError(status);
      if (i + 1 == size)
        pSum = pi;
    }
    qSum = sum(qs);
  }
  const float alpha = op.getReduction() == ReductionKind::Avg ? 1.0f / static_cast<float>(size) : 1.0f;
  std::vector<std::pair<Tensor, std::vector<Tensor>>> results;
  for (int64_t i = 0; i < size; ++i) {
    std::vector<float> out(static_cast<size_t>(n * m));
    if (ptrain_status_t status =
            ptrain_powersgd_finish_f32(pSum.data(), qSum.data(), 1, n, m, r, alpha, 1.0f / static_cast<float>(size),
                                       out.data(), ef ? e[i].data() : nullptr, warm && !exact ? q[i].data() : nullptr))
      return kernelError(status);
    std::vector<Tensor> newStates;
    if (ef)
      newStates.push_back(fromFloats(type.getShape(), e[i]));
    if (warm)
      newStates.push_back(fromFloats({m, r}, q[i]));
    results.emplace_back(fromFloats(type.getShape(), out), std::move(newStates));
  }
  return results;
}
} // namespace

llvm::Expected<std::vector<std::pair<Tensor, std::vector<Tensor>>>>
mlir::ptrain::interp::evalCompressedAllReduce(CompressedAllReduceStartOp op, llvm::ArrayRef<const Tensor *> inputs,
                                              llvm::ArrayRef<std::vector<Tensor>> states) {
  if (op.getReduction() != ReductionKind::Sum && op.getReduction() != ReductionKind::Avg)
    return makeError("a compressed all-reduce sums or averages");
  if (auto codec = dyn_cast<PowerSGDAttr>(op.getCodec()))
    return powerSgdAllReduce(op, codec, inputs, states);
  auto type = cast<RankedTensorType>(op.getInput().getType());
  llvm::Expected<ptrain_codec_t> d = descriptorOf(op.getCodec(), type);
  if (!d)
    return d.takeError();
  const size_t size = inputs.size(), numel = static_cast<size_t>(type.getNumElements());
  const bool ef = op.getErrorFeedback();
  const float alpha = op.getReduction() == ReductionKind::Avg ? 1.0f / static_cast<float>(size) : 1.0f;
  // (C8) value_type: top-k's and rand-k's values are sent as 16 bits (the runtime's value_dtype rounds them and
  // keeps the rounding in the residual); their code types are those of the 16-bit tensor.
  RankedTensorType codeTensor = type;
  if (std::optional<Type> values = op.getValueType()) {
    d->value_dtype = values->isF16() ? PTRAIN_DTYPE_F16 : PTRAIN_DTYPE_BF16;
    codeTensor = type.clone(*values);
  }
  SmallVector<Type> codeTypes = op.getCodec().getCodeTypes(codeTensor);
  SmallVector<Type> ownTypes = op.getCodec().getEncoderStateTypes(type);
  // Every member encodes its input (error feedback and codec state are local).
  std::vector<std::vector<float>> residuals(size);
  std::vector<CodecState> own(size);
  std::vector<std::vector<Tensor>> codes(size);
  int64_t counter = 0; // rand-k: the counter the codes used (the same on every member)
  for (size_t i = 0; i < size; ++i) {
    size_t next = 0;
    if (ef)
      residuals[i] = toFloats(states[i][next++]);
    own[i] = CodecState::of(*d, pointers(llvm::ArrayRef(states[i]).drop_front(next)));
    counter = own[i].counter;
    auto code = encode(*d, codeTypes, toFloats(*inputs[i]), ef ? residuals[i].data() : nullptr, own[i]);
    if (!code)
      return code.takeError();
    codes[i] = std::move(*code);
  }
  std::vector<float> out(numel, 0.0f);
  switch (d->kind) {
  case PTRAIN_CODEC_RANDK: {
    // All-reduce of the k values (same positions everywhere), scaled, then decoded. 16-bit values are summed in
    // fp32 in member order (the runtime's all-gather and sum), as f32 ones.
    std::vector<float> values(static_cast<size_t>(d->k), 0.0f);
    for (size_t i = 0; i < size; ++i)
      for (size_t j = 0; j < values.size(); ++j)
        values[j] += static_cast<float>(codes[i][0].floats()[j]);
    for (float &v : values)
      v *= alpha;
    std::vector<double> scaled(values.begin(), values.end());
    Tensor reduced = Tensor::fromFloats(DType::F32, {d->k}, scaled);
    CodecState at;
    at.present = true;
    at.counter = counter;
    ptrain_codec_t sum = *d;
    sum.value_dtype = PTRAIN_DTYPE_F32; // the fp32 sum of the values
    auto decoded = decode(sum, {&reduced}, at);
    if (!decoded)
      return decoded.takeError();
    out = std::move(*decoded);
    break;
  }
  case PTRAIN_CODEC_CAST: {
    // fp32 sums of the 16-bit codes in member order, scaled.
    for (size_t j = 0; j < numel; ++j) {
      float sum = 0.0f;
      for (size_t i = 0; i < size; ++i)
        sum += static_cast<float>(codes[i][0].floats()[j]);
      out[j] = sum * alpha;
    }
    break;
  }
  default: {
    // Top-k and quantization: gathered, decoded and added in member order, then scaled.
    for (size_t i = 0; i < size; ++i) {
      CodecState none;
      auto decoded = decode(*d, pointers(codes[i]), none);
      if (!decoded)
        return decoded.takeError();
      for (size_t j = 0; j < numel; ++j)
        out[j] += (*decoded)[j];
    }
    if (alpha != 1.0f)
      for (float &v : out)
        v *= alpha;
    break;
  }
  }
  std::vector<std::pair<Tensor, std::vector<Tensor>>> results;
  for (size_t i = 0; i < size; ++i) {
    std::vector<Tensor> newStates;
    if (ef)
      newStates.push_back(fromFloats(type.getShape(), residuals[i]));
    for (Tensor &t : own[i].tensors(ownTypes))
      newStates.push_back(std::move(t));
    results.emplace_back(fromFloats(type.getShape(), out), std::move(newStates));
  }
  return results;
}

llvm::Expected<std::vector<std::pair<Tensor, std::vector<Tensor>>>>
mlir::ptrain::interp::evalCompressedReduceScatter(CompressedReduceScatterStartOp op,
                                                  llvm::ArrayRef<const Tensor *> inputs,
                                                  llvm::ArrayRef<std::vector<Tensor>> states) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  auto chunkType = cast<RankedTensorType>(op.getRequest().getType().getValueType());
  llvm::Expected<ptrain_codec_t> d = descriptorOf(op.getCodec(), chunkType);
  if (!d)
    return d.takeError();
  int64_t bytes = 0;
  if (ptrain_status_t status = ptrain_codec_code_bytes(&*d, &bytes))
    return kernelError(status);
  const size_t size = inputs.size(), chunk = static_cast<size_t>(chunkType.getNumElements());
  if (chunk * size != static_cast<size_t>(type.getNumElements()))
    return makeError("a compressed reduce-scatter of " + std::to_string(type.getNumElements()) + " elements over " +
                     std::to_string(size) + " members cannot yield chunks of " + std::to_string(chunk));
  const bool ef = op.getErrorFeedback();
  // Member i's code of chunk j at codes[i][j * bytes] (what its all-to-all sends to member j).
  std::vector<std::vector<char>> codes(size, std::vector<char>(static_cast<size_t>(bytes) * size, 0));
  std::vector<std::vector<float>> residuals(size);
  for (size_t i = 0; i < size; ++i) {
    std::vector<float> g = toFloats(*inputs[i]);
    if (ef)
      residuals[i] = toFloats(states[i][0]);
    for (size_t j = 0; j < size; ++j)
      if (ptrain_status_t status = ptrain_codec_encode(&*d, g.data() + j * chunk,
                                                       ef ? residuals[i].data() + j * chunk : nullptr, nullptr,
                                                       codes[i].data() + j * bytes))
        return kernelError(status);
  }
  // Member j decodes every member's code of its chunk and adds them in member order, then scales.
  const float alpha = op.getReduction() == ReductionKind::Avg ? 1.0f / static_cast<float>(size) : 1.0f;
  std::vector<std::pair<Tensor, std::vector<Tensor>>> results;
  std::vector<float> decoded(chunk);
  for (size_t j = 0; j < size; ++j) {
    std::vector<float> out(chunk, 0.0f);
    for (size_t i = 0; i < size; ++i) {
      if (ptrain_status_t status = ptrain_codec_decode(&*d, codes[i].data() + j * bytes, nullptr, decoded.data()))
        return kernelError(status);
      for (size_t k = 0; k < chunk; ++k)
        out[k] += decoded[k];
    }
    if (alpha != 1.0f)
      for (float &v : out)
        v *= alpha;
    std::vector<Tensor> newStates;
    if (ef)
      newStates.push_back(fromFloats(type.getShape(), residuals[j]));
    results.emplace_back(fromFloats(chunkType.getShape(), out), std::move(newStates));
  }
  return results;
}

//===----------------------------------------------------------------------===//
// PowerSGD phases (--ptrain-expand-codecs)
//===----------------------------------------------------------------------===//

namespace {
/// The (n, m, r) of a phase op's PowerSGD codec on `type`, checking that the kernels can read it.
llvm::Expected<std::array<int64_t, 3>> phaseShape(PowerSGDAttr codec, RankedTensorType type) {
  llvm::Expected<ptrain_codec_t> d = descriptorOf(cast<CodecAttrInterface>(codec), type);
  if (!d)
    return d.takeError();
  auto [n, m] = matrixOf(codec, type);
  return std::array<int64_t, 3>{n, m, codec.getRank()};
}
} // namespace

llvm::Expected<std::vector<Tensor>>
mlir::ptrain::interp::evalPowerSGDPhaseP(PowerSGDPhasePOp op, llvm::function_ref<const Tensor &(Value)> get) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  llvm::Expected<std::array<int64_t, 3>> shape = phaseShape(op.getCodec(), type);
  if (!shape)
    return shape.takeError();
  auto [n, m, r] = *shape;
  std::vector<float> g = toFloats(get(op.getInput()));
  std::vector<float> matrix = op.getResidual() ? toFloats(get(op.getResidual())) : std::vector<float>();
  // Q0 in the q buffer: the warm start (zero columns redrawn), or all zero, so that every column is drawn
  // from the seed as the kernel draws a missing Q0.
  std::vector<float> q = op.getWarmStartQ() ? toFloats(get(op.getWarmStartQ())) : std::vector<float>(m * r, 0.0f);
  std::vector<float> p(static_cast<size_t>(n * r));
  const bool exact = (n + m) * r >= n * m;
  std::vector<float> code(exact ? static_cast<size_t>(m * r) : 0);
  if (ptrain_status_t status =
          ptrain_powersgd_phase_p_f32(g.data(), op.getResidual() ? matrix.data() : nullptr, exact ? nullptr : q.data(),
                                      1, n, m, r, /*seed=*/0, p.data(), exact ? code.data() : q.data()))
    return kernelError(status);
  std::vector<Tensor> results;
  results.push_back(fromFloats(type.getShape(), op.getResidual() ? matrix : g));
  results.push_back(fromFloats({n, r}, p));
  results.push_back(fromFloats({m, r}, exact ? code : q));
  return results;
}

llvm::Expected<std::vector<Tensor>>
mlir::ptrain::interp::evalPowerSGDPhaseQ(PowerSGDPhaseQOp op, llvm::function_ref<const Tensor &(Value)> get) {
  auto type = cast<RankedTensorType>(op.getMatrix().getType());
  llvm::Expected<std::array<int64_t, 3>> shape = phaseShape(op.getCodec(), type);
  if (!shape)
    return shape.takeError();
  auto [n, m, r] = *shape;
  std::vector<float> matrix = toFloats(get(op.getMatrix())), p = toFloats(get(op.getP()));
  std::vector<float> q(static_cast<size_t>(m * r));
  if (ptrain_status_t status = ptrain_powersgd_phase_q_f32(matrix.data(), 1, n, m, r, p.data(), q.data()))
    return kernelError(status);
  std::vector<Tensor> results;
  results.push_back(fromFloats({n, r}, p));
  results.push_back(fromFloats({m, r}, q));
  return results;
}

llvm::Expected<std::vector<Tensor>>
mlir::ptrain::interp::evalPowerSGDFinish(PowerSGDFinishOp op, llvm::function_ref<const Tensor &(Value)> get) {
  auto type = cast<RankedTensorType>(op.getMatrix().getType());
  llvm::Expected<std::array<int64_t, 3>> shape = phaseShape(op.getCodec(), type);
  if (!shape)
    return shape.takeError();
  auto [n, m, r] = *shape;
  std::vector<float> p = toFloats(get(op.getPHat())), q = toFloats(get(op.getQ()));
  std::vector<float> residual = toFloats(get(op.getMatrix())), out(static_cast<size_t>(n * m));
  // The kernel leaves the Q state alone on the exact path: it starts as Q, so the result is Q there.
  std::vector<float> qState = q;
  if (ptrain_status_t status =
          ptrain_powersgd_finish_f32(p.data(), q.data(), 1, n, m, r, op.getAlpha().convertToFloat(),
                                     op.getBeta().convertToFloat(), out.data(), residual.data(), qState.data()))
    return kernelError(status);
  std::vector<Tensor> results;
  results.push_back(fromFloats(type.getShape(), out));
  results.push_back(fromFloats(type.getShape(), residual));
  results.push_back(fromFloats({m, r}, qState));
  return results;
}
