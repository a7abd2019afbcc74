//===- BlockOutlinerTest.cpp - Repeated op blocks emitted once ------------===//
//
// outlineRepeatedBlocks (include/ptrain/Target/Common/BlockOutliner.h) on
// hand-written chunks in the generated code's form: identical layers become
// one function and a call per layer with its own row; what differs in shape
// stays inline; live-outs are declared again after the call.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Common/BlockOutliner.h"

#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir::ptrain::target;

namespace {

std::string globalType(llvm::StringRef name) {
  if (name == "ptrain_arena")
    return "unsigned char *";
  if (name.starts_with("state_"))
    return "float *";
  return "";
}

/// One "layer": a state read, a matmul into the arena and a GELU, reading `in` and writing v<out>.
void addLayer(EmittedFunction &f, int layer, const std::string &in, int out, int64_t offset) {
  const std::string w = "v" + std::to_string(100 + layer), h = "v" + std::to_string(200 + layer),
                    o = "v" + std::to_string(out);
  const std::string state = "state_" + std::to_string(layer) + "_w";
  auto arena = [](const std::string &v, int64_t off) {
    return ChunkDecl{v, "  float *" + v + " = reinterpret_cast<float *>(ptrain_arena + " + std::to_string(off) +
                            ");\n"};
  };
  EmittedChunk mm;
  mm.location = "layer " + std::to_string(layer) + " matmul";
  mm.header = "  // ptrain.matmul\n";
  mm.decls = {{w, "  float *" + w + " = " + state + ";\n"}, arena(h, offset)};
  mm.code = "  {\n    static const int64_t a_dims[2] = {4, 8};\n    PTRAIN_STEP_CALL(ptrain_matmul_f32(" + in + ", " +
            w + ", a_dims, 8, " + h + "));\n  }\n";
  EmittedChunk act;
  act.location = "layer " + std::to_string(layer) + " gelu";
  act.header = "  // ptrain.gelu\n";
  act.decls = {arena(o, offset + 4096)};
  act.code = "  {\n    PTRAIN_STEP_CALL(ptrain_gelu_f32(" + h + ", 32, " + o + "));\n  }\n";
  f.chunks.push_back(mm);
  f.chunks.push_back(act);
  for (const std::string &v : {w, h, o})
    f.types[v] = "float *";
}

/// The function's return: a copy of the last layer's output v303 into out_0 (read after the layers).
void addReturn(EmittedFunction &f) {
  EmittedChunk ret;
  ret.location = "return";
  ret.header = "  // func.return\n";
  ret.code = "  {\n    PTRAIN_STEP_CALL(ptrain_copy_bytes(v303, 128, out_0));\n  }\n";
  f.chunks.push_back(ret);
}

OutlineOptions options() {
  OutlineOptions o;
  o.minChunks = 2;
  o.minSavedBytes = 1;
  return o;
}

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(BlockOutlinerTest, IdenticalLayersBecomeOneFunctionAndCalls) {
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  std::string in = "arg0";
  for (int l = 0; l < 4; ++l) {
    addLayer(f, l, in, 300 + l, 8192 * l);
    in = "v" + std::to_string(300 + l);
  }
  addReturn(f);
  auto types = globalType;
  OutlineOptions opt = options();
  opt.globalType = types;
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.numBlocks, 1);
  // The first layer reads the argument, the others the previous layer's output (an arena pointer computed
  // from the row): all four share the shape once the live-in is abstracted.
  EXPECT_GE(r.numOccurrences, 3);
  EXPECT_EQ(count(r.definitions, "ptrain_matmul_f32("), 1);
  EXPECT_EQ(count(r.bodies[0], "ptrain_matmul_f32("), 4 - r.numOccurrences);
  EXPECT_EQ(count(r.bodies[0], "PTRAIN_STEP_FORWARD(ptrain_block_0("), r.numOccurrences);
  // Each layer's state pointer differs: passed by reference (no table entry given).
  EXPECT_NE(r.definitions.find("decltype(state_"), std::string::npos);
  // The arena offsets differ: a row table, one row per call.
  EXPECT_NE(r.definitions.find("kptrain_block_0_rows[" + std::to_string(r.numOccurrences) + "]"),
            std::string::npos);
  // The static dims are equal in every layer: they stay literal.
  EXPECT_NE(r.definitions.find("a_dims[2] = {4, 8}"), std::string::npos);
  // The last layer's output is read after the call: declared again at the call site.
  EXPECT_NE(r.bodies[0].find("float *v303 = reinterpret_cast<float *>(ptrain_arena + 28672);"), std::string::npos);
}

TEST(BlockOutlinerTest, LiveInsMatchUpToConst) {
  // The first layer reads the function's const argument, the others the previous layer's arena pointer (not
  // const): one block for all four, whose input parameter is const (the same body compiled with it const in the
  // first occurrence, so it only reads it), called with the argument and with the arena pointers.
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  std::string in = "arg0";
  for (int l = 0; l < 4; ++l) {
    addLayer(f, l, in, 300 + l, 8192 * l);
    f.types["v" + std::to_string(300 + l)] = "float *";
    in = "v" + std::to_string(300 + l);
  }
  addReturn(f);
  OutlineOptions opt = options();
  opt.globalType = globalType;
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  EXPECT_EQ(r.numBlocks, 1);
  EXPECT_EQ(r.numOccurrences, 4);
  EXPECT_EQ(count(r.bodies[0], "ptrain_matmul_f32("), 0);
  EXPECT_NE(r.definitions.find("ptrain_block_0(const int64_t *row, const float *x"), std::string::npos)
      << r.definitions;
  EXPECT_NE(r.bodies[0].find("ptrain_block_0(kptrain_block_0_rows[0], arg0"), std::string::npos) << r.bodies[0];
  // The other layers' inputs are pointers into the arena: passed as their expressions, not declared first.
  EXPECT_NE(r.bodies[0].find("ptrain_block_0(kptrain_block_0_rows[1], reinterpret_cast<float *>(ptrain_arena + 4096)"),
            std::string::npos)
      << r.bodies[0];
  EXPECT_EQ(r.bodies[0].find("float *v300 ="), std::string::npos) << r.bodies[0];
  // The last layer's output is read by the copy after the calls: declared.
  EXPECT_NE(r.bodies[0].find("float *v303 = reinterpret_cast<float *>(ptrain_arena + 28672);"), std::string::npos);
}

TEST(BlockOutlinerTest, AliasesOfArgumentsPassTheArgument) {
  // Each layer reads an alias (a reshape used in place) of the previous layer's output, the first an alias of
  // the argument: the calls pass the aliased expression or argument, and no alias is declared in the caller.
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  std::string in = "arg0";
  for (int l = 0; l < 4; ++l) {
    const std::string alias = "v" + std::to_string(400 + l);
    EmittedChunk reshape;
    reshape.location = "layer " + std::to_string(l) + " reshape";
    reshape.header = "  // ptrain.reshape\n";
    const std::string type = l == 0 ? "const float *" : "float *";
    reshape.decls = {{alias, "  " + type + alias + " = " + in + ";\n  (void)" + alias + ";\n"}};
    f.chunks.push_back(reshape);
    f.types[alias] = type;
    addLayer(f, l, alias, 300 + l, 8192 * l);
    in = "v" + std::to_string(300 + l);
  }
  addReturn(f);
  OutlineOptions opt = options();
  opt.globalType = globalType;
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  EXPECT_EQ(r.numBlocks, 1);
  EXPECT_EQ(r.numOccurrences, 4);
  EXPECT_NE(r.bodies[0].find("ptrain_block_0(kptrain_block_0_rows[0], arg0"), std::string::npos) << r.bodies[0];
  EXPECT_NE(r.bodies[0].find("ptrain_block_0(kptrain_block_0_rows[2], reinterpret_cast<float *>(ptrain_arena + 12288)"),
            std::string::npos)
      << r.bodies[0];
  EXPECT_EQ(r.bodies[0].find("(void)v40"), std::string::npos) << r.bodies[0];
}

TEST(BlockOutlinerTest, AliasesOfArenaPointersGoThroughTheRow) {
  // Every layer reads an alias (a reshape used in place) of a buffer an earlier chunk wrote (as a layer's
  // backward reads its forward's saved layer-norm statistics): the alias is that arena pointer, computed in the
  // block from an offset in its row, so no call passes it (a call costs the same whatever the block reads).
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  EmittedChunk saved;
  saved.location = "forward";
  saved.header = "  // ptrain.layer_norm\n";
  for (int l = 0; l < 4; ++l) {
    const std::string root = "v" + std::to_string(500 + l), alias = "v" + std::to_string(400 + l);
    saved.decls.push_back({root, "  float *" + root + " = reinterpret_cast<float *>(ptrain_arena + " +
                                     std::to_string(65536 + 1024 * l) + ");\n"});
    saved.decls.push_back({alias, "  float *" + alias + " = " + root + ";\n  (void)" + alias + ";\n"});
    saved.code += "  PTRAIN_STEP_CALL(ptrain_fill_f32(arg0, 32, " + root + "));\n";
    f.types[root] = f.types[alias] = "float *";
  }
  f.chunks.push_back(saved);
  for (int l = 0; l < 4; ++l)
    addLayer(f, l, "v" + std::to_string(400 + l), 300 + l, 8192 * l);
  addReturn(f);
  OutlineOptions opt = options();
  opt.globalType = globalType;
  opt.tableEntry = [](llvm::StringRef name) -> std::pair<std::string, int64_t> {
    if (!name.starts_with("state_"))
      return {"", -1};
    return {"static_cast<float *>(kStates[#].data)", 10 + (name[6] - '0')};
  };
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  EXPECT_EQ(r.numBlocks, 1);
  EXPECT_EQ(r.numOccurrences, 4);
  for (int l = 0; l < 4; ++l)
    EXPECT_NE(r.bodies[0].find("ptrain_block_0(kptrain_block_0_rows[" + std::to_string(l) + "]));"),
              std::string::npos)
        << r.bodies[0];
  // The offsets are the aliased buffers': in the rows, read in the block's prologue.
  EXPECT_NE(r.definitions.find("65536"), std::string::npos) << r.definitions;
  EXPECT_NE(r.definitions.find("68608"), std::string::npos) << r.definitions;
  EXPECT_NE(r.definitions.find("reinterpret_cast<float *>(ptrain_arena + row["), std::string::npos)
      << r.definitions;
  EXPECT_EQ(r.definitions.find("(const int64_t *row, "), std::string::npos) << r.definitions;
  // Nothing reads the aliases or the saved buffers' pointers after the calls: not declared in the caller.
  EXPECT_EQ(r.bodies[0].find("float *v400 ="), std::string::npos) << r.bodies[0];
}

TEST(BlockOutlinerTest, TableEntriesReplaceGlobalParameters) {
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  std::string in = "arg0";
  for (int l = 0; l < 5; ++l) {
    addLayer(f, l, in, 300 + l, 8192 * l);
    in = "v" + std::to_string(300 + l);
  }
  auto types = globalType;
  auto entry = [](llvm::StringRef name) -> std::pair<std::string, int64_t> {
    if (!name.starts_with("state_"))
      return {"", -1};
    return {"static_cast<float *>(kStates[#].data)", 10 + (name[6] - '0')};
  };
  OutlineOptions opt = options();
  opt.globalType = types;
  opt.tableEntry = entry;
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  EXPECT_EQ(r.numBlocks, 1);
  EXPECT_EQ(r.definitions.find("decltype("), std::string::npos);
  EXPECT_NE(r.definitions.find("static_cast<float *>(kStates[row["), std::string::npos);
}

TEST(BlockOutlinerTest, DifferentShapesStayInline) {
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  addLayer(f, 0, "arg0", 300, 0);
  addLayer(f, 1, "v300", 301, 8192);
  // A different static shape in the second layer: not the same block.
  size_t at = f.chunks[2].code.find("{4, 8}");
  f.chunks[2].code.replace(at, 6, "{4, 9}");
  auto types = globalType;
  OutlineOptions opt = options();
  opt.globalType = types;
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  EXPECT_EQ(r.numBlocks, 0);
  EXPECT_TRUE(r.definitions.empty());
  EXPECT_EQ(count(r.bodies[0], "ptrain_matmul_f32("), 2);
}

TEST(BlockOutlinerTest, DisabledWritesTheChunksAsTheyAre) {
  EmittedFunction f;
  f.types["arg0"] = "const float *";
  addLayer(f, 0, "arg0", 300, 0);
  addLayer(f, 1, "v300", 301, 8192);
  auto types = globalType;
  OutlineOptions opt = options();
  opt.globalType = types;
  OutlineResult r = outlineRepeatedBlocks({f}, opt, /*enabled=*/false);
  EXPECT_EQ(r.numBlocks, 0);
  std::string expected;
  for (const EmittedChunk &c : f.chunks) {
    expected += "\n  // " + c.location + "\n" + c.header;
    for (const ChunkDecl &d : c.decls)
      expected += d.text;
    expected += c.code;
  }
  EXPECT_EQ(r.bodies[0], expected);
}

TEST(BlockOutlinerTest, RequestsNeverCrossABlock) {
  // A request started in each "layer" and waited in the next: no block may cut it.
  EmittedFunction f;
  for (int l = 0; l < 3; ++l) {
    EmittedChunk start, wait;
    const std::string r = "v" + std::to_string(10 + l) + "_request";
    start.location = "start";
    start.header = "  // ptrain.all_reduce_start\n";
    start.decls = {{r, "  ptrain_request_t " + r + " = nullptr;\n"}};
    start.code = "  {\n    static const int64_t dims[4] = {1, 2, 3, 4};\n    static const int64_t more[4] = {5, 6, 7, 8};\n"
                 "    PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm, dims, more, 64, &" + r + "));\n  }\n";
    wait.location = "wait";
    wait.header = "  // ptrain.wait\n";
    wait.code = "  {\n    PTRAIN_STEP_CALL(ptrain_wait(&" + r + "));\n  }\n";
    f.chunks.push_back(start);
    f.chunks.push_back(wait);
  }
  OutlineOptions opt = options();
  OutlineResult r = outlineRepeatedBlocks({f}, opt);
  // The pairs (start, wait) are outlined; a block never holds a start without its wait.
  EXPECT_EQ(r.numBlocks, 1);
  EXPECT_EQ(r.numOccurrences, 3);
  for (size_t at = r.definitions.find("ptrain_all_reduce_start"); at != std::string::npos;
       at = r.definitions.find("ptrain_all_reduce_start", at + 1))
    EXPECT_NE(r.definitions.find("ptrain_wait", at), std::string::npos);
}

} // namespace
