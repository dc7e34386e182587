// Fuzz target: the replay DSL (check/replay.hpp). Any text parses to a script or a
// rejected report naming a line; a script of a few ranks then runs to one of the
// three outcomes, with a failure always naming its line. Never a crash or a hang.
#include <cstdlib>
#include <sstream>
#include <string>
#include <variant>

#include "check/replay.hpp"
#include "input.hpp"

using namespace tally::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream text(std::string(reinterpret_cast<const char*>(data), size));
  const auto parsed = replay::parse(text);
  if (const auto* r = std::get_if<replay::report>(&parsed)) {
    FUZZ_CHECK(r->code == replay::outcome::rejected && !r->message.empty());
    return 0;
  }
  const replay::script& s = std::get<replay::script>(parsed);
  FUZZ_CHECK(s.ranks >= 1 && s.ranks <= replay::max_ranks);
  if (s.ranks > 64) return 0;  // valid, but too slow to run per input
  const replay::report r = s.two_level() ? replay::execute_two_level(s) : replay::execute(s);
  FUZZ_CHECK(r.steps + r.expects <= s.body.size());
  if (r.code != replay::outcome::pass) FUZZ_CHECK(!r.message.empty());
  (void)replay::format(r, "fuzz");
  return 0;
}
