// With default options, a rank that holds the token idle and then blocks in another
// MPI call (a barrier, an allreduce, a receive) or computes without calling tally
// does not stall the others: MPI_THREAD_MULTIPLE is granted here, so the default
// progress is a thread. Each scenario forces the trap: rank 0 keeps the token idle
// and blocks, and only then do the other ranks ask for it (they wait for its "go"),
// so progress in calls would hang every one of them. A mutex spun on with
// zero-timeout acquisitions while the rank holds another mutex's idle token is the
// second trap; every tally call progresses every mutex of the process. Under the
// node topology the trap is rank 0 as its node's leader, which alone hears the
// other nodes' REQUESTs (tests/multinode runs it across emulated nodes; on one
// node every rank takes an idle token from shared memory, and no message moves).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "support.hpp"
#include "tally/tally.h"

namespace {

using tally::test::count_nodes;
using tally::test::global_sum;
using tally::test::nodes_of_ranks;
using tally::test::progress_barrier;
using tally::test::run_topology;
using tally::test::world_rank;
using tally::test::world_size;

constexpr int tag_go = 91;
constexpr int tag_done = 92;

// Rank 0 takes and leaves the lock (it starts with the token, so it keeps it idle),
// tells every other rank to go, then blocks in `block`. The others lock and unlock.
template <class Block>
void holder_blocks(tally::mutex& m, Block&& block) {
  const int n = world_size();
  if (world_rank() == 0) {
    m.lock();
    m.unlock();
    for (int r = 1; r < n; ++r) MPI_Send(nullptr, 0, MPI_BYTE, r, tag_go, MPI_COMM_WORLD);
    block();
  } else {
    MPI_Recv(nullptr, 0, MPI_BYTE, 0, tag_go, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    m.lock();
    m.unlock();
    block();
  }
}

TEST(DefaultProgress, IsAThreadWhenMpiGrantsThreadMultiple) {
  tally::mutex m(MPI_COMM_WORLD);
  EXPECT_EQ(m.progress(), tally::progress_mode::thread);
  tally_mutex c = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &c), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_free(&c), TALLY_SUCCESS);
}

TEST(DefaultProgress, HolderInABarrier) {
  tally::mutex m(MPI_COMM_WORLD);
  holder_blocks(m, [] { MPI_Barrier(MPI_COMM_WORLD); });
  EXPECT_EQ(m.stats().acquisitions, 1u);
  if (m.topology() == tally::topology::flat) {
    if (world_rank() == 0 && world_size() > 1) {
      EXPECT_GE(m.stats().tokens_sent, 1u);
    }
  } else {
    // The token left rank 0's node once for each other node, whichever rank of it
    // sent it; where every rank shares one node it never moved.
    const int nodes = count_nodes(nodes_of_ranks());
    const std::uint64_t all = global_sum(m.stats().tokens_sent);
    EXPECT_GE(all, static_cast<std::uint64_t>(nodes - 1));
    if (nodes == 1) {
      EXPECT_EQ(all, 0u);
    }
  }
}

TEST(DefaultProgress, HolderInAnAllreduce) {
  tally::mutex m(MPI_COMM_WORLD);
  int one = 1, all = 0;
  holder_blocks(m, [&] { MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); });
  EXPECT_EQ(all, world_size());
}

TEST(DefaultProgress, HolderInAReceiveFromAnotherRank) {
  // Rank 0 waits in MPI_Recv for the last rank, which sends only once it held the lock.
  tally::mutex m(MPI_COMM_WORLD);
  const int n = world_size(), last = n - 1;
  holder_blocks(m, [&] {
    if (n == 1) return;
    if (world_rank() == 0) MPI_Recv(nullptr, 0, MPI_BYTE, last, tag_done, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (world_rank() == last) MPI_Send(nullptr, 0, MPI_BYTE, 0, tag_done, MPI_COMM_WORLD);
  });
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(DefaultProgress, HolderComputingWithoutCallingTally) {
  // Rank 0 computes until every other rank reports that it held the lock; it makes
  // no tally call meanwhile (MPI_Iprobe on its own communicator progresses no tally
  // code). It gives up after 60 s, which only a broken progress would need.
  tally::mutex m(MPI_COMM_WORLD);
  const int n = world_size();
  int reported = 0;
  holder_blocks(m, [&] {
    if (world_rank() != 0) {
      MPI_Send(nullptr, 0, MPI_BYTE, 0, tag_done, MPI_COMM_WORLD);
      return;
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    volatile double x = 1.0;
    while (reported < n - 1 && std::chrono::steady_clock::now() < give_up) {
      for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, tag_done, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        MPI_Recv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, tag_done, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++reported;
      }
    }
  });
  if (world_rank() == 0) {
    EXPECT_EQ(reported, n - 1) << "the others did not get the lock while rank 0 computed";
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Rank r holds mutex r's token idle and spins on zero-timeout acquisitions of mutex
// r+1 (mod n): only if spinning on one mutex progresses the others does anyone get
// anywhere. Progress in calls, so no thread helps.
class SpinOnAnother : public ::testing::TestWithParam<bool> {};

TEST_P(SpinOnAnother, ZeroTimeoutAcquisitionsProgressEveryMutex) {
  const int n = world_size(), me = world_rank();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const bool c_api = GetParam();
  constexpr int max_mutexes = 8;
  ASSERT_LE(n, max_mutexes);
  tally::options o;
  o.progress = tally::progress_mode::in_calls;
  std::vector<std::unique_ptr<tally::mutex>> cpp;
  std::vector<tally_mutex> c(static_cast<std::size_t>(n), nullptr);
  tally_options co;
  tally_options_init(&co);
  co.progress = TALLY_PROGRESS_IN_CALLS;
  for (int k = 0; k < n; ++k) {
    o.initial_owner = co.initial_owner = k;
    if (c_api)
      ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, &co, &c[static_cast<std::size_t>(k)]), TALLY_SUCCESS);
    else
      cpp.push_back(std::make_unique<tally::mutex>(MPI_COMM_WORLD, o));
  }
  // Nobody asks before every creation is over: a creation's collective wait polls
  // the other mutexes and could answer a request early, hiding the trap.
  MPI_Barrier(MPI_COMM_WORLD);
  const auto want = static_cast<std::size_t>((me + 1) % n);
  long spins = 0;
  for (bool got = false; !got; ++spins) {
    if (c_api) {
      int acquired = 0;
      ASSERT_EQ(tally_mutex_timedlock(c[want], 0.0, &acquired), TALLY_SUCCESS);
      got = acquired;
    } else {
      got = cpp[want]->try_lock_for(std::chrono::seconds(0));
    }
  }
  if (c_api) {
    ASSERT_EQ(tally_mutex_unlock(c[want]), TALLY_SUCCESS);
  } else {
    cpp[want]->unlock();
  }
  EXPECT_GT(spins, 0);
  // Free collectively; free's drain keeps every live mutex answering meanwhile.
  for (int k = 0; k < n; ++k) {
    if (c_api)
      EXPECT_EQ(tally_mutex_free(&c[static_cast<std::size_t>(k)]), TALLY_SUCCESS);
    else
      cpp[static_cast<std::size_t>(k)]->free();
  }
}

TEST(SpinOnAnother, PlainTryLockAnswersForTheOtherMutexes) {
  // Rank 0 holds `a` idle and spins on try_lock() of `b` (held idle by the last
  // rank, so it never succeeds) until every other rank reports that it took `a`
  // with a blocking lock(): only rank 0's spinning can answer for `a`.
  const int n = world_size(), me = world_rank();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const std::vector<int> node_of = nodes_of_ranks();
  if (run_topology() == "node" && node_of.front() == node_of.back())
    GTEST_SKIP() << "rank 0 shares a node with the last rank: its try_lock() takes b's idle token";
  tally::options o;
  o.progress = tally::progress_mode::in_calls;
  o.initial_owner = 0;
  tally::mutex a(MPI_COMM_WORLD, o);
  o.initial_owner = n - 1;
  tally::mutex b(MPI_COMM_WORLD, o);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    for (int reported = 0; reported < n - 1;) {
      EXPECT_FALSE(b.try_lock());
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, tag_done, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        MPI_Recv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, tag_done, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++reported;
      }
    }
  } else {
    a.lock();
    a.unlock();
    MPI_Send(nullptr, 0, MPI_BYTE, 0, tag_done, MPI_COMM_WORLD);
  }
  progress_barrier(MPI_COMM_WORLD, [&] {
    a.poll();
    b.poll();
  });
}

INSTANTIATE_TEST_SUITE_P(Api, SpinOnAnother, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "c" : "cpp"; });

}  // namespace
