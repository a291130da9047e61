// What every npusim command shares on its command line: Boost.program_options parsing with --help
// and usage errors that name the command.
#pragma once

#include <boost/program_options.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/error.hpp"

namespace npusim {

// A bad flag or flag value: exit code 2, like every UserError.
struct UsageError : UserError {
  using UserError::UserError;
};

// Parses `args` (without the command's name) against `options`, adding --help; returns false when
// --help was printed ("usage: npusim <command> <synopsis>", then the options). A flag that is
// unknown, lacks its value or has a value of the wrong type is a UsageError naming the command.
bool parse_command_line(const std::string& command, const std::string& synopsis,
                        boost::program_options::options_description& options,
                        const std::vector<std::string>& args,
                        boost::program_options::variables_map& vm);

// --memory-fidelity, which run, generate, serve and train take: the description of the flag, and
// its value ("" when not given: the hardware's memory.fidelity).
void add_memory_fidelity_option(boost::program_options::options_description& options);
std::string memory_fidelity_from(const boost::program_options::variables_map& vm);

// Writes `text` to `path` atomically (a temporary file renamed): readers never see a half-written
// file; a failure is a UserError naming the file.
void write_file(const std::filesystem::path& path, const std::string& text);
// Creates the directory a flag (--out, --save-outputs, ...) names, or fails naming the flag; then
// removes the files `stale` lists from it, so that a previous run's results there cannot pass for
// this run's should this one fail.
void create_output_directory(const std::string& flag, const std::filesystem::path& dir,
                             const std::vector<std::string>& stale = {});

}  // namespace npusim
