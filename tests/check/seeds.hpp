// tests/check/seeds.hpp — how many seeds the randomized schedules run.
//
// CI runs each test's committed count. $TALLY_CHECK_SEEDS=K (a whole number, at
// least 1) runs K times as many, from the same first seed, for a soak by hand (the
// commands and results: docs/protocol.md, "Randomized schedules"). Any other value
// fails the test that reads it rather than running the committed count silently.
#pragma once

#include <cstdint>

#include "env_count.hpp"

namespace tally::check {

inline std::uint64_t seed_scale() {
  return static_cast<std::uint64_t>(tally::test::env_count("TALLY_CHECK_SEEDS", 1, 1'000'000));
}

}  // namespace tally::check
