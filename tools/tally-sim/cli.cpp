#include "cli.hpp"

#include <algorithm>
#include <ostream>

namespace tally::tools::cli {

namespace {

void usage(std::span<const subcommand> table, std::ostream& os) {
  os << "usage: tally-sim COMMAND [ARGS]\n"
        "Drives the tally protocol core without MPI. Commands:\n";
  for (const subcommand& c : table) os << "  " << c.synopsis << "\n      " << c.summary << "\n";
  os << "Run 'tally-sim COMMAND --help' for a command's options.\n";
}

}  // namespace

int dispatch(std::span<const subcommand> table, std::span<const std::string_view> args, std::ostream& out,
             std::ostream& err) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    usage(table, out);
    return 0;
  }
  const auto it =
      std::find_if(table.begin(), table.end(), [&](const subcommand& c) { return !args.empty() && c.name == args[0]; });
  if (it == table.end()) {
    if (!args.empty()) err << "tally-sim: unknown command '" << args[0] << "'\n";
    usage(table, err);
    return 2;
  }
  return it->run(args.subspan(1), out, err);
}

}  // namespace tally::tools::cli
