// Memory presets: every file in configs/memory loads and cites its source; derived energies match
// DRAMsim3's; bad files are reported with file, JSON pointer and what was expected, all at once.
#include "arch/dram/dram_config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "arch/dram/address_mapping.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"
#include "support/presets.hpp"

namespace npusim::dram {
namespace {

TEST(DramConfig, EveryPresetLoadsWithSources) {
  const auto names = preset_names("memory");
  for (const char* want : {"hbm2", "hbm2-2400", "hbm2e", "hbm3", "ddr3", "lpddr4"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const auto& name : names) {
    MemoryConfig cfg = resolve_memory_config(name);
    EXPECT_EQ(cfg.name, name);
    EXPECT_FALSE(cfg.source.empty()) << name;
    EXPECT_FALSE(cfg.energy.source.empty()) << name;
    EXPECT_GT(cfg.energy.act_pj, 0) << name;
  }
}

TEST(DramConfig, Hbm2MatchesTheReferenceConfiguration) {
  MemoryConfig cfg = resolve_memory_config("hbm2");
  // DRAM_REFERENCE.md section 2: 32 GB/s per 128-bit channel, 256 GB/s per 8-channel stack,
  // 64-byte accesses, 2 KiB rows, 1 GiB per channel.
  EXPECT_DOUBLE_EQ(cfg.peak_bandwidth_gbps(), 256.0);
  EXPECT_EQ(cfg.org.access_bytes(), 64);
  EXPECT_EQ(cfg.org.row_bytes(), 2048);
  EXPECT_EQ(cfg.org.channel_bytes(), uint64_t{1} << 30);
  // DRAM_REFERENCE.md section 2, "Energy parameters (DRAMsim3 only)": ACT 828 pJ, RD 804 pJ,
  // WR 1068 pJ per 64-byte burst, REF 60.8 nJ, background 66 / 48 pJ per cycle.
  EXPECT_NEAR(cfg.energy.act_pj, 828.0, 0.5);
  EXPECT_NEAR(cfg.energy.read_pj, 804.0, 0.5);
  EXPECT_NEAR(cfg.energy.write_pj, 1068.0, 0.5);
  EXPECT_NEAR(cfg.energy.refresh_pj, 60800.0, 50.0);  // 60.84 nJ, given to 3 digits
  EXPECT_NEAR(cfg.energy.active_standby_pj, 66.0, 0.01);
  EXPECT_NEAR(cfg.energy.precharge_standby_pj, 48.0, 0.01);
}

// A preset in $NPUSIM_CONFIG_DIR/memory takes precedence over the built-in one of that name and
// adds to the list; without the variable the built-in preset is back.
TEST(DramConfig, PresetDirectoryFollowsTheEnvironment) {
  const auto dir = std::filesystem::temp_directory_path() / "npusim-dram-config-env";
  std::filesystem::create_directories(dir / "memory");
  MemoryConfig edited = resolve_memory_config("hbm2");
  edited.description = "edited by the user";
  std::ofstream(dir / "memory" / "hbm2.json") << memory_config_to_json_text(edited);
  std::ofstream(dir / "memory" / "mine.json") << memory_config_to_json_text(edited);
  ::setenv("NPUSIM_CONFIG_DIR", dir.c_str(), 1);
  EXPECT_EQ(resolve_memory_config("hbm2").description, "edited by the user");
  EXPECT_EQ(resolve_memory_config("hbm2").file, (dir / "memory" / "hbm2.json").string());
  EXPECT_EQ(resolve_memory_config("hbm3").name, "hbm3");  // built in, not in the folder
  const auto names = preset_names("memory");
  EXPECT_EQ(names.back(), "mine");
  EXPECT_EQ(std::count(names.begin(), names.end(), "hbm2"), 1);
  ::unsetenv("NPUSIM_CONFIG_DIR");
  EXPECT_NE(resolve_memory_config("hbm2").description, "edited by the user");
  try {
    resolve_memory_config("mine");
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "memory preset 'mine': no such file and no such preset (presets: "),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(DramConfig, ResolvedConfigRoundTrips) {
  for (const auto& name : preset_names("memory")) {
    MemoryConfig a = resolve_memory_config(name);
    a.org.channels = 2;
    a.controller.page_policy = PagePolicy::kClosed;
    const std::string text = memory_config_to_json_text(a);
    MemoryConfig b = parse_memory_config(text, "resolved.json");
    EXPECT_EQ(memory_config_to_json_text(b), text) << name;
    EXPECT_EQ(b.org.channels, 2) << name;
    EXPECT_EQ(b.controller.page_policy, PagePolicy::kClosed) << name;
    EXPECT_DOUBLE_EQ(b.energy.act_pj, a.energy.act_pj) << name;
  }
}

// Per-bank refresh needs the bank's refresh time, shorter than the interval between two REFpb of
// a pseudo-channel; its REFpb is priced as 1 / banks of an all-bank REF.
TEST(DramConfig, PerBankRefreshNeedsRfcPbBelowItsInterval) {
  const MemoryConfig hbm = resolve_memory_config("hbm2-2400");
  ASSERT_EQ(hbm.controller.refresh_mode, RefreshMode::kPerBank);
  MemoryConfig all = hbm;
  all.controller.refresh_mode = RefreshMode::kAllBank;
  const MemoryConfig all_bank = parse_memory_config(memory_config_to_json_text(all), "all.json");
  EXPECT_DOUBLE_EQ(hbm.energy.refresh_pj * hbm.org.banks_per_pseudo_channel(),
                   all_bank.energy.refresh_pj);
  EXPECT_EQ(all_bank.refresh_interval(), hbm.timing.refi);
  for (const int rfc_pb : {0, hbm.timing.refi / hbm.org.banks_per_pseudo_channel()}) {
    MemoryConfig bad = hbm;
    bad.timing.rfc_pb = rfc_pb;
    try {
      parse_memory_config(memory_config_to_json_text(bad), "pb.json");
      ADD_FAILURE() << "rfc_pb " << rfc_pb << " accepted";
    } catch (const UserErrors& e) {
      ASSERT_EQ(e.messages().size(), 1u) << e.what();
      EXPECT_EQ(e.messages()[0].rfind("pb.json: /controller/refresh_mode: per_bank refresh", 0), 0u)
          << e.what();
    }
  }
}

constexpr const char* kBadPreset = R"({
  "schema_version": 1,
  "name": "bad",
  "source": "test",
  "organization": {"channels": 3, "bank_groups": 4, "banks_per_group": 4, "rows": 32768,
                   "columns": 32, "bus_width_bits": 128, "burst_length": 4, "colour": 1},
  "tck_ns": 1.0,
  "timing_cycles": {"burst": 2, "cl": 14, "cwl": 4, "rcd_read": 14, "rcd_write": 14, "rp": 14,
                    "ras": 34, "rc": 40, "ccd_s": 1, "ccd_l": 2, "rrd_s": 4, "rrd_l": 6,
                    "faw": 30, "wr": 16, "rtp": 5, "wtr_s": 6, "wtr_l": 8, "rtrs": 2,
                    "rfc": 260, "refi": 3900},
  "command_bus": {"kind": "triple"},
  "controller": {"read_queue_entries": 32, "write_queue_entries": 32,
                 "address_mapping": "rorabgbachxx"},
  "energy": {"source": "test", "vdd_v": 1.2, "idd0_ma": 65, "idd2n_ma": 40, "idd3n_ma": 55,
             "idd4r_ma": 390, "idd4w_ma": 500}
})";

TEST(DramConfig, BadPresetReportsEveryProblemWithItsPointer) {
  try {
    parse_memory_config(kBadPreset, "bad.json");
    FAIL() << "expected UserErrors";
  } catch (const UserErrors& e) {
    const auto& m = e.messages();
    auto has = [&](const std::string& s) { return std::find(m.begin(), m.end(), s) != m.end(); };
    EXPECT_TRUE(
        has("bad.json: /organization/channels: expected a power of two (the address "
            "mapping uses bit fields), got 3"))
        << e.what();
    EXPECT_TRUE(
        has("bad.json: /organization/colour: unknown key \"colour\" (known keys here: "
            "bank_groups, banks_per_group, burst_length, bus_width_bits, channels, "
            "columns, devices_per_channel, pseudo_channels, rows)"))
        << e.what();
    EXPECT_TRUE(has("bad.json: /timing_cycles/rc: expected rc >= ras + rp = 48, got 40"))
        << e.what();
    EXPECT_TRUE(
        has("bad.json: /command_bus/kind: expected one of \"dual\", \"shared\", got "
            "\"triple\""))
        << e.what();
    EXPECT_TRUE(
        has("bad.json: /controller/address_mapping: unknown field \"xx\" in "
            "\"rorabgbachxx\": expected ro, ch, ra, pc, bg, ba or co"))
        << e.what();
    EXPECT_TRUE(has("bad.json: /energy/idd5ab_ma: required key is missing")) << e.what();
    EXPECT_EQ(m.size(), 6u) << e.what();
  }
}

TEST(DramConfig, MalformedJsonNamesLineAndColumn) {
  try {
    parse_memory_config("{\n  \"schema_version\": 1,\n  oops\n}", "broken.json");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("broken.json:3:", 0), 0u) << e.what();
  }
}

TEST(DramAddressMapping, FieldsFollowTheSpecAndRoundTrip) {
  MemoryConfig cfg = resolve_memory_config("hbm2");  // rorabgbachco, 8 channels
  AddressMapper m(cfg.org, cfg.controller.address_mapping);
  // DRAM_REFERENCE.md section 2, 8 channels: [10:6] column, [13:11] channel, [15:14] BA,
  // [17:16] BG, row above.
  const uint64_t addr =
      (uint64_t{5} << 18) | (3u << 16) | (2u << 14) | (6u << 11) | (17u << 6) | 63;
  DramAddress a = m.map(addr);
  EXPECT_EQ(a.row, 5u);
  EXPECT_EQ(a.bank_group, 3u);
  EXPECT_EQ(a.bank, 2u);
  EXPECT_EQ(a.channel, 6u);
  EXPECT_EQ(a.column, 17u);
  EXPECT_EQ(m.unmap(a), addr & ~uint64_t{63});
  EXPECT_EQ(AddressMapper::check_spec("robabgchcora", cfg.org), "");
  EXPECT_EQ(AddressMapper::check_spec("rorobgbachco", cfg.org),
            "field \"ro\" appears twice in \"rorobgbachco\"");
  EXPECT_EQ(AddressMapper::check_spec("robachco", cfg.org),
            "field \"bg\" is missing in \"robachco\": expected fields ro, ch, ra or pc, bg, "
            "ba, co from the most to the least significant bit, each optionally followed by a bit "
            "count, then optionally ':' and XOR rules like \"ra^co0\" (e.g. \"rorabgbachco\" or "
            "\"roco3babgraco2:ra^co0,bg^co1,ba^co3\")");
  EXPECT_EQ(AddressMapper::check_spec("roraco2bgbachco4", cfg.org),
            "\"roraco2bgbachco4\" gives field \"co\" 6 bits, but it has 5 (32 values)");
  EXPECT_EQ(AddressMapper::check_spec("rorabgbachco:bg^bg1", cfg.org),
            "bad XOR rule \"bg^bg1\" in \"rorabgbachco:bg^bg1\": expected "
            "\"<target>^<source><bit>\" with two different fields, like \"ra^co0\"");
}

// Split fields and XOR rules (Ramulator 2's MOP4CLXOR) map every burst of a channel to a distinct
// location and invert exactly.
TEST(DramAddressMapping, SplitFieldsAndXorAreABijection) {
  MemoryConfig cfg = resolve_memory_config("hbm2-pc");
  cfg.org.channels = 1;
  cfg.org.rows = 4;  // a small channel, enumerated completely
  const std::string spec = "roco3babgraco2:ra^co0,bg^co1,ba^co3";
  ASSERT_EQ(AddressMapper::check_spec(spec, cfg.org), "");
  AddressMapper m(cfg.org, spec);
  const uint64_t bursts = cfg.org.capacity_bytes() / uint64_t(cfg.org.access_bytes());
  std::vector<uint8_t> seen(bursts, 0);
  for (uint64_t i = 0; i < bursts; ++i) {
    const uint64_t addr = i * uint64_t(cfg.org.access_bytes());
    const DramAddress a = m.map(addr);
    ASSERT_EQ(m.unmap(a), addr);
    const uint64_t index =
        ((((uint64_t(a.row) * 2 + a.pseudo_channel) * 4 + a.bank_group) * 4 + a.bank) * 32) +
        a.column;
    ASSERT_LT(index, bursts);
    EXPECT_EQ(seen[index]++, 0) << "two addresses map to one location";
  }
  // DRAM_REFERENCE.md section 2, MOP4CLXOR: [6:5] col lo, [7] PC, [9:8] BG, [11:10] BA,
  // [14:12] col hi; then PC ^= col[0], BG ^= col[2:1], BA ^= col[4:3].
  const uint64_t addr =
      (uint64_t{0b101} << 12) | (0b10u << 10) | (0b01u << 8) | (1u << 7) | (0b11u << 5);
  const DramAddress a = m.map(addr);
  const uint32_t col = (0b101u << 2) | 0b11u;
  EXPECT_EQ(a.column, col);
  EXPECT_EQ(a.pseudo_channel, 1u ^ (col & 1));
  EXPECT_EQ(a.bank_group, 0b01u ^ ((col >> 1) & 3));
  EXPECT_EQ(a.bank, 0b10u ^ ((col >> 3) & 3));
}

}  // namespace
}  // namespace npusim::dram
