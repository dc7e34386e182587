// tools/tally-sim/main.cpp — tally-sim, the checker's and the simulator's command
// line. To add a command, add a row here.
#include <iostream>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "check/replay.hpp"
#include "sim/run.hpp"

namespace {

constexpr tally::tools::cli::subcommand commands[] = {
    {"replay", "replay FILE", "run a scripted trace on the protocol core, checking every invariant after every step",
     &tally::check::replay::main},
    {"run", "run --ranks N [options]",
     "simulate N ranks under suzuki-kasami, ricart-agrawala or central over a LogGP network", &tally::sim::run::main},
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  return tally::tools::cli::dispatch(commands, args, std::cout, std::cerr);
}
