// Shared helpers for the MPI tests (tests/ and the benchmark's self-test).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "env_count.hpp"
#include "helpers/rma_window.h"
#include "tally/error.hpp"
#include "tally/mutex.hpp"

namespace tally::test {

// The topology this run of a suite is registered for: tests/CMakeLists.txt sets
// TALLY_TOPOLOGY (flat or node) for each registration, which the default
// topology::automatic follows. Empty when unset.
inline std::string run_topology() {
  const char* t = std::getenv("TALLY_TOPOLOGY");
  return t ? t : "";
}

// A test of flat-topology semantics (which rank holds the token idle, what a remote
// entry costs in messages): skipped in the node-topology run of its suite.
#define TALLY_FLAT_SEMANTICS()                                                         \
  do {                                                                                 \
    if (::tally::test::run_topology() == "node")                                       \
      GTEST_SKIP() << "asserts where the flat topology keeps the token; the flat run " \
                      "of this suite covers it";                                       \
  } while (0)

// Runs f, expecting tally::error with `code`; returns its message (a test failure,
// and an empty message, if nothing or another code was thrown).
template <class F>
std::string expect_error(errc code, F&& f) {
  try {
    f();
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no tally::error thrown, expected code " << static_cast<int>(code);
  return {};
}

// The name of a progress mode in a parameterized test's name: "in_calls" or "thread".
struct progress_name {
  template <class Param>
  std::string operator()(const Param& p) const {
    return p.param == tally::progress_mode::thread ? "thread" : "in_calls";
  }
};

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// The sum of v over MPI_COMM_WORLD. Collective.
inline std::uint64_t global_sum(std::uint64_t v) {
  std::uint64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

// Every rank's node, as the split the node topology uses sees it (a node is named
// by its lowest rank). Collective over MPI_COMM_WORLD.
inline std::vector<int> nodes_of_ranks() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank(), MPI_INFO_NULL, &node);
  int leader = world_rank();
  MPI_Bcast(&leader, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  std::vector<int> out(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&leader, 1, MPI_INT, out.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return out;
}

inline int count_nodes(const std::vector<int>& node_of) {
  std::vector<int> v = node_of;
  std::sort(v.begin(), v.end());
  return static_cast<int>(std::unique(v.begin(), v.end()) - v.begin());
}

// Entries of a mutex's token (LN and queue): one per node under topology::node,
// one per rank under flat. Collective over MPI_COMM_WORLD.
inline int token_entries(const tally::mutex& m) {
  const int k = count_nodes(nodes_of_ranks());
  return m.topology() == tally::topology::node ? k : m.size();
}

// A barrier that keeps driving the mutex while it waits, so that a rank holding
// the token idle keeps answering REQUESTs (progress in calls has no other source).
// Point to point (a dissemination barrier on tag progress_barrier_tag, which the
// tests use for nothing else), not MPI_Ibarrier: Open MPI 4.1.4's nonblocking
// barrier, tested in a loop while a progress thread also calls MPI, was seen to
// never complete on two ranks after the third had left it (mpi_progress under
// ASan, 3 ranks; docs/design.md, "Known environment issue"). It calls the PMPI
// entry points, so that the tests' own MPI_Isend counters and wrappers never see it.
inline constexpr int progress_barrier_tag = 32000;
template <class Poll>
void progress_barrier(MPI_Comm comm, Poll&& poll) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int k = 1; k < size; k *= 2) {  // messages of later rounds and barriers queue in order
    char out = 0, in = 0;
    MPI_Request reqs[2];
    PMPI_Irecv(&in, 1, MPI_CHAR, (rank - k + size) % size, progress_barrier_tag, comm, &reqs[0]);
    PMPI_Isend(&out, 1, MPI_CHAR, (rank + k) % size, progress_barrier_tag, comm, &reqs[1]);
    int done = 0;
    for (unsigned spin = 0; !done; ++spin) {
      poll();
      PMPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE);
      if (spin > 1024) std::this_thread::yield();  // more ranks than cores
    }
  }
}

inline void progress_barrier(MPI_Comm comm, tally::mutex& m) {
  progress_barrier(comm, [&] { m.poll(); });
}

// A counter that lives in an MPI window at rank `home` of comm, read and written
// with two separate one-sided operations (a non-atomic read-modify-write), plus an
// occupancy word swapped in on entry and out on leave, which detects overlapping
// critical sections. Collective construction and destruction. `hold` is busy time
// between the read and the write, to widen the window an overlapping entry would
// hit. Every operation is rma_window_apply(): complete at the target when it
// returns, and kind to a target that shares this rank's core.
class shared_counter {
 public:
  shared_counter(MPI_Comm comm, int home, std::chrono::nanoseconds hold = {}) : home_(home), hold_(hold) {
    rma_window_allocate(2 * sizeof(std::int64_t), sizeof(std::int64_t), comm, &w_);
    win_ = w_.win;
    base_ = static_cast<std::int64_t*>(w_.base);
    base_[0] = 0;
    base_[1] = -1;
    MPI_Win_lock_all(0, win_);
    MPI_Barrier(comm);
  }
  ~shared_counter() {
    MPI_Win_unlock_all(win_);
    rma_window_free(&w_);
  }
  shared_counter(const shared_counter&) = delete;
  shared_counter& operator=(const shared_counter&) = delete;

  // Marks the CS as occupied by `me`; returns the previous occupant (-1 if none).
  std::int64_t enter(std::int64_t me) { return apply(1, me, MPI_REPLACE); }
  // Clears the occupancy; returns the previous occupant (`me` if all is well).
  std::int64_t leave(std::int64_t /*me*/) { return apply(1, -1, MPI_REPLACE); }

  // Non-atomic increment: read, hold, yield, write.
  void increment() {
    const std::int64_t v = value();
    for (const auto end = std::chrono::steady_clock::now() + hold_; std::chrono::steady_clock::now() < end;) {
    }
    std::this_thread::yield();
    write(v + 1);
  }

  std::int64_t value() { return apply(0, 0, MPI_NO_OP); }
  void write(std::int64_t v) { apply(0, v, MPI_REPLACE); }

 private:
  std::int64_t apply(MPI_Aint disp, std::int64_t operand, MPI_Op op) {
    return rma_window_apply(win_, home_, disp, operand, op);
  }

  int home_;
  std::chrono::nanoseconds hold_;
  rma_window w_{};
  std::int64_t* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace tally::test
