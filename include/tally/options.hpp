// tally/options.hpp — what a tally::mutex is created with, and what it counts.
//
// Needs no MPI, so that code which only configures or reports (and tally's own
// runtime) can use these without the facade.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "tally/common.h"

namespace tally {

// Who drives MPI progress for the mutex (docs/design.md, "Progress"). Thread levels
// each mode needs:
enum class progress_mode {
  in_calls,   // inside every tally call and poll(); needs MPI_THREAD_SINGLE or more
  thread,     // plus the process's one progress thread, shared by every mutex in
              // this mode; needs MPI_THREAD_MULTIPLE
  automatic,  // thread where MPI provides MPI_THREAD_MULTIPLE, else in_calls (the
              // default: then a rank that holds the token idle while it blocks in
              // another MPI call cannot stall the others)
};

// How the progress thread waits between polls (thread mode only). On a machine with
// one core per rank the thread competes with the application for that core.
struct poll_policy {
  enum class strategy {
    spin,      // poll continuously: lowest latency, burns a core
    backoff,   // spin while there is traffic, then sleep, doubling up to `interval`
    sleep,     // poll, then sleep `interval`
    adaptive,  // backoff while only the thread can answer for this rank (the token
               // idle here, a withdrawn or asynchronous request, a send in flight);
               // otherwise park, draining REQUESTs every `idle_drain` (the default)
  };
  strategy how = strategy::adaptive;
  // The longest wait between two polls while watching (backoff: while idle too).
  // 1 ms: a progress thread that shares its rank's core then costs that rank about
  // 2-3% of its compute time, where 100 us cost about 25% (docs/benchmarks.md).
  std::chrono::microseconds interval{1000};
  std::chrono::microseconds idle_drain{10'000};
};

// How the ranks of the mutex's communicator are organized (docs/design.md,
// "Two-level lock").
enum class topology {
  flat,       // one Suzuki–Kasami participant per rank: every remote entry costs n-1
              // REQUESTs and the token (4n bytes)
  node,       // two levels: the ranks of a node (MPI_COMM_TYPE_SHARED) queue in shared
              // memory and pass the lock with no message; Suzuki–Kasami runs between
              // nodes (K-1 REQUESTs, a token of 4K bytes for K nodes)
  automatic,  // the environment variable TALLY_TOPOLOGY (flat, node or auto) if set;
              // else node where some node holds two or more of the ranks, else flat
};

struct options {
  int initial_owner = 0;  // rank that holds the token at creation
  enum topology topology = topology::automatic;
  // topology::node: how many times in a row a node may pass the lock between its
  // own ranks while another node waits for it (>= 1). Larger: more cheap local
  // handoffs per token move; smaller: a shorter bound on a remote node's wait.
  unsigned pass_bound = 16;
  progress_mode progress = progress_mode::automatic;
  poll_policy polling{};
  // Bytes of application state that travel inside the token (see mutex::payload()).
  // Must be equal on all ranks and at most max_payload_bytes.
  std::size_t payload_bytes = 0;
  // The mutex's name in diagnostics; empty: "mutex #k" (k-th created by the process).
  std::string name;
  // A rank that waits this long in an acquisition prints one diagnostic that names
  // the mutex and the likely cause (it never aborts). Zero turns it off. Unset: the
  // environment variable TALLY_WAIT_WARNING (seconds), else 30 s.
  std::optional<std::chrono::milliseconds> wait_warning;
  // A directory to write this mutex's handoff timeline into at free() (one file per
  // rank; tools/tally-trace merges them, docs/design.md "Timeline"). Empty: the
  // environment variable TALLY_TRACE if set, else off.
  std::string trace;
};

// Upper bound on options::payload_bytes (1 MiB): the token moves on every handoff.
inline constexpr std::size_t max_payload_bytes = TALLY_MAX_PAYLOAD_BYTES;

// Upper bound on options::pass_bound.
inline constexpr unsigned max_pass_bound = 1u << 20;

// Upper bound on poll_policy::interval and idle_drain (1 s): a longer wait between
// polls would stretch every handoff to it.
inline constexpr std::chrono::microseconds max_poll_interval{1'000'000};

// Per-rank counters since creation: the C API's tally_stats (tally/common.h).
using stats = ::tally_stats;

}  // namespace tally
