// tools/tally-sim/cli.hpp — the subcommand table behind `tally-sim`.
//
// Each subcommand is one row: a name, a synopsis for the usage text, and an entry
// point that receives the words after its name and returns the exit status.
#pragma once

#include <iosfwd>
#include <span>
#include <string_view>

namespace tally::tools::cli {

using entry = int (*)(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

struct subcommand {
  std::string_view name;
  std::string_view synopsis;  // "replay FILE"
  std::string_view summary;   // one line
  entry run;
};

// Runs the subcommand named by args[0]. With no words, an unknown name or a
// leading option other than --help/-h: usage on `err`, status 2. With --help or
// -h: usage on `out`, status 0.
int dispatch(std::span<const subcommand> table, std::span<const std::string_view> args, std::ostream& out,
             std::ostream& err);

}  // namespace tally::tools::cli
