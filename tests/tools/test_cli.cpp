// Unit tests of tally-sim's subcommand table (tools/tally-sim/cli.hpp).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "check/replay.hpp"
#include "cli.hpp"

namespace {

namespace replay = tally::check::replay;

// A subcommand that records what it was given.
std::vector<std::string> seen;
int record(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
  seen.assign(args.begin(), args.end());
  out << "ran\n";
  return 7;
}

TEST(Cli, DispatchesByName) {
  const tally::tools::cli::subcommand table[] = {
      {"replay", "replay FILE", "replays", &replay::main},
      {"probe", "probe [ARGS]", "records its arguments", &record},
  };
  std::ostringstream out, err;
  const std::vector<std::string_view> args{"probe", "x", "--y"};
  EXPECT_EQ(tally::tools::cli::dispatch(table, args, out, err), 7);
  EXPECT_EQ(seen, (std::vector<std::string>{"x", "--y"}));
  EXPECT_EQ(out.str(), "ran\n");
  EXPECT_EQ(err.str(), "");
}

TEST(Cli, UsageErrorsExitTwoAndHelpExitsZero) {
  const tally::tools::cli::subcommand table[] = {{"probe", "probe [ARGS]", "records", &record}};
  for (const std::vector<std::string_view>& args : {std::vector<std::string_view>{}, {"nope"}, {"-x"}}) {
    std::ostringstream out, err;
    EXPECT_EQ(tally::tools::cli::dispatch(table, args, out, err), 2);
    EXPECT_NE(err.str().find("usage: tally-sim COMMAND"), std::string::npos);
    EXPECT_NE(err.str().find("probe [ARGS]"), std::string::npos);
    EXPECT_EQ(out.str(), "");
  }
  std::ostringstream out, err;
  EXPECT_EQ(tally::tools::cli::dispatch(table, std::vector<std::string_view>{"--help"}, out, err), 0);
  EXPECT_NE(out.str().find("usage: tally-sim COMMAND"), std::string::npos);
}

}  // namespace
