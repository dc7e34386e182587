// tally/options.hpp — what a tally::mutex is created with, and what it counts.
//
// Needs no MPI, so that code which only configures or reports (and tally's own
// runtime) can use these without the facade.
#pragma once

#include <chrono>
#include <cstddef>

#include "tally/common.h"

namespace tally {

// Who drives MPI progress for the mutex. Thread levels each mode needs:
enum class progress_mode {
  in_calls,  // inside every tally call and poll(); needs MPI_THREAD_SINGLE or more
  thread,    // plus a background thread per mutex; needs MPI_THREAD_MULTIPLE
};

// How the progress thread waits between polls (thread mode only). On a machine with
// one core per rank the thread competes with the application for that core.
struct poll_policy {
  enum class strategy {
    spin,     // poll continuously: lowest latency, burns a core
    backoff,  // spin while there is traffic, then sleep, doubling up to `interval`
    sleep,    // poll, then sleep `interval`
  };
  strategy how = strategy::backoff;
  std::chrono::microseconds interval{100};
};

struct options {
  int initial_owner = 0;  // rank that holds the token at creation
  progress_mode progress = progress_mode::in_calls;
  poll_policy polling{};
  // Bytes of application state that travel inside the token (see mutex::payload()).
  // Must be equal on all ranks and at most max_payload_bytes.
  std::size_t payload_bytes = 0;
};

// Upper bound on options::payload_bytes (1 MiB): the token moves on every handoff.
inline constexpr std::size_t max_payload_bytes = TALLY_MAX_PAYLOAD_BYTES;

// Per-rank counters since creation: the C API's tally_stats (tally/common.h).
using stats = ::tally_stats;

}  // namespace tally
