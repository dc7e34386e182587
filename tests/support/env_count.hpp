// tests/support/env_count.hpp — the one parser of the counts tests read from the
// environment (TALLY_TEST_ITERATIONS, TALLY_TEARDOWN_CYCLES, TALLY_TEST_NODES,
// TALLY_TEST_MUTEXES, TALLY_CHECK_SEEDS). Needs no MPI.
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>

namespace tally::test {

// `fallback` when `name` is unset; a value that is not a whole number from 1 to
// `most` fails the test that reads it (and `fallback` is used) rather than running
// another count silently.
inline long env_count(const char* name, long fallback, long most = 10'000'000) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  errno = 0;
  const long k = std::strtol(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0' || errno == ERANGE || k < 1 || k > most) {
    ADD_FAILURE() << name << " must be a whole number from 1 to " << most << ", not '" << v << "'";
    return fallback;
  }
  return k;
}

}  // namespace tally::test
