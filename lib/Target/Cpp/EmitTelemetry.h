//===- EmitTelemetry.h - Codec telemetry through a CallWriter ---*- C++ -*-===//
//
// The CPU target's entry to the codec telemetry both targets write
// (Common/CodecTelemetry.h; docs/CodegenCpu.md, "Codec telemetry"): the
// record call after a ptrain.compress, written through the op emitters'
// CallWriter.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITTELEMETRY_H
#define PTRAIN_TARGET_CPP_EMITTELEMETRY_H

#include "EmitCodecs.h"

#include "Common/CodecTelemetry.h"

namespace mlir::ptrain::cpp {

/// emitCompressTelemetry (Common/CodecTelemetry.h) on the CallWriter's pointers and lines.
inline void emitCompressTelemetry(CompressOp op, const target::CodecSites &sites, CallWriter &w) {
  target::emitCompressTelemetry(
      op, sites, [&](Value v) { return w.ptr(v); }, [&](const std::string &code) { w.line(code); });
}

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITTELEMETRY_H
