// A serving workload: requests arriving over time, each with a prompt and a number of tokens to
// generate, read from a CSV file with the columns `id,arrival_s,prompt_tokens,output_tokens`
// (docs/serving.md). scripts/make_request_trace.py writes synthetic ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::serving {

struct Request {
  std::string id;
  double arrival_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;  // tokens to generate, the first one included (at least 1)
  int line = 0;               // where it stands in its file, for messages (0: not from a file)
};

// Parses a trace held in memory; `path` names it in messages. Every problem of the file is
// reported at once (UserErrors): "trace.csv:7: column 'arrival_s': expected a number >= 0, got
// 'x'". The requests come back in file order.
std::vector<Request> parse_request_trace(const std::string& text, const std::string& path);
// Reads and parses a trace file.
std::vector<Request> read_request_trace(const std::string& path);

}  // namespace npusim::serving
