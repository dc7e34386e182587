// tally-sim: the simulator's command line. To add a command, add a row here.
#include <iostream>
#include <string_view>
#include <vector>

#include "sim/cli.hpp"
#include "sim/replay.hpp"
#include "sim/run.hpp"

namespace {

constexpr tally::sim::cli::subcommand commands[] = {
    {"replay", "replay FILE",
     "run a scripted trace on the protocol core, checking every invariant after every step",
     &tally::sim::replay::main},
    {"run", "run --nodes N [options]",
     "simulate N ranks under suzuki-kasami, ricart-agrawala or central over a LogGP network",
     &tally::sim::run::main},
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  return tally::sim::cli::dispatch(commands, args, std::cout, std::cerr);
}
