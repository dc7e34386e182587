// tests/check/seeds.hpp — how many seeds the randomized schedules run.
//
// CI runs each test's committed count. $TALLY_CHECK_SEEDS=K (a whole number, at
// least 1) runs K times as many, from the same first seed, for a soak by hand (the
// commands and results: docs/protocol.md, "Randomized schedules"). Any other value
// fails the test that reads it rather than running the committed count silently.
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace tally::check {

inline std::uint64_t seed_scale() {
  const char* v = std::getenv("TALLY_CHECK_SEEDS");
  if (v == nullptr) return 1;
  char* end = nullptr;
  errno = 0;
  const unsigned long long k = std::strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0' || errno == ERANGE || k == 0 || k > 1'000'000) {
    ADD_FAILURE() << "TALLY_CHECK_SEEDS must be a whole number from 1 to 1,000,000, not '" << v << "'";
    return 1;
  }
  return k;
}

}  // namespace tally::check
