// Self-test of tally_bench's lock kinds and of its traffic counter, under mpiexec:
// every kind excludes (a non-atomic read-modify-write inside the critical section
// loses no update and never overlaps), and the PMPI counter sees exactly the
// messages each algorithm must send. Every expectation is evaluated on values
// reduced over all ranks, so all ranks agree on every outcome.
#include <mpi.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>
#include <random>
#include <string>

#include "harness.hpp"
#include "lock_kinds.hpp"
#include "support.hpp"

namespace {

using namespace bench;

std::uint64_t sum_all(std::uint64_t v) {
  std::uint64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, world().comm);
  return s;
}

std::uint64_t max_all(std::uint64_t v) {
  std::uint64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_MAX, world().comm);
  return s;
}

// Messages (summed over ranks) and the largest point-to-point message sent while
// body() ran, between two polling barriers.
struct totals {
  std::uint64_t messages = 0;
  std::uint64_t max_msg = 0;
};

template <lock_kind L, class Body>
totals traffic_of(L& lk, Body&& body) {
  auto poll = [&] { lk.poll(); };
  barrier_polling(poll);
  const traffic::counts before = traffic::snapshot();
  traffic::reset_max();
  MPI_Barrier(world().comm);  // every rank counts before any rank starts
  body();
  barrier_polling(poll);
  const traffic::counts d = traffic::snapshot() - before;
  return {sum_all(d.messages()), max_all(traffic::max_p2p_bytes())};
}

// Ranks take turns 0..n-1, `rounds` times; each turn is lock + unlock while the
// others poll. Turn messages travel on the harness communicator (not counted).
template <lock_kind L>
void take_turns(L& lk, int rounds) {
  auto poll = [&] { lk.poll(); };
  const int n = world().size, me = world().rank;
  for (int r = 0; r < rounds; ++r) {
    if (me != 0 || r != 0) recv_polling((me + n - 1) % n, 7, poll);
    lk.lock();
    lk.unlock();
    if (me != n - 1 || r != rounds - 1) send_signal((me + 1) % n, 7);
  }
}

// Each rank's node (named by its lowest rank), as the node topology splits them.
const std::vector<int>& node_of_ranks() {
  static const std::vector<int> out = [] {
    MPI_Comm node;
    MPI_Comm_split_type(world().comm, MPI_COMM_TYPE_SHARED, world().rank, MPI_INFO_NULL, &node);
    int leader = world().rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    std::vector<int> v(static_cast<std::size_t>(world().size));
    MPI_Allgather(&leader, 1, MPI_INT, v.data(), 1, MPI_INT, world().comm);
    return v;
  }();
  return out;
}
int node_count() {
  std::vector<int> v = node_of_ranks();
  std::sort(v.begin(), v.end());
  return static_cast<int>(std::unique(v.begin(), v.end()) - v.begin());
}

// Messages one uncontended entry costs at `rank` when the previous entry was at
// another rank (retained == false) or at the same rank (retained == true).
template <class L>
std::uint64_t uncontended_cost(int rank, int n, bool retained) {
  const auto un = static_cast<std::uint64_t>(n);
  const bool home = rank == 0;  // where win_lock's window, the MCS tail and the server live
#if TALLY_BENCH_HAVE_TALLY
  if constexpr (std::is_same_v<L, tally_node>) {
    // K-1 REQUESTs + 1 token when the previous entry (rank - 1 in take_turns) was on
    // another node; nothing within a node.
    const std::vector<int>& node = node_of_ranks();
    const int prev = (rank + n - 1) % n;
    const bool same = retained || node[static_cast<std::size_t>(rank)] == node[static_cast<std::size_t>(prev)];
    return same ? 0 : static_cast<std::uint64_t>(node_count());
  }
#endif
  if constexpr (std::is_same_v<L, ricart_agrawala>)
    return 2 * (un - 1);
  else if constexpr (std::is_same_v<L, lock_server>)
    return home ? 0 : 3;  // REQUEST, GRANT, RELEASE
  else if constexpr (std::is_same_v<L, win_lock>)
    return home ? 0 : 3;  // lock, get, unlock
  else if constexpr (std::is_same_v<L, rma_mcs>)
    return home ? 0 : 2;  // swap tail, CAS tail
  else
    return retained ? 0 : un;  // tally: n-1 REQUESTs + 1 token, or nothing
}

template <class L>
class LockKind : public ::testing::Test {};

using kinds = ::testing::Types<
#if TALLY_BENCH_HAVE_TALLY
    tally_inline, tally_thread, tally_node,
#endif
    win_lock, rma_mcs, lock_server, ricart_agrawala>;

struct kind_names {
  template <class T>
  static std::string GetName(int) {
    return T::name;
  }
};
TYPED_TEST_SUITE(LockKind, kinds, kind_names);

TYPED_TEST(LockKind, MutualExclusion) {
  const int n = world().size, me = world().rank;
  constexpr int entries = 120;
  tally::test::shared_counter counter(world().comm, 0, std::chrono::nanoseconds(300));
  TypeParam lk(world().comm);
  auto poll = [&] { lk.poll(); };
  std::minstd_rand rng(static_cast<unsigned>(me) * 7919u + 1u);
  std::uint64_t overlaps = 0;
  for (int k = 0; k < entries; ++k) {
    think_polling(static_cast<ns_t>(rng() % 3000), poll);
    lk.lock();
    if (counter.enter(me) != -1) ++overlaps;
    counter.increment();
    if (counter.leave(me) != me) ++overlaps;
    lk.unlock();
  }
  barrier_polling(poll);
  EXPECT_EQ(sum_all(overlaps), 0u);
  EXPECT_EQ(max_all(static_cast<std::uint64_t>(counter.value())), static_cast<std::uint64_t>(n) * entries);
}

TYPED_TEST(LockKind, EachUncontendedEntryCostsExactlyItsMessages) {
  const int n = world().size;
  constexpr int rounds = 3;
  TypeParam lk(world().comm);
  take_turns(lk, 1);  // warm-up: afterwards the lock (token) is idle at rank n-1
  const totals t = traffic_of(lk, [&] { take_turns(lk, rounds); });
  std::uint64_t expected = 0;
  for (int r = 0; r < n; ++r) expected += rounds * uncontended_cost<TypeParam>(r, n, false);
  EXPECT_EQ(t.messages, expected);
#if TALLY_BENCH_HAVE_TALLY
  if constexpr (std::is_same_v<TypeParam, tally_inline> || std::is_same_v<TypeParam, tally_thread>) {
    // BM_Floor's message size is the token's real wire size.
    EXPECT_EQ(t.max_msg, static_cast<std::uint64_t>(token_bytes(n)));
  } else if constexpr (std::is_same_v<TypeParam, tally_node>) {
    // The node-level token: trail, LN and queue over K nodes (nothing moves on one node).
    if (node_count() > 1 && node_count() < 5) {
      EXPECT_EQ(t.max_msg, static_cast<std::uint64_t>(node_token_bytes(node_count())));
    }
  }
#endif
}

TYPED_TEST(LockKind, RetainedReentryCost) {
  const int n = world().size, me = world().rank;
  const int actor = n - 1;  // not the home of the centralized baselines
  constexpr int entries = 10;
  TypeParam lk(world().comm);
  if (me == actor) {
    lk.lock();  // brings tally's token here
    lk.unlock();
  }
  const totals t = traffic_of(lk, [&] {
    if (me != actor) return;
    for (int k = 0; k < entries; ++k) {
      lk.lock();
      lk.unlock();
    }
  });
  EXPECT_EQ(t.messages, entries * uncontended_cost<TypeParam>(actor, n, true));
}

TYPED_TEST(LockKind, ContendedCost) {
  const int n = world().size;
  constexpr int entries = 60;
  TypeParam lk(world().comm);
  const auto all = static_cast<std::uint64_t>(n) * entries;
  const auto away = static_cast<std::uint64_t>(n - 1) * entries;  // entries by ranks other than 0
  std::uint64_t remote = 0;  // tally: entries that were not retained-token re-entries
#if TALLY_BENCH_HAVE_TALLY
  tally::stats s0{};
  if constexpr (requires { lk.get(); }) s0 = lk.get().stats();
#endif
  const totals t = traffic_of(lk, [&] {
    for (int k = 0; k < entries; ++k) {
      lk.lock();
      lk.unlock();
    }
  });
#if TALLY_BENCH_HAVE_TALLY
  if constexpr (requires { lk.get(); }) {
    const tally::stats s1 = lk.get().stats();
    remote = (s1.acquisitions - s0.acquisitions) - (s1.local_acquisitions - s0.local_acquisitions);
  }
#endif
  remote = sum_all(remote);
  if constexpr (std::is_same_v<TypeParam, ricart_agrawala>) {
    EXPECT_EQ(t.messages, 2 * static_cast<std::uint64_t>(n - 1) * all);
  } else if constexpr (std::is_same_v<TypeParam, lock_server> || std::is_same_v<TypeParam, win_lock>) {
    EXPECT_EQ(t.messages, 3 * away);
  } else if constexpr (std::is_same_v<TypeParam, rma_mcs>) {
    // acquire: swap tail (+ link to a predecessor); release: CAS tail or notify
    // the successor (+ a failed CAS first): between 2 and 4 per entry away from 0.
    EXPECT_GE(t.messages, 2 * away);
    EXPECT_LE(t.messages, 4 * all);
  } else {
    // n-1 REQUESTs + 1 token per entry that moved the token; the node topology
    // moves it between K nodes only.
#if TALLY_BENCH_HAVE_TALLY
    const auto k = static_cast<std::uint64_t>(std::is_same_v<TypeParam, tally_node> ? node_count() : n);
#else
    const auto k = static_cast<std::uint64_t>(n);
#endif
    EXPECT_EQ(t.messages, k * remote);
    EXPECT_LE(t.messages, k * all);
  }
}

// The harness's world (its duplicate of MPI_COMM_WORLD) lives for the whole run;
// the MPI gtest main (tests/support) initializes and finalizes MPI around it.
class world_environment : public ::testing::Environment {
 public:
  void SetUp() override { bench::init_world(); }
  void TearDown() override { bench::finalize_world(); }
};
::testing::Environment* const world_env = ::testing::AddGlobalTestEnvironment(new world_environment);

}  // namespace
