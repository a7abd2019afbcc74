//===- OnnxInitTest.cpp - ptrain_state_init_onnx on hand-written models ---===//
//
// The models are written byte by byte in protobuf's wire format (the
// helpers of include/ptrain/Runtime/OnnxWire.h), so each test controls
// exactly what the file holds: embedded raw_data, typed float_data, external
// data at an offset, and a node that is not valid protobuf at all: the loader
// scans only the initializers it needs (protobuf's ParseFromArray of the whole
// model, the loader's former way, rejects that file).
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "ptrain/Runtime/OnnxWire.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace ptrain::testing;
namespace wire = ptrain::onnx_wire;

namespace {

std::string floatBytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
}

void putVarintField(std::string &out, uint64_t number, uint64_t value) {
  wire::putTag(out, number, wire::Varint);
  wire::putVarint(out, value);
}

/// A TensorProto: dims (1), data_type (2), name (8), then `data` fields.
std::string tensor(const std::string &name, const std::vector<int64_t> &dims, uint64_t dataType,
                   const std::string &data) {
  std::string t;
  for (int64_t d : dims)
    putVarintField(t, 1, static_cast<uint64_t>(d));
  putVarintField(t, 2, dataType);
  wire::putBytes(t, 8, name);
  return t + data;
}

std::string rawData(const std::vector<float> &v) {
  std::string f;
  wire::putBytes(f, 9, floatBytes(v));
  return f;
}

/// float_data (4), packed.
std::string floatData(const std::vector<float> &v) {
  std::string f;
  wire::putBytes(f, 4, floatBytes(v));
  return f;
}

std::string externalData(const std::string &location, int64_t offset, int64_t length) {
  std::string f;
  for (auto [key, value] : {std::pair<std::string, std::string>{"location", location},
                            {"offset", std::to_string(offset)},
                            {"length", std::to_string(length)}}) {
    std::string entry;
    wire::putBytes(entry, 1, key);
    wire::putBytes(entry, 2, value);
    wire::putBytes(f, 13, entry);
  }
  putVarintField(f, 14, 1);
  return f;
}

/// ModelProto {ir_version 8, graph {node <not protobuf>, initializers}}.
std::string model(const std::vector<std::string> &initializers) {
  std::string graph;
  wire::putBytes(graph, 1, std::string("\xff\xff", 2)); // a truncated tag
  for (const std::string &t : initializers)
    wire::putBytes(graph, 5, t);
  std::string m;
  putVarintField(m, 1, 8);
  wire::putBytes(m, 7, graph);
  return m;
}

std::string writeFile(const std::string &name, const std::string &bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const std::vector<float> kW = {1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 7.0f};
const std::vector<float> kB = {0.125f, 0.25f, 0.5f, 1.0f};
const std::vector<float> kE = {9.0f, 8.0f, 7.0f};

/// w [2, 3] embedded raw_data, b [4] float_data, e [3] at offset 8 of
/// `dataFile`, plus an unused initializer.
std::string writeModel(const std::string &name, const std::string &dataFile) {
  writeFile(dataFile, std::string(8, 'x') + floatBytes(kE));
  return writeFile(name,
                   model({tensor("unused", {1}, 1, rawData({42.0f})), tensor("w", {2, 3}, 1, rawData(kW)),
                          tensor("b", {4}, 1, floatData(kB)), tensor("e", {3}, 1, externalData(dataFile, 8, 12))}));
}

struct States {
  std::vector<float> w = std::vector<float>(6, -1.0f);
  std::vector<float> b = std::vector<float>(4, -1.0f);
  std::vector<float> e = std::vector<float>(3, -1.0f);
  std::vector<float> m = std::vector<float>(6, -1.0f);
  int64_t wDims[2] = {2, 3}, bDims[1] = {4}, eDims[1] = {3};
  std::vector<ptrain_state_desc_t> desc() {
    return {
        {"w", w.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, wDims},
        {"b", b.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 1, bDims},
        {"e", e.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 1, eDims},
        {"w/adam_m", m.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, wDims},
    };
  }
};

TEST(OnnxInit, ReadsEmbeddedTypedAndExternalDataWithoutParsingNodes) {
  const std::string path = writeModel("ptrain_onnx_init_good.onnx", "ptrain_onnx_init_good.bin");
  States s;
  auto d = s.desc();
  ASSERT_PTRAIN_OK(ptrain_state_init_onnx(d.data(), d.size(), path.c_str()));
  EXPECT_EQ(s.w, kW) << "embedded raw_data, copied from the mapping";
  EXPECT_EQ(s.b, kB) << "typed float_data";
  EXPECT_EQ(s.e, kE) << "external data at offset 8";
  EXPECT_EQ(s.m, std::vector<float>(6, 0.0f)) << "non-parameters start at 0";
}

TEST(OnnxInit, ScannerRecordsWhereTheRawDataLies) {
  const std::string bytes = model({tensor("w", {2, 3}, 1, rawData(kW))});
  std::vector<wire::InitializerRecord> records;
  std::string error;
  ASSERT_TRUE(wire::scanInitializers(bytes, records, error)) << error;
  ASSERT_EQ(records.size(), 1u);
  const wire::InitializerRecord &r = records[0];
  EXPECT_EQ(r.name, "w");
  EXPECT_EQ(r.dataType, 1u);
  ASSERT_TRUE(r.hasRawData);
  EXPECT_FALSE(r.external);
  EXPECT_EQ(bytes.substr(r.rawPayload, r.rawEnd - r.rawPayload), floatBytes(kW))
      << "the offsets point at the very bytes written";
  EXPECT_EQ(wire::withoutRawData(bytes, r), tensor("w", {2, 3}, 1, std::string()));
}

TEST(OnnxInit, FileSourceScansLikeMemoryWithoutMappingTheFile) {
  // More than one 64 KiB pread window, so the scan crosses window boundaries.
  const std::vector<float> big(40000, 0.5f);
  const std::string bytes = model({tensor("big", {40000}, 1, rawData(big)), tensor("w", {2, 3}, 1, rawData(kW)),
                                   tensor("b", {4}, 1, floatData(kB))});
  const std::string path = writeFile("ptrain_onnx_wire_file.onnx", bytes);
  std::vector<wire::InitializerRecord> inMemory, fromFile;
  std::string error;
  ASSERT_TRUE(wire::scanInitializers(bytes, inMemory, error)) << error;
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const wire::ByteSource source = wire::ByteSource::file(fd, bytes.size());
  ASSERT_TRUE(wire::scanInitializers(source, fromFile, error)) << error;
  ASSERT_EQ(fromFile.size(), 3u);
  for (size_t i = 0; i < fromFile.size(); ++i) {
    EXPECT_EQ(fromFile[i].name, inMemory[i].name);
    EXPECT_EQ(fromFile[i].rawPayload, inMemory[i].rawPayload);
    EXPECT_EQ(fromFile[i].rawEnd, inMemory[i].rawEnd);
    EXPECT_EQ(wire::withoutRawData(source, fromFile[i]), wire::withoutRawData(bytes, inMemory[i]));
  }
  EXPECT_EQ(source.copy(fromFile[1].rawPayload, fromFile[1].rawEnd), floatBytes(kW));
  EXPECT_FALSE(source.failed());
  // A size past the end of the file: the read fails and the scan says so.
  const wire::ByteSource longer = wire::ByteSource::file(fd, bytes.size() + 100000);
  std::vector<wire::InitializerRecord> none;
  EXPECT_FALSE(wire::scanInitializers(longer, none, error));
  close(fd);
}

TEST(OnnxInit, ErrorsNameTheFileTheTensorAndTheByteAndModifyNothing) {
  const std::string good = writeModel("ptrain_onnx_init_err.onnx", "ptrain_onnx_init_err.bin");
  States s;
  auto d = s.desc();

  // Truncated in the middle of an initializer: the byte offset and message.
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = writeFile("ptrain_onnx_init_cut.onnx", bytes.substr(0, 40));
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), cut.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "not a valid ONNX model: the ModelProto at byte 2 has "
                                             "field 7 of"),
            nullptr)
      << ptrain_last_error();

  // raw_data of the wrong size.
  const std::string shortRaw = writeFile("ptrain_onnx_init_short.onnx",
                                         model({tensor("w", {2, 3}, 1, rawData({1.0f, 2.0f, 3.0f, 4.0f, 5.0f}))}));
  d.resize(1);
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), shortRaw.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "initializer 'w' holds 20 bytes, its shape needs 24"), nullptr)
      << ptrain_last_error();

  // A missing external data file is named; nothing was written.
  const std::string missing = writeFile("ptrain_onnx_init_missing.onnx",
                                        model({tensor("w", {2, 3}, 1, rawData(kW)), tensor("b", {4}, 1, floatData(kB)),
                                               tensor("e", {3}, 1, externalData("no_such_file.bin", 0, 12))}));
  d = s.desc();
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), missing.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "no_such_file.bin: cannot open"), nullptr) << ptrain_last_error();
  EXPECT_EQ(s.w, std::vector<float>(6, -1.0f)) << "nothing is modified on error";
  EXPECT_EQ(s.m, std::vector<float>(6, -1.0f));
}

TEST(OnnxInit, ExternalDataOutsideTheModelFolderIsRefused) {
  // The data file exists one folder up: a '..' location would read it (or any file, e.g. /etc/passwd's
  // bytes as weights); ONNX's locations stay inside the model's folder, as onnx::checker requires.
  const std::string folder = ::testing::TempDir() + "ptrain_onnx_init_sub";
  ASSERT_TRUE(::mkdir(folder.c_str(), 0755) == 0 || errno == EEXIST);
  writeFile("ptrain_onnx_init_up.bin", floatBytes(kE));
  for (const std::string location : {"../ptrain_onnx_init_up.bin", "./../ptrain_onnx_init_up.bin", ".."}) {
    const std::string path =
        writeFile("ptrain_onnx_init_sub/up.onnx", model({tensor("e", {3}, 1, externalData(location, 0, 12))}));
    States s;
    auto d = s.desc();
    d = {d[2]};
    EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), path.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT) << location;
    EXPECT_NE(
        std::strstr(
            ptrain_last_error(),
            ("initializer 'e' has the external data location '" + location + "', outside the model's folder").c_str()),
        nullptr)
        << ptrain_last_error();
    EXPECT_EQ(s.e, std::vector<float>(3, -1.0f)) << "nothing is modified on error";
  }
  // A '..' inside a name is no parent folder.
  writeFile("ptrain_onnx_init_sub/a..b.bin", floatBytes(kE));
  const std::string dots =
      writeFile("ptrain_onnx_init_sub/dots.onnx", model({tensor("e", {3}, 1, externalData("a..b.bin", 0, 12))}));
  States s;
  auto d = s.desc();
  d = {d[2]};
  ASSERT_EQ(ptrain_state_init_onnx(d.data(), d.size(), dots.c_str()), PTRAIN_OK) << ptrain_last_error();
  EXPECT_EQ(s.e, kE);
}

// A parameter the model lacks takes its default when it names one (the linear autoencoder's encoder and
// decoder: PTRAIN_STATE_INIT_ORTHOGONAL with one seed, ptrain/Runtime/StateInit.h); a parameter the model holds
// keeps the model's value even with a default; a missing one without a default is the error naming the file and
// key, and a default on a state it cannot serve is an error; on every error no state is modified.
TEST(OnnxInit, ParametersTheModelLacksTakeTheirDefaultOthersAreStillErrors) {
  const std::string path = writeFile("ptrain_onnx_init_defaults.onnx", model({tensor("w", {2, 3}, 1, rawData(kW))}));
  std::vector<float> w(6, -1.0f), enc(8 * 3, -1.0f), dec(3 * 8, -1.0f), m(8 * 3, -1.0f);
  int64_t wDims[2] = {2, 3}, encDims[2] = {8, 3}, decDims[2] = {3, 8};
  std::vector<ptrain_state_desc_t> d = {
      {"w", w.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, wDims, PTRAIN_STATE_INIT_ORTHOGONAL, 1},
      {"ae/0->1/encoder", enc.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, encDims,
       PTRAIN_STATE_INIT_ORTHOGONAL, 5},
      {"ae/0->1/decoder", dec.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, decDims,
       PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED, 5},
      {"ae/0->1/encoder/adam_m", m.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, encDims},
  };
  ASSERT_PTRAIN_OK(ptrain_state_init_onnx(d.data(), d.size(), path.c_str()));
  EXPECT_EQ(w, kW) << "the model's value wins over a default";
  EXPECT_EQ(m, std::vector<float>(24, 0.0f));
  double gram[3][3] = {};
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(enc[i * 3 + j], dec[j * 8 + i]) << "one seed: the decoder is the encoder's transpose";
      for (int64_t k = 0; k < 3; ++k)
        gram[j][k] += static_cast<double>(enc[i * 3 + j]) * enc[i * 3 + k];
    }
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t k = 0; k < 3; ++k)
      EXPECT_NEAR(gram[j][k], j == k ? 1.0 : 0.0, 1e-6) << "orthonormal columns";
  // Another rank (a dp replica) initializing the same table gets the same bits.
  std::vector<float> again(24, 0.0f);
  std::vector<ptrain_state_desc_t> replica = {d[1]};
  replica[0].data = again.data();
  ASSERT_PTRAIN_OK(ptrain_state_init_onnx(replica.data(), replica.size(), path.c_str()));
  EXPECT_EQ(again, enc);
  // Square (dim = hidden): the transposed init makes the decoder the encoder's transpose, not its copy.
  std::vector<float> sqEnc(16), sqDec(16);
  int64_t sqDims[2] = {4, 4};
  std::vector<ptrain_state_desc_t> square = {{"ae/sq/encoder", sqEnc.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER,
                                              2, sqDims, PTRAIN_STATE_INIT_ORTHOGONAL, 2},
                                             {"ae/sq/decoder", sqDec.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER,
                                              2, sqDims, PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED, 2}};
  ASSERT_PTRAIN_OK(ptrain_state_init_onnx(square.data(), square.size(), path.c_str()));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(sqEnc[i * 4 + j], sqDec[j * 4 + i]);
  EXPECT_NE(sqEnc, sqDec);

  // No default: the error of before, and nothing written.
  const std::vector<float> before = enc;
  d[2].init = PTRAIN_STATE_INIT_NONE;
  std::fill(dec.begin(), dec.end(), -1.0f);
  EXPECT_EQ(ptrain_state_init_onnx(d.data(), d.size(), path.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "ptrain_onnx_init_defaults.onnx: no initializer named 'ae/0->1/decoder' "
                                             "for parameter state 'ae/0->1/decoder'"),
            nullptr)
      << ptrain_last_error();
  EXPECT_EQ(dec, std::vector<float>(24, -1.0f));
  EXPECT_EQ(enc, before);
  // A default that does not fit the state (a rank-1 tensor), and an unknown default.
  int64_t oneDim[1] = {24};
  std::vector<ptrain_state_desc_t> bad = {
      {"b", dec.data(), PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 1, oneDim, PTRAIN_STATE_INIT_ORTHOGONAL, 0}};
  EXPECT_EQ(ptrain_state_init_onnx(bad.data(), bad.size(), path.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "parameter state 'b' is not in the model and its orthogonal init needs "
                                             "a rank-2 f32 state, got rank 1"),
            nullptr)
      << ptrain_last_error();
  bad[0].init = 9;
  EXPECT_EQ(ptrain_state_init_onnx(bad.data(), bad.size(), path.c_str()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "has an unknown init 9"), nullptr) << ptrain_last_error();
  EXPECT_EQ(dec, std::vector<float>(24, -1.0f));
}

} // namespace
