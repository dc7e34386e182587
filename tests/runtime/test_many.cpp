// Many mutexes in one process (docs/design.md, "Progress"): TALLY_TEST_MUTEXES
// mutexes (default 10,000 at 1 or 2 ranks, 1,000 at more: CI's 2 cores are then
// oversubscribed, and every handoff waits for a descheduled rank) on
// MPI_COMM_WORLD in each progress mode and the topology the test runs with
// (TALLY_TOPOLOGY), created, entered
// once by every rank in the same order (so that ranks wait on each other's idle
// tokens of other mutexes), checked and freed. Each mutex's payload counts its
// entries and names the rank inside: an entry that finds another rank inside, or a
// count that is not every entry before it, fails. The process's threads with all
// of them alive are as many as with one. Then mutexes on several communicators
// created and freed while others are held, and a holder of every idle token
// blocked in MPI_Barrier (flat; node: the leader of the node that holds them).
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>

#include "helpers/process_stats.hpp"
#include "support.hpp"

namespace {

using tally::helpers::thread_count;
using tally::test::world_rank;
using tally::test::world_size;

struct record {
  std::int64_t entries;
  std::int64_t inside;  // rank + 1 while a rank is inside, else 0
};

std::size_t mutexes() {
  return static_cast<std::size_t>(tally::test::env_count("TALLY_TEST_MUTEXES", world_size() <= 2 ? 10'000 : 1'000));
}

void run(tally::progress_mode mode) {
  const int me = world_rank(), n = world_size();
  const std::size_t k = mutexes();
  tally::options o;
  o.progress = mode;
  o.payload_bytes = sizeof(record);
  std::deque<tally::mutex> locks;
  locks.emplace_back(MPI_COMM_WORLD, o);
  const int threads_one = thread_count();
  while (locks.size() < k) locks.emplace_back(MPI_COMM_WORLD, o);
  EXPECT_EQ(thread_count(), threads_one) << k << " mutexes alive";

  std::int64_t bad = 0;
  auto enter = [&](tally::mutex& m, std::int64_t want_entries) {
    std::lock_guard g(m);
    const tally::payload_view p = m.payload();
    record r = p.load<record>();
    if (r.inside != 0 || (want_entries >= 0 && r.entries != want_entries)) ++bad;
    r.inside = me + 1;
    ++r.entries;
    p.store(r);
    r.inside = 0;
    p.store(r);
  };
  for (tally::mutex& m : locks) enter(m, -1);
  tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
    for (tally::mutex& m : locks) m.poll();
  });
  if (me == 0)
    for (tally::mutex& m : locks) enter(m, n);  // every rank's entry, and no more
  tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
    for (tally::mutex& m : locks) m.poll();
  });
  EXPECT_EQ(bad, 0) << "entries that found another rank inside or a wrong count";
  for (tally::mutex& m : locks) m.free();
}

TEST(Many, InCalls) { run(tally::progress_mode::in_calls); }
TEST(Many, Thread) { run(tally::progress_mode::thread); }

// Mutexes on MPI_COMM_WORLD, on a duplicate and on a split of it, used in every
// round, while each round a mutex on the duplicate is created and last round's
// freed with another mutex held (each rank's own, on MPI_COMM_SELF). Each mutex's
// payload counts its entries: every entry must see every one before it.
void mixed(tally::progress_mode mode) {
  const int me = world_rank(), n = world_size();
  constexpr int rounds = 10;
  MPI_Comm dup = MPI_COMM_NULL, split = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &split);
  int split_size = 0;
  MPI_Comm_size(split, &split_size);
  {
    tally::options o;
    o.progress = mode;
    o.payload_bytes = sizeof(std::int64_t);
    tally::mutex world(MPI_COMM_WORLD, o), dupped(dup, o), part(split, o), self(MPI_COMM_SELF, o);
    std::deque<tally::mutex> made;
    std::int64_t bad = 0;
    // Enters m; its count must be at least `at_least` before this entry.
    auto enter = [&](tally::mutex& m, std::int64_t at_least) {
      std::lock_guard g(m);
      const tally::payload_view p = m.payload();
      const auto count = p.load<std::int64_t>();
      if (count < at_least) ++bad;
      p.store(count + 1);
    };
    for (int r = 0; r < rounds; ++r) {
      enter(world, 0);
      enter(dupped, 0);
      enter(part, 0);
      {
        std::lock_guard held(self);
        made.emplace_back(dup, o);  // collective over dup, with `self` held
        if (made.size() > 1) {
          made.front().free();
          made.pop_front();
        }
      }
      enter(made.back(), 0);
    }
    // Every rank's entries, and no more: the counts of the persistent mutexes.
    tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
      world.poll();
      dupped.poll();
      part.poll();
      made.back().poll();
    });
    if (me == 0) {
      enter(world, std::int64_t{rounds} * n);
      enter(dupped, std::int64_t{rounds} * n);
      enter(made.back(), n);
    }
    if (me < 2) enter(part, std::int64_t{rounds} * split_size);  // rank 0 and 1: one per part
    tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
      world.poll();
      dupped.poll();
      part.poll();
      made.back().poll();
    });
    EXPECT_EQ(bad, 0) << "entries that missed earlier ones";
    made.back().free();
    self.free();
    part.free();
    dupped.free();
    world.free();
  }
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
}

TEST(Many, MixedCommunicatorsInCalls) { mixed(tally::progress_mode::in_calls); }
TEST(Many, MixedCommunicatorsThread) { mixed(tally::progress_mode::thread); }

// Rank 0 holds every token idle and blocks in MPI_Barrier while every other rank
// enters every mutex: the one progress thread answers for all of them.
TEST(Many, HolderOfEveryIdleTokenInABarrier) {
  const int me = world_rank();
  const std::size_t k = mutexes();
  tally::options o;
  o.progress = tally::progress_mode::thread;
  o.topology = tally::topology::flat;  // rank 0 alone can answer for its tokens
  std::deque<tally::mutex> locks;
  while (locks.size() < k) locks.emplace_back(MPI_COMM_WORLD, o);
  std::uint64_t entered = 0;
  if (me != 0)
    for (tally::mutex& m : locks) {
      std::lock_guard g(m);
      ++entered;
    }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(entered, me == 0 ? 0 : k);
  tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
    for (tally::mutex& m : locks) m.poll();
  });
  for (tally::mutex& m : locks) m.free();
}

// The node topology's version: rank 0, the leader of the node that holds every
// token idle, blocks in MPI_Barrier while every rank of the other nodes enters
// every mutex. Only the leader hears other nodes, so the one progress thread of
// its process must answer, through the channel it listens on, for all of them.
TEST(Many, NodeLeaderOfEveryIdleTokenInABarrier) {
  const int me = world_rank();
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
  int node_rank = 0, leaders = 0, zero_here = 0;
  MPI_Comm_rank(node, &node_rank);
  const int leader = node_rank == 0 ? 1 : 0, is_zero = me == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&is_zero, &zero_here, 1, MPI_INT, MPI_MAX, node);
  MPI_Comm_free(&node);
  if (leaders < 2) GTEST_SKIP() << "one node: no REQUEST goes between nodes";
  const std::size_t k = mutexes();
  tally::options o;
  o.progress = tally::progress_mode::thread;
  o.topology = tally::topology::node;
  std::deque<tally::mutex> locks;
  while (locks.size() < k) locks.emplace_back(MPI_COMM_WORLD, o);
  std::uint64_t entered = 0;
  if (!zero_here)
    for (tally::mutex& m : locks) {
      std::lock_guard g(m);
      ++entered;
    }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(entered, zero_here ? 0 : k);
  tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
    for (tally::mutex& m : locks) m.poll();
  });
  for (tally::mutex& m : locks) m.free();
}

}  // namespace
