// sim/options.hpp — `tally-sim run`'s command line: one table of options (each
// once: name, value, help, what it sets), read by both the help text and the parser.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/run.hpp"

namespace tally::sim {

// A bad command line; its text names the option and what was expected.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct options {
  run_config cfg;
  std::vector<std::string> notes;  // deprecation notes, for standard error
  bool json = false;
  std::optional<bool> progress;
  bool help = false;
};

// The help text of `tally-sim run`.
std::string help_text();
// Parses and checks `tally-sim run`'s arguments; throws usage_error.
options parse_options(const std::vector<std::string>& args);

}  // namespace tally::sim
