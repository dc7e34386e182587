// Combinations: several mutexes interleaved, mutexes on sub-communicators, the
// Boost.MPI constructor, and several threads per rank sharing one mutex.
#include <gtest/gtest.h>

#include <boost/mpi/communicator.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

using tally::test::progress_barrier;
using tally::test::shared_counter;
using tally::test::world_rank;
using tally::test::world_size;

tally::options make(int owner, tally::progress_mode mode) {
  tally::options o;
  o.initial_owner = owner;
  o.progress = mode;
  return o;
}

TEST(Combinations, SeveralMutexesInterleavedStayIndependent) {
  const int n = world_size();
  tally::mutex a(MPI_COMM_WORLD, make(0, tally::progress_mode::in_calls));
  tally::mutex b(MPI_COMM_WORLD, make(n - 1, tally::progress_mode::thread));
  tally::mutex c(MPI_COMM_WORLD, make(n / 2, tally::progress_mode::in_calls));
  constexpr int rounds = 60;
  {
    shared_counter ca(MPI_COMM_WORLD, 0), cb(MPI_COMM_WORLD, n - 1), cc(MPI_COMM_WORLD, n / 2);
    std::int64_t overlaps = 0;
    for (int i = 0; i < rounds; ++i) {
      {
        // Nested in one global order. (std::lock/std::scoped_lock over several tally
        // mutexes can livelock: try_lock succeeds only where the token sits idle.)
        std::lock_guard ga(a);
        std::lock_guard gb(b);
        overlaps += ca.enter(world_rank()) != -1;
        overlaps += cb.enter(world_rank()) != -1;
        ca.increment();
        cb.increment();
        overlaps += ca.leave(world_rank()) != world_rank();
        overlaps += cb.leave(world_rank()) != world_rank();
      }
      std::lock_guard g(c);
      overlaps += cc.enter(world_rank()) != -1;
      cc.increment();
      overlaps += cc.leave(world_rank()) != world_rank();
    }
    progress_barrier(MPI_COMM_WORLD, [&] {
      a.poll();
      c.poll();
    });
    EXPECT_EQ(overlaps, 0);
    EXPECT_EQ(ca.value(), std::int64_t{rounds} * n);
    EXPECT_EQ(cb.value(), std::int64_t{rounds} * n);
    EXPECT_EQ(cc.value(), std::int64_t{rounds} * n);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  EXPECT_EQ(a.stats().acquisitions, static_cast<std::uint64_t>(rounds));
  EXPECT_EQ(c.stats().acquisitions, static_cast<std::uint64_t>(rounds));
}

TEST(Combinations, MutexesOnSubCommunicatorsAndOnWorld) {
  const int me = world_rank();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  int half_size = 0;
  MPI_Comm_size(half, &half_size);
  constexpr int rounds = 50;
  {
    tally::mutex local(half, make(half_size - 1, tally::progress_mode::in_calls));
    tally::mutex global(MPI_COMM_WORLD, make(0, tally::progress_mode::in_calls));
    EXPECT_EQ(local.size(), half_size);
    shared_counter per_half(half, 0);
    shared_counter all(MPI_COMM_WORLD, world_size() - 1);
    std::int64_t overlaps = 0;
    for (int i = 0; i < rounds; ++i) {
      {
        std::lock_guard g(local);
        overlaps += per_half.enter(local.rank()) != -1;
        per_half.increment();
        overlaps += per_half.leave(local.rank()) != local.rank();
      }
      std::lock_guard g(global);
      overlaps += all.enter(me) != -1;
      all.increment();
      overlaps += all.leave(me) != me;
    }
    progress_barrier(MPI_COMM_WORLD, [&] {
      local.poll();
      global.poll();
    });
    EXPECT_EQ(overlaps, 0);
    EXPECT_EQ(per_half.value(), std::int64_t{rounds} * half_size);
    EXPECT_EQ(all.value(), std::int64_t{rounds} * world_size());
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Comm_free(&half);
}

TEST(Combinations, BoostMpiCommunicatorConstructor) {
  boost::mpi::communicator world;
  boost::mpi::communicator pairs = world.split(world.rank() / 2);
  tally::mutex m(world);
  tally::mutex p(pairs, make(0, tally::progress_mode::thread));
  EXPECT_EQ(m.rank(), world.rank());
  EXPECT_EQ(m.size(), world.size());
  EXPECT_EQ(p.size(), pairs.size());
  for (int i = 0; i < 20; ++i) {
    std::lock_guard g(m);
    std::lock_guard h(p);
  }
  progress_barrier(MPI_COMM_WORLD, m);
  EXPECT_EQ(m.stats().acquisitions, 20u);
  EXPECT_EQ(p.stats().acquisitions, 20u);
}

class Threads : public ::testing::TestWithParam<tally::progress_mode> {};

TEST_P(Threads, ThreadsOfOneRankAreMutuallyExcludedToo) {
  int level = 0;
  MPI_Query_thread(&level);
  ASSERT_EQ(level, MPI_THREAD_MULTIPLE);
  constexpr int threads = 3, rounds = 40;
  tally::mutex m(MPI_COMM_WORLD, make(0, GetParam()));
  std::int64_t local_count = 0;  // deliberately not atomic: guarded by m
  std::int64_t overlaps = 0;
  {
    shared_counter all(MPI_COMM_WORLD, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::int64_t id = world_rank() * threads + t;
        for (int i = 0; i < rounds; ++i) {
          std::lock_guard g(m);
          overlaps += all.enter(id) != -1;
          ++local_count;
          all.increment();
          overlaps += all.leave(id) != id;
        }
      });
    for (auto& th : pool) th.join();
    progress_barrier(MPI_COMM_WORLD, m);
    EXPECT_EQ(overlaps, 0);
    EXPECT_EQ(local_count, std::int64_t{threads} * rounds);
    EXPECT_EQ(all.value(), std::int64_t{threads} * rounds * world_size());
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // One broadcast at most per remote entry, even with several threads waiting.
  const tally::stats s = m.stats();
  EXPECT_EQ(s.acquisitions, static_cast<std::uint64_t>(threads * rounds));
  EXPECT_LE(s.requests_sent, (s.acquisitions - s.local_acquisitions) * static_cast<std::uint64_t>(world_size() - 1));
}

INSTANTIATE_TEST_SUITE_P(Progress, Threads,
                         ::testing::Values(tally::progress_mode::in_calls, tally::progress_mode::thread),
                         tally::test::progress_name{});

}  // namespace
