//===- Cluster.cpp - the cluster description of the timing model -*- C++ -*-===//

#include "ptrain/Analysis/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

using namespace mlir::ptrain;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

static Error fieldError(const llvm::Twine &field, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), field + ": " + what);
}

namespace {
/// Reads the fields of one JSON object, tracking which were used so that unknown ones are errors.
class ObjectReader {
public:
  ObjectReader(const json::Object &object, std::string path) : object(object), path(std::move(path)) {}

  std::string field(StringRef name) const { return path.empty() ? name.str() : path + "." + name.str(); }

  Expected<const json::Value *> get(StringRef name, bool optional = false) {
    used.insert(name);
    const json::Value *v = object.get(name);
    if (!v && !optional)
      return fieldError(field(name), "missing");
    return v;
  }
  /// A number > 0 (or >= 0 with `allowZero`).
  Expected<double> positive(StringRef name, bool allowZero = false) {
    auto v = get(name);
    if (!v)
      return v.takeError();
    std::optional<double> d = (*v)->getAsNumber();
    if (!d)
      return fieldError(field(name), "must be a number");
    if (allowZero ? *d < 0 : *d <= 0)
      return fieldError(field(name), allowZero ? "must be >= 0, got " + std::to_string(*d)
                                               : "must be > 0, got " + std::to_string(*d));
    return *d;
  }
  Expected<int64_t> positiveInt(StringRef name) {
    auto v = get(name);
    if (!v)
      return v.takeError();
    std::optional<int64_t> i = (*v)->getAsInteger();
    if (!i || *i < 1)
      return fieldError(field(name), "must be an integer >= 1");
    return *i;
  }
  Expected<std::string> string(StringRef name, bool optional = false, std::string def = "") {
    auto v = get(name, optional);
    if (!v)
      return v.takeError();
    if (!*v)
      return def;
    std::optional<StringRef> s = (*v)->getAsString();
    if (!s)
      return fieldError(field(name), "must be a string");
    return s->str();
  }
  Expected<ObjectReader> object_(StringRef name) {
    auto v = get(name);
    if (!v)
      return v.takeError();
    const json::Object *o = (*v)->getAsObject();
    if (!o)
      return fieldError(field(name), "must be an object");
    return ObjectReader(*o, field(name));
  }
  Error checkNoUnknown() const {
    for (const auto &kv : object)
      if (!used.contains(kv.first))
        return fieldError(field(kv.first), "unknown field");
    return Error::success();
  }

  const json::Object &object;
  std::string path;
  llvm::StringSet<> used;
};
} // namespace

#define TRY(var, expr)                                                                                                 \
  auto var##OrErr = (expr);                                                                                            \
  if (!var##OrErr)                                                                                                     \
    return var##OrErr.takeError();                                                                                     \
  auto var = std::move(*var##OrErr);

/// An error for a field new in schema version `since` in a file of an older `version`; success otherwise.
static Error needsVersion(const std::string &field, int64_t version, int64_t since) {
  if (version >= since)
    return Error::success();
  return fieldError(field, "needs \"version\": " + std::to_string(since) +
                               " at the top of the file (the field is new in schema version " + std::to_string(since) +
                               "; this file is version " + std::to_string(version) + ")");
}
static Error needsVersion2(const std::string &field, int64_t version) { return needsVersion(field, version, 2); }

/// A link object {bandwidth, latency, messages?, duplex_messages?, half_duplex?, cpu_overhead?,
/// eager_limit_bytes?, crossing_slowdown?, all_reduces?, collective_ranks?}; `extra` names further fields allowed
/// (and not read); `version` is the file's schema version (cpu_overhead, eager_limit_bytes and crossing_slowdown
/// need 2, all_reduces and collective_ranks 3).
static Expected<LinkSpec> parseLink(ObjectReader &parent, StringRef name, int64_t version,
                                    llvm::ArrayRef<StringRef> extra = {}) {
  TRY(reader, parent.object_(name));
  for (StringRef field : extra)
    reader.used.insert(field);
  TRY(halfDuplex, reader.get("half_duplex", /*optional=*/true));
  LinkSpec link;
  TRY(bandwidth, reader.positive("bandwidth"));
  TRY(latency, reader.positive("latency", /*allowZero=*/true));
  link.bandwidth = bandwidth;
  link.latency = latency;
  if (halfDuplex) {
    std::optional<bool> b = halfDuplex->getAsBoolean();
    if (!b)
      return fieldError(reader.field("half_duplex"), "must be true or false");
    link.halfDuplex = *b;
  }
  // `messages`, `duplex_messages`: [{bytes, seconds}, ...], bytes integers >= 1 strictly increasing, seconds > 0
  // (one way).
  // `all_reduces` (schema version 3): the same form, the time of a whole all-reduce by each rank's bytes.
  for (auto [name, table] :
       {std::make_pair("messages", &link.messages), std::make_pair("duplex_messages", &link.duplexMessages),
        std::make_pair("all_reduces", &link.allReduces), std::make_pair("all_gathers", &link.allGathers),
        std::make_pair("all_to_alls", &link.allToAlls)}) {
    TRY(messages, reader.get(name, /*optional=*/true));
    if (!messages)
      continue;
    if (table == &link.allReduces || table == &link.allGathers || table == &link.allToAlls)
      if (Error err = needsVersion(reader.field(name), version, table == &link.allToAlls ? 4 : 3))
        return std::move(err);
    const json::Array *array = messages->getAsArray();
    if (!array || array->empty())
      return fieldError(reader.field(name), "must be a non-empty array of {bytes, seconds}");
    for (auto [i, entry] : llvm::enumerate(*array)) {
      std::string path = reader.field(name) + "[" + std::to_string(i) + "]";
      const json::Object *e = entry.getAsObject();
      if (!e)
        return fieldError(path, "must be an object {bytes, seconds}");
      ObjectReader r(*e, path);
      TRY(bytes, r.positiveInt("bytes"));
      TRY(seconds, r.positive("seconds"));
      if (!table->empty() && bytes <= table->back().bytes)
        return fieldError(r.field("bytes"), "must be larger than the previous entry's (" +
                                                std::to_string(static_cast<int64_t>(table->back().bytes)) +
                                                "): sizes strictly increasing");
      if (Error err = r.checkNoUnknown())
        return std::move(err);
      table->push_back({static_cast<double>(bytes), seconds});
    }
  }
  // `collective_ranks` (schema version 3): an integer >= 2, the group size `all_reduces` was measured over;
  // required with the table and only with it.
  TRY(collectiveRanks, reader.get("collective_ranks", /*optional=*/true));
  if (collectiveRanks) {
    if (Error err = needsVersion(reader.field("collective_ranks"), version, 3))
      return std::move(err);
    TRY(ranks, reader.positiveInt("collective_ranks"));
    if (ranks < 2)
      return fieldError(reader.field("collective_ranks"),
                        "must be >= 2 (the ranks the collectives were measured over), got " + std::to_string(ranks));
    if (link.allReduces.empty() && link.allGathers.empty() && link.allToAlls.empty())
      return fieldError(reader.field("collective_ranks"),
                        "given without all_reduces, all_gathers or all_to_alls (the tables it describes)");
    link.collectiveRanks = ranks;
  } else if (!link.allReduces.empty() || !link.allGathers.empty() || !link.allToAlls.empty()) {
    return fieldError(reader.field(!link.allReduces.empty()   ? "all_reduces"
                                   : !link.allGathers.empty() ? "all_gathers"
                                                              : "all_to_alls"),
                      "needs collective_ranks (the number of ranks the collectives were measured over)");
  }
  // `cpu_overhead`: {per_message_s, per_byte_s}, both >= 0 (schema version 2).
  TRY(overhead, reader.get("cpu_overhead", /*optional=*/true));
  if (overhead) {
    if (Error err = needsVersion2(reader.field("cpu_overhead"), version))
      return std::move(err);
    const json::Object *o = overhead->getAsObject();
    if (!o)
      return fieldError(reader.field("cpu_overhead"), "must be an object {per_message_s, per_byte_s}");
    ObjectReader r(*o, reader.field("cpu_overhead"));
    TRY(perMessage, r.positive("per_message_s", /*allowZero=*/true));
    TRY(perByte, r.positive("per_byte_s", /*allowZero=*/true));
    // The fit's samples and method (ptrain-calibrate): provenance, not read by the model.
    r.used.insert("samples");
    r.used.insert("fit");
    if (Error err = r.checkNoUnknown())
      return std::move(err);
    link.overheadPerMessage = perMessage;
    link.overheadPerByte = perByte;
  }
  // `eager_limit_bytes`: an integer >= 1 (schema version 2).
  TRY(eager, reader.get("eager_limit_bytes", /*optional=*/true));
  if (eager) {
    if (Error err = needsVersion2(reader.field("eager_limit_bytes"), version))
      return std::move(err);
    TRY(limit, reader.positiveInt("eager_limit_bytes"));
    link.eagerLimitBytes = static_cast<double>(limit);
  }
  // `crossing_slowdown`: a number >= 1 (schema version 2).
  TRY(crossing, reader.get("crossing_slowdown", /*optional=*/true));
  if (crossing) {
    if (Error err = needsVersion2(reader.field("crossing_slowdown"), version))
      return std::move(err);
    TRY(factor, reader.positive("crossing_slowdown"));
    if (factor < 1)
      return fieldError(reader.field("crossing_slowdown"),
                        "must be >= 1 (the factor by which a transfer slows while one crosses it), got " +
                            std::to_string(factor));
    link.crossingSlowdown = factor;
  }
  if (Error e = reader.checkNoUnknown())
    return std::move(e);
  return link;
}

/// `calibration` (ptrain-calibrate): provenance (free-form object), gemm_flops and memory_bandwidth (> 0), an
/// optional link {bandwidth, latency, messages?, samples?, fit?, round_trips?}, and codecs [{codec, shape,
/// error_feedback, encode_s, decode_s}].
static Expected<std::vector<CodecKernelTime>> parseCalibration(const json::Value &value, int64_t version) {
  const json::Object *o = value.getAsObject();
  if (!o)
    return fieldError("calibration", "must be an object");
  ObjectReader reader(*o, "calibration");
  TRY(provenance, reader.object_("provenance"));
  for (const char *key : {"machine", "cpu_model", "isa", "date", "command"}) {
    TRY(text, provenance.string(key));
    (void)text;
  }
  provenance.used.insert("plan");
  if (Error e = provenance.checkNoUnknown())
    return std::move(e);
  TRY(gemm, reader.positive("gemm_flops"));
  TRY(bandwidth, reader.positive("memory_bandwidth"));
  (void)gemm;
  (void)bandwidth;
  reader.used.insert("gemm_shapes");
  TRY(link, reader.get("link", /*optional=*/true));
  if (link) {
    // The ping-pong's medians before the fit and how they were taken: provenance, not read by the model.
    auto parsed = parseLink(reader, "link", version,
                            {"samples", "duplex_samples", "fit", "round_trips", "eager_limit_source", "crossing_source",
                             "all_reduce_samples", "all_reduce_fit", "all_gather_samples", "all_to_all_samples"});
    if (!parsed)
      return parsed.takeError();
  }
  std::vector<CodecKernelTime> kernels;
  TRY(codecs, reader.get("codecs"));
  const json::Array *array = codecs->getAsArray();
  if (!array)
    return fieldError("calibration.codecs", "must be an array");
  for (auto [i, entry] : llvm::enumerate(*array)) {
    std::string path = "calibration.codecs[" + std::to_string(i) + "]";
    const json::Object *e = entry.getAsObject();
    if (!e)
      return fieldError(path, "must be an object");
    ObjectReader r(*e, path);
    CodecKernelTime k;
    TRY(codec, r.string("codec"));
    k.codec = codec;
    TRY(shape, r.get("shape"));
    const json::Array *dims = shape->getAsArray();
    if (!dims || dims->empty())
      return fieldError(r.field("shape"), "must be a non-empty array of integers >= 1");
    for (const json::Value &d : *dims) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 1)
        return fieldError(r.field("shape"), "must be a non-empty array of integers >= 1");
      k.shape.push_back(*n);
    }
    TRY(ef, r.get("error_feedback"));
    std::optional<bool> b = ef->getAsBoolean();
    if (!b)
      return fieldError(r.field("error_feedback"), "must be true or false");
    k.errorFeedback = *b;
    TRY(encode, r.positive("encode_s"));
    TRY(decode, r.positive("decode_s"));
    k.encodeSeconds = encode;
    k.decodeSeconds = decode;
    if (Error err = r.checkNoUnknown())
      return std::move(err);
    kernels.push_back(std::move(k));
  }
  if (Error e = reader.checkNoUnknown())
    return std::move(e);
  return kernels;
}

Expected<ClusterSpec> mlir::ptrain::parseCluster(const json::Value &value) {
  const json::Object *root = value.getAsObject();
  if (!root)
    return fieldError("cluster", "must be a JSON object");
  ObjectReader reader(*root, "");
  ClusterSpec c;
  reader.used.insert("description");
  reader.used.insert("sources");
  TRY(name, reader.string("name", /*optional=*/true, "cluster"));
  c.name = name;
  // `version` (optional): the schema version, 1 (the default: every file written before the field) to
  // kClusterSchemaVersion.
  TRY(version, reader.get("version", /*optional=*/true));
  if (version) {
    std::optional<int64_t> v = version->getAsInteger();
    if (!v || *v < 1)
      return fieldError("version", "must be an integer >= 1");
    if (*v > kClusterSchemaVersion)
      return fieldError("version", "is " + std::to_string(*v) + ", but this ptrain reads cluster files up to version " +
                                       std::to_string(kClusterSchemaVersion));
    c.version = *v;
  }
  TRY(nodes, reader.positiveInt("nodes"));
  c.nodes = nodes;
  TRY(gpusPerNode, reader.positiveInt("gpus_per_node"));
  c.gpusPerNode = gpusPerNode;

  TRY(gpu, reader.object_("gpu"));
  TRY(gpuName, gpu.string("name", /*optional=*/true, "gpu"));
  c.gpuName = gpuName;
  TRY(peak, gpu.object_("peak_flops"));
  if (peak.object.empty())
    return fieldError(peak.path, "needs at least one dtype (e.g. \"f32\")");
  for (const auto &kv : peak.object) {
    TRY(flops, peak.positive(kv.first));
    c.peakFlops[kv.first.str()] = flops;
  }
  TRY(f32Matmul, gpu.string("f32_matmul_dtype", /*optional=*/true, "f32"));
  c.f32MatmulDtype = f32Matmul;
  if (!c.peakFlops.count(c.f32MatmulDtype))
    return fieldError(gpu.field("f32_matmul_dtype"), "'" + c.f32MatmulDtype + "' is not a key of gpu.peak_flops");
  TRY(memoryBandwidth, gpu.positive("memory_bandwidth"));
  c.memoryBandwidth = memoryBandwidth;
  TRY(memoryCapacity, gpu.positive("memory_capacity"));
  c.memoryCapacity = memoryCapacity;
  TRY(efficiency, gpu.positive("efficiency"));
  if (efficiency > 1)
    return fieldError(gpu.field("efficiency"), "must be in (0, 1], got " + std::to_string(efficiency));
  c.efficiency = efficiency;
  if (Error e = gpu.checkNoUnknown())
    return std::move(e);

  TRY(intra, parseLink(reader, "intra_node", c.version));
  c.intraNode = intra;
  TRY(inter, parseLink(reader, "inter_node", c.version));
  c.interNode = inter;

  TRY(order, reader.get("axis_order", /*optional=*/true));
  if (order) {
    const json::Array *axes = order->getAsArray();
    if (!axes)
      return fieldError("axis_order", "must be an array of grid axis names, innermost first");
    c.axisOrder.clear();
    llvm::StringSet<> seen;
    for (const json::Value &axis : *axes) {
      std::optional<StringRef> s = axis.getAsString();
      if (!s)
        return fieldError("axis_order", "must be an array of grid axis names, innermost first");
      if (!seen.insert(*s).second)
        return fieldError("axis_order", "axis '" + *s + "' appears twice");
      c.axisOrder.push_back(s->str());
    }
  }
  TRY(algorithm, reader.string("all_reduce_algorithm", /*optional=*/true, "ring"));
  if (algorithm != "ring" && algorithm != "binomial")
    return fieldError("all_reduce_algorithm", "must be \"ring\" or \"binomial\", got '" + algorithm + "'");
  c.binomialAllReduce = algorithm == "binomial";
  TRY(calibration, reader.get("calibration", /*optional=*/true));
  if (calibration) {
    auto kernels = parseCalibration(*calibration, c.version);
    if (!kernels)
      return kernels.takeError();
    c.codecKernels = std::move(*kernels);
  }
  if (Error e = reader.checkNoUnknown())
    return std::move(e);
  return c;
}

static Expected<json::Value> readClusterFile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read cluster file '" + path + "': " + buffer.getError().message());
  auto value = json::parse((*buffer)->getBuffer());
  if (!value)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cluster file '" + path + "': " + llvm::toString(value.takeError()));
  return value;
}

Expected<ClusterSpec> mlir::ptrain::loadCluster(StringRef path, json::Value *jsonOut) {
  auto value = readClusterFile(path);
  if (!value)
    return value.takeError();
  auto cluster = parseCluster(*value);
  if (jsonOut)
    *jsonOut = std::move(*value);
  if (!cluster)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cluster file '" + path + "': " + llvm::toString(cluster.takeError()));
  return cluster;
}

Expected<double> ClusterSpec::getPeakFlops(StringRef dtype, bool matmul) const {
  std::string key = matmul && dtype == "f32" ? f32MatmulDtype : dtype.str();
  auto it = peakFlops.find(key);
  if (it == peakFlops.end())
    return fieldError("gpu.peak_flops." + key, "missing (needed for " + dtype + (matmul ? " matmuls)" : " ops)"));
  return it->second;
}

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

Expected<Placement> Placement::create(const ClusterSpec &cluster,
                                      llvm::ArrayRef<std::pair<std::string, int64_t>> axes) {
  Placement p;
  p.gpusPerNode = cluster.gpusPerNode;
  for (const auto &[name, size] : axes) {
    p.names.push_back(name);
    p.sizes.push_back(size);
    p.numRanks *= size;
  }
  if (p.numRanks > cluster.nodes * cluster.gpusPerNode)
    return fieldError("nodes", "the grid needs " + std::to_string(p.numRanks) + " GPUs but the cluster has " +
                                   std::to_string(cluster.nodes) + " x " + std::to_string(cluster.gpusPerNode) + " = " +
                                   std::to_string(cluster.nodes * cluster.gpusPerNode));
  // Innermost first: the axes of axis_order present in the grid, then the others in the grid's order
  // reversed (the grid's last axis varies fastest).
  std::vector<size_t> order;
  for (const std::string &name : cluster.axisOrder)
    for (size_t i = 0; i < p.names.size(); ++i)
      if (p.names[i] == name)
        order.push_back(i);
  for (size_t i = p.names.size(); i-- > 0;)
    if (!llvm::is_contained(order, i))
      order.push_back(i);
  p.strides.assign(p.names.size(), 0);
  int64_t stride = 1;
  for (size_t i : order) {
    p.strides[i] = stride;
    stride *= p.sizes[i];
  }
  return p;
}

int64_t Placement::getAxisSize(StringRef name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return sizes[i];
  return 1;
}

int64_t Placement::getNode(llvm::ArrayRef<int64_t> coords) const {
  int64_t rank = 0;
  for (size_t i = 0; i < coords.size(); ++i)
    rank += coords[i] * strides[i];
  return rank / gpusPerNode;
}

void Placement::forEachRank(llvm::function_ref<void(llvm::ArrayRef<int64_t>)> fn) const {
  std::vector<int64_t> coords(names.size(), 0);
  for (int64_t r = 0; r < numRanks; ++r) {
    fn(coords);
    for (size_t i = coords.size(); i-- > 0;) {
      if (++coords[i] < sizes[i])
        break;
      coords[i] = 0;
    }
  }
}

bool Placement::crossesNodes(llvm::ArrayRef<std::string> axes) const {
  // A group is the set of ranks sharing the coordinates of the other axes: compare each rank's node with the
  // node of its group's first member.
  bool crosses = false;
  forEachRank([&](llvm::ArrayRef<int64_t> coords) {
    std::vector<int64_t> first(coords.begin(), coords.end());
    for (size_t i = 0; i < names.size(); ++i)
      if (llvm::is_contained(axes, names[i]))
        first[i] = 0;
    crosses |= getNode(coords) != getNode(first);
  });
  return crosses;
}

int64_t Placement::getMaxRanksPerNodeWithSame(StringRef axis) const {
  std::map<std::pair<int64_t, int64_t>, int64_t> count; // (node, coordinate) -> ranks
  int64_t axisIndex = -1;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == axis)
      axisIndex = i;
  int64_t best = 0;
  forEachRank([&](llvm::ArrayRef<int64_t> coords) {
    int64_t c = axisIndex < 0 ? 0 : coords[axisIndex];
    best = std::max(best, ++count[{getNode(coords), c}]);
  });
  return best;
}
