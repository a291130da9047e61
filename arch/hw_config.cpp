#include "arch/hw_config.hpp"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "arch/energy_table.hpp"
#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

uint64_t HwConfig::memory_latency_cycles() const {
  return static_cast<uint64_t>(std::ceil(memory.latency_ns / cycle_time_ns() - 1e-9));
}

namespace {

BufferConfig read_buffer(ObjectReader& parent, const std::string& key, const BufferConfig& fallback,
                         uint64_t min_bytes) {
  ObjectReader r = parent.object(key);
  BufferConfig b;
  b.capacity_bytes = static_cast<uint64_t>(r.integer(
      "capacity_bytes", static_cast<int64_t>(fallback.capacity_bytes), static_cast<int64_t>(min_bytes),
      int64_t{1} << 40));
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

}  // namespace

HwConfig parse_hw_config(const json& root, const std::string& origin) {
  JsonDiagnostics diag(origin);
  ObjectReader top(diag, &root, "", true);
  HwConfig c;
  c.origin = origin;
  auto version = top.integer_required("schema_version", 1, 1000);
  if (version && *version != kHwSchemaVersion) {
    diag.error("/schema_version",
               fmt::format("expected {} (the version this npusim reads), got {}", kHwSchemaVersion,
                           *version));
  }
  c.name = top.string("name", "custom");
  c.description = top.string("description", "");
  c.source = top.string("source", "");
  c.clock_mhz = top.number("clock_mhz", c.clock_mhz, 1.0, 10000.0);
  c.technology_nm = static_cast<int>(top.integer("technology_nm", c.technology_nm, 1, 1000));
  if (!is_technology_node(c.technology_nm)) {
    diag.error("/technology_nm", fmt::format("expected one of the nodes of configs/energy ({}), got {}",
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
      m.block_m = static_cast<int>(r.integer("block_m", m.block_m, 1, 512));
    } else {
      only_for("block_m", "cube");
      m.dataflow = *parse_dataflow(r.choice("dataflow", "ws", {"ws", "os", "is"}));
      m.weight_double_buffer = r.boolean("weight_double_buffer", m.weight_double_buffer);
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
  {
    ObjectReader r = top.object("memory");
    auto& m = c.memory;
    m.model = r.choice("model", m.model, {"simple", "dram"});
    const bool dram = m.model == "dram";
    // Keys of the other model are rejected rather than ignored: a typo in the model would
    // otherwise silently run the wrong memory.
    auto only_for = [&](const char* key, const char* model) {
      if (r.raw(key) != nullptr) {
        diag.error(r.pointer_of(key),
                   fmt::format("only for memory.model \"{}\" (this is \"{}\")", model, m.model));
      }
    };
    m.bandwidth_gbps =
        r.number("bandwidth_gbps", dram ? 0.0 : m.bandwidth_gbps, dram ? 0.0 : 0.001, 1e6);
    if (dram) {
      only_for("latency_ns", "simple");
      auto preset = r.string_required("preset");
      if (preset && preset->empty()) {
        diag.error(r.pointer_of("preset"), "expected a configs/memory preset name or a .json path");
      }
      m.preset = preset.value_or("");
      m.channels = static_cast<int>(r.integer("channels", 0, 0, 64));
      if (m.channels != 0 && (m.channels & (m.channels - 1)) != 0) {
        diag.error(r.pointer_of("channels"),
                   fmt::format("expected a power of two (the address mapping takes channel bits), "
                               "got {}",
                               m.channels));
      }
      m.max_outstanding_bursts = static_cast<int>(
          r.integer("max_outstanding_bursts", m.max_outstanding_bursts, 1, 1 << 16));
    } else {
      m.latency_ns = r.number("latency_ns", m.latency_ns, 0.0, 1e6);
      for (const char* key : {"preset", "channels", "max_outstanding_bursts"}) {
        only_for(key, "dram");
      }
    }
    m.capacity_bytes = static_cast<uint64_t>(r.integer(
        "capacity_bytes", static_cast<int64_t>(m.capacity_bytes), 1 << 20, int64_t{1} << 50));
    r.finish();
  }
  {
    ObjectReader r = top.object("data_types");
    auto& d = c.data_types;
    d.activation = read_type(r, "activation", d.activation, {"int8", "bf16"});
    d.weight = read_type(r, "weight", d.weight, {"int8", "bf16"});
    const DataType default_acc = d.activation == DataType::kBf16 ? DataType::kFp32 : DataType::kInt32;
    d.accumulator = read_type(r, "accumulator", default_acc, {"int32", "fp32"});
    if (r.present() && d.weight != d.activation) {
      diag.error("/data_types/weight", fmt::format("expected the activation type (\"{}\"), got \"{}\"",
                                                   to_string(d.activation), to_string(d.weight)));
    }
    if (r.present() && d.accumulator != default_acc) {
      diag.error("/data_types/accumulator",
                 fmt::format("expected \"{}\" for {} operands, got \"{}\"", to_string(default_acc),
                             to_string(d.activation), to_string(d.accumulator)));
    }
    r.finish();
  }
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
                             acc_min, acc_rows, m.cols, to_string(c.data_types.accumulator), m.count,
                             c.accumulators.capacity_bytes));
    }
  }
  diag.throw_if_errors();
  return c;
}

HwConfig load_hw_config(const std::string& spec) {
  if (const EmbeddedFile* preset = find_embedded_file("hw", spec)) {
    std::string origin = fmt::format("configs/hw/{}.json", spec);
    return parse_hw_config(parse_json_text(preset->text, origin), origin);
  }
  if (!std::filesystem::exists(spec)) {
    throw UserError(fmt::format("--hw '{}': no such file and no such preset (presets: {})", spec,
                                embedded_file_names_joined("hw")));
  }
  return parse_hw_config(parse_json_file(spec), spec);
}

namespace {
json matrix_unit_json(const MatrixUnitConfig& m) {
  json j{{"kind", to_string(m.kind)}, {"rows", m.rows}, {"cols", m.cols}, {"count", m.count}};
  if (m.kind == MatrixUnitKind::kCube) {
    j["block_m"] = m.block_m;
  } else {
    j["dataflow"] = to_string(m.dataflow);
    j["weight_double_buffer"] = m.weight_double_buffer;
  }
  return j;
}

json memory_json(const OffChipMemoryConfig& m) {
  json j{{"model", m.model}, {"bandwidth_gbps", m.bandwidth_gbps}};
  if (m.model == "dram") {
    j["preset"] = m.preset;
    j["channels"] = m.channels;
    j["max_outstanding_bursts"] = m.max_outstanding_bursts;
  } else {
    j["latency_ns"] = m.latency_ns;
  }
  j["capacity_bytes"] = m.capacity_bytes;
  return j;
}
}  // namespace

json to_json(const HwConfig& c) {
  auto buffer = [](const BufferConfig& b) {
    return json{{"capacity_bytes", b.capacity_bytes}, {"banks", b.banks}};
  };
  return json{
      {"schema_version", kHwSchemaVersion},
      {"name", c.name},
      {"description", c.description},
      {"source", c.source},
      {"clock_mhz", c.clock_mhz},
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
}

}  // namespace npusim
