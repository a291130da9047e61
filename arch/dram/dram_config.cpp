#include "arch/dram/dram_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "arch/dram/address_mapping.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"
#include "support/presets.hpp"

namespace npusim::dram {

namespace {

bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

void require_power_of_two(JsonDiagnostics& diag, const ObjectReader& r, const char* key,
                          int64_t value) {
  if (value > 0 && !is_power_of_two(value)) {
    diag.error(r.pointer_of(key),
               fmt::format("expected a power of two (the address mapping uses bit fields), got {}",
                           value));
  }
}

int read_cycles(ObjectReader& r, const char* key, int min = 0) {
  return static_cast<int>(r.integer_required(key, min, 1 << 20).value_or(min));
}

// Micron TN-41-01 energies as DRAMsim3's Configuration::InitPowerParams derives them, scaled by
// tCK (mA * V * ns = pJ) and by the chips that share a channel.
void derive_energy(const DramOrganization& org, const DramTiming& t, bool per_bank, DramEnergy& e) {
  const double scale = e.vdd_v * t.tck_ns * org.devices_per_channel;
  e.act_pj = scale * (e.idd0_ma * t.rc - (e.idd3n_ma * t.ras + e.idd2n_ma * (t.rc - t.ras)));
  // IDD4R/W is drawn while the whole channel streams; a pseudo-channel burst moves 1/PCs of it.
  e.read_pj = scale * (e.idd4r_ma - e.idd3n_ma) * t.burst_cycles / org.pseudo_channels;
  e.write_pj = scale * (e.idd4w_ma - e.idd3n_ma) * t.burst_cycles / org.pseudo_channels;
  e.refresh_pj = scale * (e.idd5ab_ma - e.idd3n_ma) * t.rfc / org.pseudo_channels;
  // A REFpb refreshes one bank's share of the rows an all-bank REF does: the same energy per row
  // (no IDD5PB in the presets), spread over banks_per_pseudo_channel() commands.
  if (per_bank) e.refresh_pj /= org.banks_per_pseudo_channel();
  e.active_standby_pj = scale * e.idd3n_ma;
  e.precharge_standby_pj = scale * e.idd2n_ma;
}

}  // namespace

double MemoryConfig::peak_bandwidth_gbps() const {
  // bytes per ns = GB/s
  return double(org.channels) * org.pseudo_channels * org.access_bytes() /
         (timing.burst_cycles * timing.tck_ns);
}

MemoryConfig parse_memory_config(const std::string& text, const std::string& origin) {
  json root = parse_json_text(text, origin);
  JsonDiagnostics diag(origin);
  ObjectReader top(diag, &root, "", true);
  MemoryConfig cfg;
  cfg.file = origin;
  top.integer_required("schema_version", 1, 1);
  cfg.name = top.string_required("name").value_or("");
  cfg.description = top.string("description", "");
  cfg.source = top.string_required("source").value_or("");
  if (top.has("source") && cfg.source.empty()) {
    diag.error(top.pointer_of("source"),
               "expected a non-empty citation of where the figures come from");
  }

  {
    ObjectReader o = top.object("organization", true);
    auto& g = cfg.org;
    g.channels = int(o.integer_required("channels", 1, 1024).value_or(1));
    g.pseudo_channels = int(o.integer("pseudo_channels", 1, 1, 16));
    g.bank_groups = int(o.integer_required("bank_groups", 1, 64).value_or(1));
    g.banks_per_group = int(o.integer_required("banks_per_group", 1, 64).value_or(1));
    g.rows = o.integer_required("rows", 1, int64_t{1} << 24).value_or(1);
    g.columns = int(o.integer_required("columns", 1, 1 << 16).value_or(1));
    g.bus_width_bits = int(o.integer_required("bus_width_bits", 8, 1024).value_or(64));
    g.burst_length = int(o.integer_required("burst_length", 1, 64).value_or(8));
    g.devices_per_channel = int(o.integer("devices_per_channel", 1, 1, 64));
    require_power_of_two(diag, o, "channels", g.channels);
    require_power_of_two(diag, o, "pseudo_channels", g.pseudo_channels);
    require_power_of_two(diag, o, "bank_groups", g.bank_groups);
    require_power_of_two(diag, o, "banks_per_group", g.banks_per_group);
    require_power_of_two(diag, o, "rows", g.rows);
    require_power_of_two(diag, o, "columns", g.columns);
    if (g.banks_per_channel() > 64) {
      diag.error(o.pointer_of("banks_per_group"),
                 fmt::format("expected at most 64 banks per channel (pseudo_channels x "
                             "bank_groups x banks_per_group), got {}",
                             g.banks_per_channel()));
    }
    if (g.bus_width_bits % 8 != 0 || !is_power_of_two(g.access_bytes())) {
      diag.error(o.pointer_of("bus_width_bits"),
                 fmt::format("expected bus_width_bits / 8 * burst_length to be a power of two "
                             "number of bytes, got {} bits x {} beats",
                             g.bus_width_bits, g.burst_length));
    }
    o.finish();
  }

  {
    auto& t = cfg.timing;
    t.tck_ns = top.number_required("tck_ns", 0.01, 100.0).value_or(1.0);
    ObjectReader o = top.object("timing_cycles", true);
    t.burst_cycles = read_cycles(o, "burst", 1);
    t.cl = read_cycles(o, "cl", 1);
    t.cwl = read_cycles(o, "cwl", 0);
    t.rcd_read = read_cycles(o, "rcd_read", 1);
    t.rcd_write = read_cycles(o, "rcd_write", 1);
    t.rp = read_cycles(o, "rp", 1);
    t.ras = read_cycles(o, "ras", 1);
    t.rc = read_cycles(o, "rc", 1);
    t.ccd_s = read_cycles(o, "ccd_s", 1);
    t.ccd_l = read_cycles(o, "ccd_l", 1);
    t.rrd_s = read_cycles(o, "rrd_s", 1);
    t.rrd_l = read_cycles(o, "rrd_l", 1);
    t.faw = read_cycles(o, "faw", 0);
    t.wr = read_cycles(o, "wr", 1);
    t.rtp = read_cycles(o, "rtp", 1);
    t.wtr_s = read_cycles(o, "wtr_s", 0);
    t.wtr_l = read_cycles(o, "wtr_l", 0);
    t.rtrs = read_cycles(o, "rtrs", 0);
    t.rfc = read_cycles(o, "rfc", 1);
    t.refi = read_cycles(o, "refi", 1);
    t.rfc_pb = int(o.integer("rfc_pb", 0, 0, 1 << 20));
    if (t.rc < t.ras + t.rp) {
      diag.error(o.pointer_of("rc"),
                 fmt::format("expected rc >= ras + rp = {}, got {}", t.ras + t.rp, t.rc));
    }
    if (t.rrd_l < t.rrd_s) {
      diag.error(o.pointer_of("rrd_l"),
                 fmt::format("expected rrd_l >= rrd_s = {}, got {}", t.rrd_s, t.rrd_l));
    }
    if (t.ccd_l < t.ccd_s) {
      diag.error(o.pointer_of("ccd_l"),
                 fmt::format("expected ccd_l >= ccd_s = {}, got {}", t.ccd_s, t.ccd_l));
    }
    if (t.wtr_l < t.wtr_s) {
      diag.error(o.pointer_of("wtr_l"),
                 fmt::format("expected wtr_l >= wtr_s = {}, got {}", t.wtr_s, t.wtr_l));
    }
    if (t.faw != 0 && t.faw < t.rrd_s) {
      diag.error(
          o.pointer_of("faw"),
          fmt::format("expected faw = 0 (no window) or >= rrd_s = {}, got {}", t.rrd_s, t.faw));
    }
    if (t.refi <= t.rfc) {
      diag.error(o.pointer_of("refi"),
                 fmt::format("expected refi > rfc = {}, got {}", t.rfc, t.refi));
    }
    if (t.read_to_write() < 1) {
      diag.error(o.pointer_of("cwl"), fmt::format("expected cwl < cl + burst + rtrs = {}, got {}",
                                                  t.cl + t.burst_cycles + t.rtrs, t.cwl));
    }
    o.finish();

    ObjectReader b = top.object("command_bus", true);
    t.dual_command_bus =
        b.choice_required("kind", {"dual", "shared"}).value_or("dual") == std::string("dual");
    t.act_command_cycles = int(b.integer("act_cycles", 1, 1, 8));
    t.row_command_cycles = int(b.integer("row_cycles", 1, 1, 8));
    t.column_command_cycles = int(b.integer("column_cycles", 1, 1, 8));
    b.finish();
  }

  {
    auto& c = cfg.controller;
    ObjectReader o = top.object("controller", true);
    c.read_queue_entries = int(o.integer_required("read_queue_entries", 1, 4096).value_or(32));
    c.write_queue_entries = int(o.integer_required("write_queue_entries", 1, 4096).value_or(32));
    c.write_high_watermark = o.number("write_high_watermark", 0.8, 0.0, 1.0);
    c.write_low_watermark = o.number("write_low_watermark", 0.2, 0.0, 1.0);
    if (c.write_low_watermark >= c.write_high_watermark) {
      diag.error(o.pointer_of("write_low_watermark"),
                 fmt::format("expected write_low_watermark < write_high_watermark = {}, got {}",
                             c.write_high_watermark, c.write_low_watermark));
    }
    c.page_policy = o.choice("page_policy", "open", {"open", "closed"}) == "open"
                        ? PagePolicy::kOpen
                        : PagePolicy::kClosed;
    c.address_mapping = o.string_required("address_mapping").value_or("rorabgbachco");
    if (o.has("address_mapping")) {
      std::string why = AddressMapper::check_spec(c.address_mapping, cfg.org);
      if (!why.empty()) diag.error(o.pointer_of("address_mapping"), why);
    }
    c.refresh = o.boolean("refresh", true);
    c.refresh_mode = o.choice("refresh_mode", "all_bank", {"all_bank", "per_bank"}) == "per_bank"
                         ? RefreshMode::kPerBank
                         : RefreshMode::kAllBank;
    if (c.refresh_mode == RefreshMode::kPerBank) {
      const int interval = cfg.refresh_interval();
      if (cfg.timing.rfc_pb < 1) {
        diag.error(
            o.pointer_of("refresh_mode"),
            "per_bank refresh needs timing_cycles.rfc_pb (the bank's busy time after REFpb)");
      } else if (interval <= cfg.timing.rfc_pb) {
        diag.error(o.pointer_of("refresh_mode"),
                   fmt::format("per_bank refresh: expected refi / banks per pseudo-channel = {} > "
                               "rfc_pb = {}",
                               interval, cfg.timing.rfc_pb));
      }
    }
    c.frontend_latency_cycles = int(o.integer("frontend_latency_cycles", 1, 0, 1000));
    c.clock_by_clock = o.choice("stepping", "event", {"event", "clock"}) == "clock";
    o.finish();
  }

  {
    auto& e = cfg.energy;
    ObjectReader o = top.object("energy", true);
    e.source = o.string_required("source").value_or("");
    e.vdd_v = o.number_required("vdd_v", 0.1, 5.0).value_or(1.0);
    e.idd0_ma = o.number_required("idd0_ma", 0.0, 1e5).value_or(0);
    e.idd2n_ma = o.number_required("idd2n_ma", 0.0, 1e5).value_or(0);
    e.idd3n_ma = o.number_required("idd3n_ma", 0.0, 1e5).value_or(0);
    e.idd4r_ma = o.number_required("idd4r_ma", 0.0, 1e5).value_or(0);
    e.idd4w_ma = o.number_required("idd4w_ma", 0.0, 1e5).value_or(0);
    e.idd5ab_ma = o.number_required("idd5ab_ma", 0.0, 1e5).value_or(0);
    const bool all_currents = o.has("idd0_ma") && o.has("idd3n_ma") && o.has("idd4r_ma") &&
                              o.has("idd4w_ma") && o.has("idd5ab_ma");
    if (all_currents && diag.ok() &&
        (e.idd4r_ma < e.idd3n_ma || e.idd4w_ma < e.idd3n_ma || e.idd5ab_ma < e.idd3n_ma ||
         e.idd0_ma < e.idd3n_ma)) {
      diag.error(o.pointer_of("idd3n_ma"),
                 "expected idd3n_ma (active standby) <= idd0_ma, idd4r_ma, idd4w_ma, idd5ab_ma");
    }
    o.finish();
  }
  top.finish();
  diag.throw_if_errors();
  derive_energy(cfg.org, cfg.timing, cfg.controller.refresh_mode == RefreshMode::kPerBank,
                cfg.energy);
  return cfg;
}

std::string memory_config_to_json_text(const MemoryConfig& c) {
  const DramOrganization& g = c.org;
  const DramTiming& t = c.timing;
  const ControllerConfig& k = c.controller;
  const DramEnergy& e = c.energy;
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["name"] = c.name;
  j["description"] = c.description;
  j["source"] = c.source;
  j["organization"] = {{"channels", g.channels},
                       {"pseudo_channels", g.pseudo_channels},
                       {"bank_groups", g.bank_groups},
                       {"banks_per_group", g.banks_per_group},
                       {"rows", g.rows},
                       {"columns", g.columns},
                       {"bus_width_bits", g.bus_width_bits},
                       {"burst_length", g.burst_length},
                       {"devices_per_channel", g.devices_per_channel}};
  j["tck_ns"] = t.tck_ns;
  j["timing_cycles"] = {{"burst", t.burst_cycles},
                        {"cl", t.cl},
                        {"cwl", t.cwl},
                        {"rcd_read", t.rcd_read},
                        {"rcd_write", t.rcd_write},
                        {"rp", t.rp},
                        {"ras", t.ras},
                        {"rc", t.rc},
                        {"ccd_s", t.ccd_s},
                        {"ccd_l", t.ccd_l},
                        {"rrd_s", t.rrd_s},
                        {"rrd_l", t.rrd_l},
                        {"faw", t.faw},
                        {"wr", t.wr},
                        {"rtp", t.rtp},
                        {"wtr_s", t.wtr_s},
                        {"wtr_l", t.wtr_l},
                        {"rtrs", t.rtrs},
                        {"rfc", t.rfc},
                        {"refi", t.refi},
                        {"rfc_pb", t.rfc_pb}};
  j["command_bus"] = {{"kind", t.dual_command_bus ? "dual" : "shared"},
                      {"act_cycles", t.act_command_cycles},
                      {"row_cycles", t.row_command_cycles},
                      {"column_cycles", t.column_command_cycles}};
  j["controller"] = {
      {"read_queue_entries", k.read_queue_entries},
      {"write_queue_entries", k.write_queue_entries},
      {"write_high_watermark", k.write_high_watermark},
      {"write_low_watermark", k.write_low_watermark},
      {"page_policy", k.page_policy == PagePolicy::kOpen ? "open" : "closed"},
      {"address_mapping", k.address_mapping},
      {"refresh", k.refresh},
      {"refresh_mode", k.refresh_mode == RefreshMode::kPerBank ? "per_bank" : "all_bank"},
      {"frontend_latency_cycles", k.frontend_latency_cycles},
      {"stepping", k.clock_by_clock ? "clock" : "event"}};
  j["energy"] = {{"source", e.source},     {"vdd_v", e.vdd_v},        {"idd0_ma", e.idd0_ma},
                 {"idd2n_ma", e.idd2n_ma}, {"idd3n_ma", e.idd3n_ma},  {"idd4r_ma", e.idd4r_ma},
                 {"idd4w_ma", e.idd4w_ma}, {"idd5ab_ma", e.idd5ab_ma}};
  return j.dump(2);
}

MemoryConfig load_memory_config(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) throw UserError(fmt::format("{}: cannot open file", path));
  std::string text((std::istreambuf_iterator<char>(probe)), std::istreambuf_iterator<char>());
  return parse_memory_config(text, path);
}

MemoryConfig resolve_memory_config(const std::string& spec) {
  const std::optional<PresetFile> file = find_preset("memory", spec);
  if (!file) {
    throw UserError(fmt::format("memory preset '{}': {}", spec, preset_not_found("memory")));
  }
  return parse_memory_config(file->text, file->origin);
}

}  // namespace npusim::dram
