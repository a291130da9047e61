// Names are bytes (support/text_escape.hpp): what each escape does to valid and invalid UTF-8 and
// to control characters, that every escaped result is something nlohmann's dump() accepts, and the
// .npy file names of --save-outputs (npusim/tensor_io.hpp).
#include "support/text_escape.hpp"

#include <gtest/gtest.h>

#include <random>

#include "npusim/tensor_io.hpp"
#include "support/stats.hpp"

namespace npusim {
namespace {

TEST(TextEscape, ValidUtf8IsUnchanged) {
  for (const std::string s : {"", "conv1", "/layer1/0/conv1/Conv_output_0",
                              "fc \xC3\xA9\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "a\\xFFb"}) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    EXPECT_EQ(escape_invalid_utf8(s), s);
  }
}

TEST(TextEscape, InvalidBytesBecomeBackslashXHex) {
  EXPECT_EQ(escape_invalid_utf8("conv\xFF\xFE"), "conv\\xFF\\xFE");
  EXPECT_EQ(escape_invalid_utf8("\x80"), "\\x80");                    // lone continuation byte
  EXPECT_EQ(escape_invalid_utf8("a\xC3"), "a\\xC3");                  // truncated sequence
  EXPECT_EQ(escape_invalid_utf8("\xC0\xAF"), "\\xC0\\xAF");           // overlong '/'
  EXPECT_EQ(escape_invalid_utf8("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(escape_invalid_utf8("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_invalid_utf8("\xE4\xB8\xAD\xFF"), "\xE4\xB8\xAD\\xFF");     // valid part kept
  // Control characters are valid UTF-8: JSON escapes them itself; line-oriented text does not.
  EXPECT_EQ(escape_invalid_utf8("a\nb"), "a\nb");
  EXPECT_EQ(printable_text(std::string("a\nb\x00\x7F\xFF", 6)), "a\\x0Ab\\x00\\x7F\\xFF");
  EXPECT_EQ(printable_text("fc \xC3\xA9"), "fc \xC3\xA9");
}

// Whatever bytes a name holds, the escaped JSON dumps (nlohmann throws type_error 316 on invalid
// UTF-8: the failure that lost every result of a run, issue 21 item 6).
TEST(TextEscape, EveryByteStringDumpsAfterEscaping) {
  std::mt19937 rng(21);
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 12, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    nlohmann::json j = {{"name", s}, {s, {1, s}}};
    EXPECT_NO_THROW((void)dump_json(j)) << escape_invalid_utf8(s);
    EXPECT_TRUE(is_valid_utf8(escape_invalid_utf8(s)));
    EXPECT_TRUE(is_valid_utf8(printable_text(s)));
    EXPECT_EQ(is_valid_utf8(s), escape_invalid_utf8(s) == s);
  }
  const nlohmann::json raw = {{"name", "conv\xFF"}};
  EXPECT_THROW((void)raw.dump(), nlohmann::json::type_error);
  EXPECT_EQ(dump_json(raw), R"({"name":"conv\\xFF"})");
}

TEST(TextEscape, StatsRegistryEscapesNames) {
  stats::Registry reg;
  reg.value("workload", "", "network", "net\xFE");
  reg.column("layers", 1, "name", "", "layer name", [](size_t) { return "conv\xFF"; });
  const nlohmann::json j = reg.to_json();
  EXPECT_EQ(j["workload"], "net\\xFE");
  EXPECT_EQ(j["layers"][0]["name"], "conv\\xFF");
  EXPECT_NO_THROW((void)j.dump());
}

TEST(NpyFileNames, DifferentNamesNeverShareAFile) {
  std::vector<Tensor> tensors;
  for (const char* name : {"a/b", "a_b", "x\xFF", "x\xFE", "a_b", "ok"}) {
    tensors.push_back(Tensor{name, "", {}, {}});
  }
  std::vector<Tensor*> all;
  for (Tensor& t : tensors) all.push_back(&t);
  const std::vector<std::string> renamed = assign_file_names(all);
  EXPECT_EQ(tensors[1].file_name, "a_b");  // its own file name: kept
  EXPECT_EQ(tensors[4].file_name, "a_b");  // the same name, the same file
  EXPECT_EQ(tensors[0].file_name, "a_b~2");
  EXPECT_EQ(tensors[2].file_name, "x_");
  EXPECT_EQ(tensors[3].file_name, "x_~2");
  EXPECT_EQ(tensors[5].file_name, "ok");
  ASSERT_EQ(renamed.size(), 2u);
  EXPECT_EQ(renamed[0], "a_b~2.npy <- a/b");
  EXPECT_EQ(renamed[1], "x_~2.npy <- x\\xFE");
}

}  // namespace
}  // namespace npusim
