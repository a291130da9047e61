#include "arch/hw_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "arch/technology_nodes.hpp"
#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"
#include "support/presets.hpp"

namespace npusim {

const char* to_string(MemoryModel model) { return model == MemoryModel::kDram ? "dram" : "simple"; }
const char* to_string(MemoryFidelity fidelity) {
  return fidelity == MemoryFidelity::kBulk ? "bulk" : "command";
}

const char* to_string(Topology topology) {
  return topology == Topology::kCrossbar ? "crossbar" : "ring";
}

uint64_t HwConfig::memory_latency_cycles() const {
  return static_cast<uint64_t>(std::ceil(memory.latency_ns / cycle_time_ns() - 1e-9));
}

// PCI-SIG, PCI Express Base Specification revisions 3.0, 4.0 and 5.0: 8, 16 and 32 GT/s per lane,
// each direction, with 128b/130b encoding, so 8 * 128 / 130 / 8 = 0.985 GB/s per lane for 3.0,
// doubling per generation (packet headers and flow control not counted).
double pcie_lane_gbps(int generation) {
  const double gt_per_s = generation == 5 ? 32.0 : generation == 4 ? 16.0 : 8.0;
  return gt_per_s * 128.0 / 130.0 / 8.0;
}

namespace {

BufferConfig read_buffer(ObjectReader& parent, const std::string& key, const BufferConfig& fallback,
                         uint64_t min_bytes) {
  ObjectReader r = parent.object(key);
  BufferConfig b;
  b.capacity_bytes = static_cast<uint64_t>(
      r.integer("capacity_bytes", static_cast<int64_t>(fallback.capacity_bytes),
                static_cast<int64_t>(min_bytes), int64_t{1} << 40));
  b.banks = static_cast<int>(r.integer("banks", fallback.banks, 1, 1024));
  if (b.capacity_bytes % static_cast<uint64_t>(b.banks) != 0) {
    r.diagnostics().error(r.pointer_of("banks"),
                          fmt::format("capacity_bytes ({}) must be a multiple of banks ({})",
                                      b.capacity_bytes, b.banks));
  }
  r.finish();
  return b;
}

DataType read_type(ObjectReader& r, const std::string& key, DataType fallback,
                   std::initializer_list<const char*> allowed) {
  return *parse_data_type(r.choice(key, to_string(fallback), allowed));
}

// The preset named by /memory/preset with /memory/channels applied; every problem goes to `diag`.
std::optional<dram::MemoryConfig> resolve_preset(ObjectReader& r, const OffChipMemoryConfig& m) {
  JsonDiagnostics& diag = r.diagnostics();
  const std::optional<PresetFile> file = find_preset("memory", m.preset);
  if (!file) {
    diag.error(r.pointer_of("preset"),
               fmt::format("'{}': {}", m.preset, preset_not_found("memory")));
    return std::nullopt;
  }
  try {
    dram::MemoryConfig cfg = dram::parse_memory_config(file->text, file->origin);
    if (m.channels != 0 && m.channels != cfg.org.channels) {
      cfg.org.channels = m.channels;
      cfg.name += fmt::format(" x{}", m.channels);
      // The preset file format round trip re-validates the organization with the address mapping.
      cfg = dram::parse_memory_config(
          dram::memory_config_to_json_text(cfg),
          fmt::format("{} with /memory/channels {}", m.preset, m.channels));
    }
    return cfg;
  } catch (const UserErrors& e) {
    for (const auto& message : e.messages()) diag.error(r.pointer_of("preset"), message);
  } catch (const UserError& e) {
    diag.error(r.pointer_of("preset"), e.what());
  }
  return std::nullopt;
}

void read_memory(ObjectReader& top, OffChipMemoryConfig& m) {
  ObjectReader r = top.object("memory");
  JsonDiagnostics& diag = r.diagnostics();
  m.model = r.choice("model", "simple", {"simple", "dram"}) == "dram" ? MemoryModel::kDram
                                                                      : MemoryModel::kSimple;
  const bool dram = m.model == MemoryModel::kDram;
  // Keys of the other model are rejected rather than ignored: a typo in the model would
  // otherwise silently run the wrong memory.
  auto only_for = [&](const char* key, MemoryModel model) {
    if (r.raw(key) != nullptr) {
      diag.error(r.pointer_of(key), fmt::format("only for memory.model \"{}\" (this is \"{}\")",
                                                to_string(model), to_string(m.model)));
    }
  };
  m.bandwidth_gbps =
      r.number("bandwidth_gbps", dram ? 0.0 : m.bandwidth_gbps, dram ? 0.0 : 0.001, 1e6);
  uint64_t default_capacity = m.capacity_bytes;
  if (dram) {
    only_for("latency_ns", MemoryModel::kSimple);
    auto preset = r.string_required("preset");
    if (preset && preset->empty()) {
      diag.error(r.pointer_of("preset"), "expected a configs/memory preset name or a .json path");
    }
    m.preset = preset.value_or("");
    m.channels = static_cast<int>(r.integer("channels", 0, 0, 64));
    const bool channels_ok = m.channels == 0 || (m.channels & (m.channels - 1)) == 0;
    if (!channels_ok) {
      diag.error(r.pointer_of("channels"),
                 fmt::format("expected a power of two (the address mapping takes channel bits), "
                             "got {}",
                             m.channels));
    }
    m.max_outstanding_bursts =
        static_cast<int>(r.integer("max_outstanding_bursts", m.max_outstanding_bursts, 1, 1 << 16));
    m.fidelity = r.choice("fidelity", "command", {"command", "bulk"}) == "bulk"
                     ? MemoryFidelity::kBulk
                     : MemoryFidelity::kCommand;
    if (!m.preset.empty() && channels_ok) m.dram = resolve_preset(r, m);
    if (m.dram) default_capacity = m.dram->org.capacity_bytes();
  } else {
    m.latency_ns = r.number("latency_ns", m.latency_ns, 0.0, 1e6);
    for (const char* key : {"preset", "channels", "max_outstanding_bursts", "fidelity"}) {
      only_for(key, MemoryModel::kDram);
    }
  }
  m.capacity_bytes = static_cast<uint64_t>(r.integer(
      "capacity_bytes", static_cast<int64_t>(default_capacity), 1 << 20, int64_t{1} << 50));
  m.max_outstanding_transfers = static_cast<int>(
      r.integer("max_outstanding_transfers", m.max_outstanding_transfers, 1, 1024));
  if (m.dram) {
    const double peak = m.dram->peak_bandwidth_gbps();
    if (m.bandwidth_gbps > 0 && std::abs(m.bandwidth_gbps - peak) > 0.01 * peak) {
      diag.error(r.pointer_of("bandwidth_gbps"),
                 fmt::format("expected the peak of {} ({:.2f} GB/s) or 0, got {}", m.dram->name,
                             peak, m.bandwidth_gbps));
    }
    if (m.capacity_bytes > m.dram->org.capacity_bytes()) {
      diag.error(r.pointer_of("capacity_bytes"),
                 fmt::format("expected at most the {} bytes of {}, got {}",
                             m.dram->org.capacity_bytes(), m.dram->name, m.capacity_bytes));
    }
  }
  r.finish();
}

// The optional host section: absent, no host.
void read_host(ObjectReader& top, std::optional<HostConfig>& host) {
  ObjectReader r = top.object("host");
  if (!r.present()) return;
  JsonDiagnostics& diag = r.diagnostics();
  HostConfig h;
  h.gflops = r.number("gflops", h.gflops, 1e-3, 1e9);
  h.memory_gbps = r.number("memory_gbps", h.memory_gbps, 1e-3, 1e6);
  {
    ObjectReader l = r.object("link");
    HostLinkConfig& link = h.link;
    link.latency_ns = l.number("latency_ns", link.latency_ns, 0.0, 1e9);
    const bool pcie = l.raw("pcie") != nullptr, stated = l.raw("bandwidth_gbps") != nullptr;
    if (pcie && stated) {
      diag.error(l.pointer_of("bandwidth_gbps"),
                 "expected either pcie or bandwidth_gbps, not both (pcie sets the bandwidth)");
    }
    if (stated) {
      link.kind = HostLinkKind::kBandwidth;
      link.bandwidth_gbps = l.number("bandwidth_gbps", 0.0, 1e-3, 1e6);
    } else {
      ObjectReader p = l.object("pcie");
      link.pcie_generation = static_cast<int>(p.integer("generation", link.pcie_generation, 3, 5));
      link.pcie_lanes = static_cast<int>(p.integer("lanes", link.pcie_lanes, 1, 16));
      p.finish();
      link.bandwidth_gbps = pcie_lane_gbps(link.pcie_generation) * link.pcie_lanes;
    }
    l.finish();
  }
  r.finish();
  host = h;
}

json host_json(const HostConfig& h) {
  json link{{"latency_ns", h.link.latency_ns}};
  if (h.link.kind == HostLinkKind::kPcie) {
    link["pcie"] = {{"generation", h.link.pcie_generation}, {"lanes", h.link.pcie_lanes}};
  } else {
    link["bandwidth_gbps"] = h.link.bandwidth_gbps;
  }
  return json{{"gflops", h.gflops}, {"memory_gbps", h.memory_gbps}, {"link", link}};
}

// matrix_unit.sparsity: "N:M" (1 <= N < M <= 16) on a weight-stationary array of at least N rows,
// or "dense" (the default).
void read_sparsity(ObjectReader& r, JsonDiagnostics& diag, MatrixUnitConfig& m) {
  const std::string text = r.string("sparsity", "dense");
  if (text == "dense") return;
  const std::string where = r.pointer_of("sparsity");
  int n = 0, mg = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d:%d%c", &n, &mg, &tail) != 2 || n < 1 || mg <= n || mg > 16) {
    diag.error(where, fmt::format("expected \"dense\" or \"N:M\" with 1 <= N < M <= 16 (at "
                                  "most N non-zero weights in every M), got \"{}\"",
                                  text));
    return;
  }
  if (m.dataflow != Dataflow::kWeightStationary) {
    diag.error(where, fmt::format("N:M sparsity needs dataflow \"ws\" (this is \"{}\")",
                                  to_string(m.dataflow)));
    return;
  }
  if (m.rows < n) {
    diag.error(where, fmt::format("{}:{} sparsity needs at least {} rows (this array has {})", n,
                                  mg, n, m.rows));
    return;
  }
  m.sparse_n = n, m.sparse_m = mg;
}

}  // namespace

HwConfig parse_hw_config(const json& root, const std::string& origin) {
  JsonDiagnostics diag(origin);
  ObjectReader top(diag, &root, "", true);
  HwConfig c;
  c.origin = origin;
  auto version = top.integer_required("schema_version", 1, 1000);
  if (version && *version != kHwSchemaVersion) {
    diag.error("/schema_version", fmt::format("expected {} (the version this npusim reads), got {}",
                                              kHwSchemaVersion, *version));
  }
  c.name = top.string("name", "custom");
  c.description = top.string("description", "");
  c.source = top.string("source", "");
  c.clock_mhz = top.number("clock_mhz", c.clock_mhz, 1.0, 10000.0);
  c.cores = static_cast<int>(top.integer("cores", c.cores, 1, 64));
  {
    ObjectReader r = top.object("interconnect");
    auto& n = c.interconnect;
    n.topology = r.choice("topology", "ring", {"ring", "crossbar"}) == "crossbar"
                     ? Topology::kCrossbar
                     : Topology::kRing;
    n.link_bytes_per_cycle =
        static_cast<int>(r.integer("link_bytes_per_cycle", n.link_bytes_per_cycle, 1, 65536));
    n.hop_latency_cycles =
        static_cast<int>(r.integer("hop_latency_cycles", n.hop_latency_cycles, 0, 100000));
    r.finish();
  }
  c.technology_nm = static_cast<int>(top.integer("technology_nm", c.technology_nm, 1, 1000));
  if (!is_technology_node(c.technology_nm)) {
    diag.error("/technology_nm",
               fmt::format("expected one of the nodes of configs/energy ({}), got {}",
                           technology_nodes_joined(), c.technology_nm));
  }

  {
    ObjectReader r = top.object("matrix_unit");
    auto& m = c.matrix_unit;
    const std::string kind = r.choice("kind", "systolic", {"systolic", "cube"});
    m.kind = kind == "cube" ? MatrixUnitKind::kCube : MatrixUnitKind::kSystolic;
    // Keys of the other kind are rejected rather than ignored, as for memory.model.
    auto only_for = [&](const char* key, const char* other) {
      if (r.raw(key) != nullptr) {
        diag.error(r.pointer_of(key),
                   fmt::format("only for matrix_unit.kind \"{}\" (this is \"{}\")", other, kind));
      }
    };
    m.rows = static_cast<int>(r.integer("rows", m.rows, 1, 512));
    m.cols = static_cast<int>(r.integer("cols", m.cols, 1, 512));
    if (m.kind == MatrixUnitKind::kCube) {
      only_for("dataflow", "systolic");
      only_for("weight_double_buffer", "systolic");
      only_for("weight_load", "systolic");
      only_for("sparsity", "systolic");
      m.block_m = static_cast<int>(r.integer("block_m", m.block_m, 1, 512));
    } else {
      only_for("block_m", "cube");
      m.dataflow = *parse_dataflow(r.choice("dataflow", "ws", {"ws", "os", "is"}));
      m.weight_double_buffer = r.boolean("weight_double_buffer", m.weight_double_buffer);
      m.weight_load_wavefront =
          r.choice("weight_load", "bank", {"bank", "wavefront"}) == "wavefront";
      if (m.weight_load_wavefront && m.dataflow == Dataflow::kOutputStationary) {
        diag.error(r.pointer_of("weight_load"),
                   "\"wavefront\" is for the ws and is dataflows (an os array loads no stationary "
                   "operand)");
      }
      read_sparsity(r, diag, m);
    }
    m.count = static_cast<int>(r.integer("count", m.count, 1, 64));
    r.finish();
  }
  {
    ObjectReader r = top.object("vector_unit");
    auto& v = c.vector_unit;
    v.lanes = static_cast<int>(r.integer("lanes", c.matrix_unit.cols, 1, 8192));
    v.pipeline_latency_cycles =
        static_cast<int>(r.integer("pipeline_latency_cycles", v.pipeline_latency_cycles, 0, 1000));
    v.transcendental_cycles =
        static_cast<int>(r.integer("transcendental_cycles", v.transcendental_cycles, 1, 1000));
    r.finish();
  }
  {
    ObjectReader r = top.object("buffers");
    c.unified_buffer = read_buffer(r, "unified_buffer", c.unified_buffer, 1024);
    c.weight_buffer = read_buffer(r, "weight_buffer", c.weight_buffer, 1);
    c.accumulators = read_buffer(r, "accumulators", c.accumulators, 4);
    r.finish();
  }
  read_memory(top, c.memory);
  {
    ObjectReader r = top.object("data_types");
    auto& d = c.data_types;
    d.activation = read_type(r, "activation", d.activation, {"int8", "bf16"});
    d.weight = read_type(r, "weight", d.weight, {"int8", "bf16"});
    const DataType default_acc =
        d.activation == DataType::kBf16 ? DataType::kFp32 : DataType::kInt32;
    d.accumulator = read_type(r, "accumulator", default_acc, {"int32", "fp32"});
    if (r.present() && d.weight != d.activation) {
      diag.error("/data_types/weight",
                 fmt::format("expected the activation type (\"{}\"), got \"{}\"",
                             to_string(d.activation), to_string(d.weight)));
    }
    for (const std::string& f : r.string_list("fp8", false)) {
      const std::optional<Fp8Format> format = parse_fp8_format(f);
      if (!format) {
        diag.error(r.pointer_of("fp8"),
                   fmt::format("expected fp8 formats \"e4m3\" or \"e5m2\", got \"{}\"", f));
      } else if (d.activation != DataType::kBf16) {
        diag.error(r.pointer_of("fp8"), fmt::format("fp8 is for bf16 matrix units, this one is {}",
                                                    to_string(d.activation)));
      } else if (!d.has_fp8(*format)) {
        d.fp8.push_back(*format);
      }
    }
    if (r.present() && d.accumulator != default_acc) {
      diag.error("/data_types/accumulator",
                 fmt::format("expected \"{}\" for {} operands, got \"{}\"", to_string(default_acc),
                             to_string(d.activation), to_string(d.accumulator)));
    }
    r.finish();
  }
  read_host(top, c.host);
  top.finish();

  // Cross-field checks: only meaningful once each field on its own is valid.
  if (diag.ok()) {
    const auto& m = c.matrix_unit;
    uint64_t weight_tile = static_cast<uint64_t>(m.rows) * m.cols * size_bytes(c.data_types.weight);
    if (c.weight_buffer.capacity_bytes < 2 * weight_tile) {
      diag.error("/buffers/weight_buffer/capacity_bytes",
                 fmt::format("expected at least {} bytes: two {}x{} weight tiles, so the next tile "
                             "loads while the array computes; got {}",
                             2 * weight_tile, m.rows, m.cols, c.weight_buffer.capacity_bytes));
    }
    uint64_t acc_rows = static_cast<uint64_t>(std::max(m.rows, m.cols));
    uint64_t acc_min = 2 * acc_rows * m.cols * size_bytes(c.data_types.accumulator) * m.count;
    if (c.accumulators.capacity_bytes < acc_min) {
      diag.error("/buffers/accumulators/capacity_bytes",
                 fmt::format("expected at least {} bytes: two {}x{} {} output tiles per matrix "
                             "unit ({} units); got {}",
                             acc_min, acc_rows, m.cols, to_string(c.data_types.accumulator),
                             m.count, c.accumulators.capacity_bytes));
    }
  }
  diag.throw_if_errors();
  return c;
}

HwConfig load_hw_config(const std::string& spec) {
  const std::optional<PresetFile> file = find_preset("hw", spec);
  if (!file) throw UserError(fmt::format("--hw '{}': {}", spec, preset_not_found("hw")));
  return parse_hw_config(parse_json_text(file->text, file->origin), file->origin);
}

namespace {
json matrix_unit_json(const MatrixUnitConfig& m) {
  json j{{"kind", to_string(m.kind)}, {"rows", m.rows}, {"cols", m.cols}, {"count", m.count}};
  if (m.kind == MatrixUnitKind::kCube) {
    j["block_m"] = m.block_m;
  } else {
    j["dataflow"] = to_string(m.dataflow);
    j["weight_double_buffer"] = m.weight_double_buffer;
    if (m.weight_load_wavefront) j["weight_load"] = "wavefront";
    if (m.sparse_n > 0) j["sparsity"] = fmt::format("{}:{}", m.sparse_n, m.sparse_m);
  }
  return j;
}

json memory_json(const OffChipMemoryConfig& m) {
  json j{{"model", to_string(m.model)}, {"bandwidth_gbps", m.bandwidth_gbps}};
  if (m.model == MemoryModel::kDram) {
    j["preset"] = m.preset;
    j["channels"] = m.channels;
    j["max_outstanding_bursts"] = m.max_outstanding_bursts;
    j["fidelity"] = to_string(m.fidelity);
  } else {
    j["latency_ns"] = m.latency_ns;
  }
  j["capacity_bytes"] = m.capacity_bytes;
  j["max_outstanding_transfers"] = m.max_outstanding_transfers;
  return j;
}
}  // namespace

json to_json(const HwConfig& c) {
  auto buffer = [](const BufferConfig& b) {
    return json{{"capacity_bytes", b.capacity_bytes}, {"banks", b.banks}};
  };
  json j{
      {"schema_version", kHwSchemaVersion},
      {"name", c.name},
      {"description", c.description},
      {"source", c.source},
      {"clock_mhz", c.clock_mhz},
      {"cores", c.cores},
      {"interconnect",
       {{"topology", to_string(c.interconnect.topology)},
        {"link_bytes_per_cycle", c.interconnect.link_bytes_per_cycle},
        {"hop_latency_cycles", c.interconnect.hop_latency_cycles}}},
      {"technology_nm", c.technology_nm},
      {"matrix_unit", matrix_unit_json(c.matrix_unit)},
      {"vector_unit",
       {{"lanes", c.vector_unit.lanes},
        {"pipeline_latency_cycles", c.vector_unit.pipeline_latency_cycles},
        {"transcendental_cycles", c.vector_unit.transcendental_cycles}}},
      {"buffers",
       {{"unified_buffer", buffer(c.unified_buffer)},
        {"weight_buffer", buffer(c.weight_buffer)},
        {"accumulators", buffer(c.accumulators)}}},
      {"memory", memory_json(c.memory)},
      {"data_types",
       {{"activation", to_string(c.data_types.activation)},
        {"weight", to_string(c.data_types.weight)},
        {"accumulator", to_string(c.data_types.accumulator)}}},
  };
  if (!c.data_types.fp8.empty()) {
    json formats = json::array();
    for (Fp8Format f : c.data_types.fp8) formats.push_back(to_string(f));
    j["data_types"]["fp8"] = formats;
  }
  if (c.host) j["host"] = host_json(*c.host);
  return j;
}

bool DataTypeConfig::has_fp8(Fp8Format f) const {
  return std::find(fp8.begin(), fp8.end(), f) != fp8.end();
}

}  // namespace npusim
