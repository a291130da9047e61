#include "serving/request_trace.hpp"

#include <gtest/gtest.h>

#include "support/error.hpp"

namespace npusim::serving {
namespace {

std::vector<std::string> errors_of(const std::string& text) {
  try {
    parse_request_trace(text, "t.csv");
  } catch (const UserErrors& e) {
    return e.messages();
  }
  return {};
}

TEST(RequestTrace, ReadsColumnsInAnyOrderSkippingBlankAndCommentLines) {
  const auto r = parse_request_trace(
      "# a trace\nprompt_tokens,id,output_tokens,arrival_s\n\n128, r0, 32, 0.5\n7,r1,1,0\n",
      "t.csv");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].id, "r0");
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.5);
  EXPECT_EQ(r[0].prompt_tokens, 128);
  EXPECT_EQ(r[0].output_tokens, 32);
  EXPECT_EQ(r[0].line, 4);
  EXPECT_EQ(r[1].id, "r1");
  EXPECT_EQ(r[1].output_tokens, 1);
}

TEST(RequestTrace, EveryProblemIsReportedWithItsLine) {
  const auto e = errors_of(
      "id,arrival_s,prompt_tokens,output_tokens\n"
      "a,-1,4,4\n"
      "b,0,0,4\n"
      "a,0,4,x\n"
      "c,0,4\n"
      ",nan,4,4\n");
  ASSERT_EQ(e.size(), 7u);
  EXPECT_EQ(e[0], "t.csv:2: column 'arrival_s': expected a number >= 0, got '-1'");
  EXPECT_EQ(e[1], "t.csv:3: column 'prompt_tokens': expected an integer in [1, 16777216], got '0'");
  EXPECT_EQ(e[2], "t.csv:4: column 'id': 'a' is already the id of line 2");
  EXPECT_EQ(e[3], "t.csv:4: column 'output_tokens': expected an integer in [1, 16777216], got 'x'");
  EXPECT_EQ(e[4],
            "t.csv:5: expected 4 fields (id, arrival_s, prompt_tokens, output_tokens), got 3");
  EXPECT_EQ(e[5], "t.csv:6: column 'id': empty");
  EXPECT_EQ(e[6], "t.csv:6: column 'arrival_s': expected a number >= 0, got 'nan'");
}

TEST(RequestTrace, HeaderMustNameEachColumnOnce) {
  const auto e = errors_of("id,arrival,prompt_tokens,prompt_tokens\n");
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0],
            "t.csv:1: header column 2 'arrival': expected each of id, arrival_s, prompt_tokens, "
            "output_tokens once");
  EXPECT_EQ(e[1],
            "t.csv:1: header column 4 'prompt_tokens': expected each of id, arrival_s, "
            "prompt_tokens, output_tokens once");
  EXPECT_EQ(e[2],
            "t.csv:1: the header has no column 'arrival_s' (expected id, arrival_s, "
            "prompt_tokens, output_tokens)");
  EXPECT_EQ(e[3],
            "t.csv:1: the header has no column 'output_tokens' (expected id, arrival_s, "
            "prompt_tokens, output_tokens)");
}

TEST(RequestTrace, EmptyFileAndMissingFile) {
  const auto e = errors_of("id,arrival_s,prompt_tokens,output_tokens\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("t.csv: no requests"), std::string::npos) << e[0];
  EXPECT_THROW(read_request_trace("/nonexistent/trace.csv"), UserError);
}

}  // namespace
}  // namespace npusim::serving
