//===- ScheduleTableTest.cpp - A lowered schedule as data and a loop ------===//
//
// writeScheduleTable (include/ptrain/Target/Common/ScheduleTable.h) on
// hand-written chunks in the generated code's form: the micro-batches' equal
// ops share a case and differ only in their rows; a static array that holds a
// field loses `static`; strings that differ are fields; pointers become their
// declarations' expressions and requests slots; a declaration the table cannot
// hold leaves the function to the op-by-op text.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Common/ScheduleTable.h"

#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir::ptrain::target;

namespace {

ChunkDecl arena(int v, int64_t offset) {
  std::string name = "v" + std::to_string(v);
  return {name, "  float *" + name + " = reinterpret_cast<float *>(ptrain_arena_step + " + std::to_string(offset) +
                    ");\n"};
}

/// Micro-batch i of a one-stage pipeline: the token slice, the forward call, a send and its wait.
void addMicroBatch(EmittedFunction &f, int i) {
  int base = 10 * i;
  std::string tokens = "v" + std::to_string(base), out = "v" + std::to_string(base + 1),
              req = "v" + std::to_string(base + 2) + "_request";
  EmittedChunk slice;
  slice.location = "\"step\"";
  slice.header = "  // ptrain.slice\n";
  slice.decls = {{tokens, "  int64_t *" + tokens + " = reinterpret_cast<int64_t *>(ptrain_arena_step + " +
                              std::to_string(1024 + 64 * (i % 2)) + ");\n"}};
  slice.code = "  {\n    static const int64_t dims[2] = {8, 4};\n    static const int64_t offsets[2] = {" +
               std::to_string(2 * i) + ", 0};\n    PTRAIN_STEP_CALL(ptrain_slice(arg0, 8, 2, dims, offsets, " +
               tokens + "));\n  }\n";
  EmittedChunk call;
  call.location = "\"step\"";
  call.header = "  // func.call\n";
  call.decls = {arena(base + 1, 512 * (i % 2))};
  call.code = "  {\n    PTRAIN_STEP_CALL(ptrain_step_forward(" + tokens + ", " + out + "));\n  }\n";
  EmittedChunk send;
  send.location = "\"step\"";
  send.header = "  // ptrain.send_start\n";
  send.decls = {{req, "  ptrain_request_t " + req + " = nullptr;\n"}};
  send.code = "  {\n    PTRAIN_STEP_CALL(ptrain_send_start(comm, " + out + ", 512, 1, " + std::to_string(2 * i) +
              ", &" + req + "));\n  }\n";
  EmittedChunk wait;
  wait.location = "\"step\"";
  wait.header = "  // ptrain.wait\n";
  wait.code = "  {\n    ptrain_request_t request = " + req + ";\n    " + req +
              " = nullptr;\n    PTRAIN_STEP_CALL(ptrain_wait(request, \"the send of tag " + std::to_string(2 * i) +
              "\"));\n  }\n";
  for (EmittedChunk *c : {&slice, &call, &send, &wait})
    f.chunks.push_back(*c);
}

TEST(EmittedScheduleTable, MicroBatchesShareCasesAndDifferInRows) {
  EmittedFunction f;
  f.schedule = true;
  for (int i = 0; i < 4; ++i)
    addMicroBatch(f, i);
  ScheduleTableStats stats;
  std::optional<std::string> body = writeScheduleTable(f, &stats);
  ASSERT_TRUE(body.has_value());
  // 16 ops, 4 distinct; the widest case, the send, has 3 fields (its buffer, its tag and its request slot); the
  // wait's slot is one field though it is written twice (equal columns share one).
  EXPECT_EQ(stats.rows, 16);
  EXPECT_EQ(stats.cases, 4);
  EXPECT_EQ(stats.requests, 4);
  EXPECT_EQ(stats.intFields, 3);
  EXPECT_EQ(stats.textFields, 1);
  EXPECT_EQ(llvm::StringRef(*body).count("\n    case "), 4u);
  // Micro-batch 2's rows: the slice's row offset 4 and buffer 1024; the call's buffers; the send's tag 4, slot 2.
  EXPECT_NE(body->find("{0, {4, 1024}, {nullptr}}, // ptrain.slice"), std::string::npos) << *body;
  EXPECT_NE(body->find("{1, {1024, 0}, {nullptr}}, // func.call ptrain_step_forward"), std::string::npos) << *body;
  EXPECT_NE(body->find("{2, {0, 4, 2}, {nullptr}}, // ptrain.send_start"), std::string::npos) << *body;
  EXPECT_NE(body->find("{3, {2}, {\"the send of tag 4\"}}, // ptrain.wait"), std::string::npos) << *body;
  // The offsets array holds a field: no longer static; the dims array still is.
  EXPECT_NE(body->find("const int64_t offsets[2] = {row.arg[0], 0};"), std::string::npos) << *body;
  EXPECT_EQ(body->find("static const int64_t offsets"), std::string::npos) << *body;
  EXPECT_NE(body->find("static const int64_t dims[2] = {8, 4};"), std::string::npos) << *body;
  // Values are their declarations' expressions, requests slots of one array, null at the start.
  EXPECT_NE(body->find("PTRAIN_STEP_CALL(ptrain_send_start(comm, (reinterpret_cast<float *>(ptrain_arena_step + "
                       "row.arg[0])), 512, 1, row.arg[1], &ptrain_schedule_requests[row.arg[2]]));"),
            std::string::npos)
      << *body;
  EXPECT_NE(body->find("ptrain_request_t ptrain_schedule_requests[4] = {};"), std::string::npos) << *body;
  EXPECT_NE(body->find("PTRAIN_STEP_CALL(ptrain_wait(request, row.text[0]));"), std::string::npos) << *body;
  EXPECT_EQ(body->find("v1"), std::string::npos) << "no value name survives: " << *body;
}

TEST(EmittedScheduleTable, AliasesFoldIntoTheirSource) {
  EmittedFunction f;
  EmittedChunk recv;
  recv.location = "\"step\"";
  recv.header = "  // ptrain.recv_start\n";
  recv.decls = {arena(1, 256), {"v1_request", "  ptrain_request_t v1_request = nullptr;\n"}};
  recv.code = "  {\n    PTRAIN_STEP_CALL(ptrain_recv_start(comm, v1, 512, 0, 1, &v1_request));\n  }\n";
  EmittedChunk wait;
  wait.location = "\"step\"";
  wait.header = "  // ptrain.wait\n";
  wait.decls = {{"v2", "  float *v2 = v1;\n  (void)v2;\n"}};
  wait.code = "  {\n    PTRAIN_STEP_CALL(ptrain_wait(v1_request));\n  }\n";
  EmittedChunk use;
  use.location = "\"step\"";
  use.header = "  // func.return\n";
  use.code = "  {\n    PTRAIN_STEP_CALL(ptrain_copy_bytes(v2, 4, out_0));\n  }\n";
  f.chunks = {recv, wait, use};
  std::optional<std::string> body = writeScheduleTable(f);
  ASSERT_TRUE(body.has_value());
  EXPECT_NE(body->find("ptrain_copy_bytes((reinterpret_cast<float *>(ptrain_arena_step + 256)), 4, out_0)"),
            std::string::npos)
      << *body;
}

TEST(EmittedScheduleTable, UnknownDeclarationsStayInline) {
  // A scalar declared at function scope is no pointer: the table cannot hold it.
  EmittedFunction f;
  addMicroBatch(f, 0);
  EmittedChunk sum;
  sum.location = "\"step\"";
  sum.header = "  // ptrain.sum_squares\n";
  sum.decls = {{"v9", "  double v9 = 0.0;\n"}};
  sum.code = "  {\n    PTRAIN_STEP_CALL(ptrain_sum_squares_f32(v1, 128, &v9));\n  }\n";
  f.chunks.push_back(sum);
  EXPECT_FALSE(writeScheduleTable(f).has_value());
  // A value read without a declaration the table saw.
  EmittedFunction g;
  EmittedChunk use;
  use.location = "\"step\"";
  use.header = "  // func.return\n";
  use.code = "  {\n    PTRAIN_STEP_CALL(ptrain_copy_bytes(v7, 4, out_0));\n  }\n";
  g.chunks = {use};
  EXPECT_FALSE(writeScheduleTable(g).has_value());
  // No op at all.
  EXPECT_FALSE(writeScheduleTable(EmittedFunction()).has_value());
}

} // namespace
