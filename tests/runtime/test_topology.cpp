// topology::node: the two-level lock through the C++ API, with both progress modes.
// On one machine all ranks share a node; under tests/multinode the same binary runs
// across emulated nodes. Checked:
//   - exclusion through a non-atomic counter and the message counts per level: no
//     REQUEST and no token inside one node; across K nodes, K-1 REQUESTs per node
//     request and at most one token per node request; local handoffs balance;
//   - the order of entries: the local-pass bound (B = 1 and 2) and FIFO between
//     nodes, in scenarios made deterministic with lock_async (it returns once the
//     rank waits in its node's queue) and polls until a leader has received the
//     REQUESTs it must know of;
//   - bad input: B = 0, topologies or bounds that differ across ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "support.hpp"
#include "tally/tally.h"

// Fault injection: the rank named takes part in MPI_Comm_split_type or
// MPI_Win_allocate_shared (they are collective) and then reports a failure (-1: no
// rank does). The handle it got stays set: tally frees whatever handle it holds
// on every rank of the node when creation fails, as it must after a real failure.
namespace {
std::atomic<int> fail_split_on{-1}, fail_window_on{-1};
int pmpi_world_rank() {
  int r = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
}  // namespace

extern "C" int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out) {
  const int rc = PMPI_Comm_split_type(comm, type, key, info, out);
  return rc == MPI_SUCCESS && pmpi_world_rank() == fail_split_on ? MPI_ERR_OTHER : rc;
}
extern "C" int MPI_Win_allocate_shared(MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void* base,
                                       MPI_Win* win) {
  const int rc = PMPI_Win_allocate_shared(size, unit, info, comm, base, win);
  return rc == MPI_SUCCESS && pmpi_world_rank() == fail_window_on ? MPI_ERR_NO_MEM : rc;
}

namespace {

using tally::errc;
using tally::test::shared_counter;
using tally::test::world_rank;
using tally::test::world_size;

using tally::test::count_nodes;
using tally::test::nodes_of_ranks;

std::uint64_t global_sum(std::uint64_t v) {
  std::uint64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

// An append-only log of ranks in a window at rank 0: entries record themselves.
class entry_log {
 public:
  explicit entry_log(int capacity) {
    rma_window_allocate(static_cast<MPI_Aint>((capacity + 1) * sizeof(std::int64_t)), sizeof(std::int64_t),
                        MPI_COMM_WORLD, &w_);
    win_ = w_.win;
    base_ = static_cast<std::int64_t*>(w_.base);
    std::fill_n(base_, capacity + 1, std::int64_t{-1});
    base_[0] = 0;
    MPI_Win_lock_all(0, win_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~entry_log() {
    MPI_Win_unlock_all(win_);
    rma_window_free(&w_);
  }
  void append(std::int64_t who) {
    const std::int64_t one = 1;
    std::int64_t at = 0;
    MPI_Fetch_and_op(&one, &at, MPI_INT64_T, 0, 0, MPI_SUM, win_);
    MPI_Win_flush(0, win_);
    MPI_Put(&who, 1, MPI_INT64_T, 0, 1 + at, 1, MPI_INT64_T, win_);
    MPI_Win_flush(0, win_);
  }
  // Rank 0, after everyone appended (a barrier): the ranks in entry order.
  std::vector<std::int64_t> read() {
    MPI_Win_sync(win_);
    return std::vector<std::int64_t>(base_ + 1, base_ + 1 + base_[0]);
  }

 private:
  rma_window w_{};
  std::int64_t* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

constexpr int tag_ready = 41;
void tell(int to) { MPI_Send(nullptr, 0, MPI_BYTE, to, tag_ready, MPI_COMM_WORLD); }
void hear(int from) { MPI_Recv(nullptr, 0, MPI_BYTE, from, tag_ready, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
// hear() for a rank that may hold the token idle meanwhile (in_calls progress).
void hear_polling(int from, tally::mutex& m) {
  for (int arrived = 0; !arrived;) {
    m.poll();
    MPI_Iprobe(from, tag_ready, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
  }
  hear(from);
}

class Topology : public ::testing::TestWithParam<tally::progress_mode> {
 protected:
  tally::options opts(unsigned bound = 16) const {
    tally::options o;
    o.topology = tally::topology::node;
    o.progress = GetParam();
    o.pass_bound = bound;
    return o;
  }
};

// The node's leader receives the other nodes' REQUESTs. Re-entering in a loop
// (in_calls: no thread answers for it), it must still hear them and let the token
// go: the first rank of another node gets in while rank 0 keeps locking.
TEST_P(Topology, ALeaderReenteringInALoopLetsOtherNodesIn) {
  const std::vector<int> node_of = nodes_of_ranks();
  if (count_nodes(node_of) < 2) GTEST_SKIP() << "needs ranks on two nodes (tests/multinode)";
  int other = 0;
  while (node_of[static_cast<std::size_t>(other)] == node_of[0]) ++other;
  tally::options o = opts();
  o.payload_bytes = sizeof(std::uint64_t);
  tally::mutex m(MPI_COMM_WORLD, o);
  if (world_rank() == 0) {
    constexpr int limit = 1'000'000;
    int rounds = 0;
    bool seen = false;
    for (; rounds < limit && !seen; ++rounds) {
      std::lock_guard g(m);
      seen = m.payload().load<std::uint64_t>(0) != 0;
    }
    EXPECT_TRUE(seen) << "rank 0 entered " << limit << " times in a row while rank " << other << " waited";
  } else if (world_rank() == other) {
    std::lock_guard g(m);
    m.payload().store<std::uint64_t>(1, 0);
  }
  tally::test::progress_barrier(MPI_COMM_WORLD, m);
}

TEST_P(Topology, ExclusionAndMessagesPerLevel) {
  const std::vector<int> node_of = nodes_of_ranks();
  const int k = count_nodes(node_of);
  // The counter is one-sided MPI: across nodes each entry is TCP round trips.
  const int iterations = k > 1 ? 12 : 60;
  tally::mutex m(MPI_COMM_WORLD, opts(2));
  shared_counter counter(MPI_COMM_WORLD, 0);
  int overlaps = 0;
  for (int i = 0; i < iterations; ++i) {
    m.lock();
    if (counter.enter(world_rank()) != -1) ++overlaps;
    counter.increment();
    if (counter.leave(world_rank()) != world_rank()) ++overlaps;
    m.unlock();
  }
  // The loop may run without any overlap in time (a scheduler can run each rank's
  // loop whole), so one more entry is contended for certain: rank 0 releases while
  // the next rank of its node waits in the node's queue.
  const auto on_my_node = std::find_if(node_of.begin() + 1, node_of.end(), [&](int n) { return n == node_of[0]; });
  const int peer = on_my_node == node_of.end() ? -1 : static_cast<int>(on_my_node - node_of.begin());
  tally::test::progress_barrier(MPI_COMM_WORLD, m);  // every rank has left the loop
  if (world_rank() == 0 && peer > 0) {
    m.lock();
    tell(peer);
    hear_polling(peer, m);
    m.unlock();
  } else if (world_rank() == peer) {
    hear_polling(0, m);
    tally::lock_request r = m.lock_async();
    tell(0);
    r.wait();
    m.unlock();
  }
  const bool forced = peer > 0 && (world_rank() == 0 || world_rank() == peer);
  tally::test::progress_barrier(MPI_COMM_WORLD, m);
  EXPECT_EQ(overlaps, 0);
  if (world_rank() == 0) {
    EXPECT_EQ(counter.value(), std::int64_t{iterations} * world_size());
  }
  m.free();
  const tally::stats s = m.stats();
  EXPECT_EQ(s.acquisitions, static_cast<std::uint64_t>(iterations + (forced ? 1 : 0)));
  const std::uint64_t broadcasts = global_sum(s.broadcasts), sent = global_sum(s.requests_sent),
                      received = global_sum(s.requests_received), tokens = global_sum(s.tokens_sent),
                      tokens_in = global_sum(s.tokens_received), handoffs = global_sum(s.local_handoffs_sent),
                      handoffs_in = global_sum(s.local_handoffs_received);
  // Between nodes: K-1 REQUESTs per node request, each received; at most one token
  // per node request. Inside a node: no message at all.
  EXPECT_EQ(sent, static_cast<std::uint64_t>(k - 1) * broadcasts);
  EXPECT_EQ(received, sent);
  EXPECT_EQ(tokens_in, tokens);
  EXPECT_LE(tokens, broadcasts);
  EXPECT_EQ(handoffs, handoffs_in);
  EXPECT_LE(s.local_handoffs_received, s.local_acquisitions);
  if (k == 1) {
    EXPECT_EQ(broadcasts + sent + tokens, 0u) << "a single node sent MPI messages";
  }
  if (peer > 0) {
    EXPECT_GT(handoffs, 0u) << "rank 0 released while rank " << peer << " of its node waited: no local handoff";
  }
}

// Node A = rank 0's node with ranks a0 = 0 (holds the lock), a1, a2; node B's first
// rank b0 asks (its REQUEST reaches a0, A's leader) before a1 and a2 queue. With
// B = 1, A passes once (to a1), then the token must go to b0, and comes back for a2.
// With B = 2, A passes to a1 and a2 first.
TEST_P(Topology, LocalPassBoundSendsTheTokenToTheWaitingNode) {
  const std::vector<int> node_of = nodes_of_ranks();
  std::vector<int> a, others;
  for (int r = 0; r < world_size(); ++r) (node_of[static_cast<std::size_t>(r)] == node_of[0] ? a : others).push_back(r);
  if (a.size() < 3 || others.empty()) GTEST_SKIP() << "needs a node of three ranks and another node";
  const int a1 = a[1], a2 = a[2], b0 = others[0];
  for (unsigned bound : {1u, 2u}) {
    tally::mutex m(MPI_COMM_WORLD, opts(bound));
    entry_log log(8);
    const int me = world_rank();
    if (me == 0) {
      m.lock();
      log.append(me);
      tell(b0);
      while (m.stats().requests_received < 1) m.poll();  // b0's REQUEST, deferred in the CS
      tell(a1);
      hear(a2);  // a1 and a2 wait in A's queue, in that order
      m.unlock();
    } else if (me == b0 || me == a1 || me == a2) {
      hear(me == b0 ? 0 : me == a1 ? 0 : a1);
      tally::lock_request r = m.lock_async();
      if (me == a1) tell(a2);
      if (me == a2) tell(0);
      r.wait();
      log.append(me);
      m.unlock();
    }
    tally::test::progress_barrier(MPI_COMM_WORLD, m);
    if (me == 0) {
      const std::vector<std::int64_t> got = log.read();
      const std::vector<std::int64_t> want =
          bound == 1 ? std::vector<std::int64_t>{0, a1, b0, a2} : std::vector<std::int64_t>{0, a1, a2, b0};
      EXPECT_EQ(got, want) << "B = " << bound;
    }
    const tally::stats s = m.stats();
    const std::uint64_t bound_releases = global_sum(s.bound_releases);
    EXPECT_EQ(bound_releases, bound == 1 ? 1u : 0u) << "B = " << bound;
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// Three nodes A (rank 0's), B, C; a, b, c their first ranks. Between nodes the
// order is FIFO once in the token's queue, as in flat SK: a holds while both b and
// c ask, so a's release queues [b, c] (by node index: both were known). a then asks
// again, and b, in its critical section, learns of it and of c's request before it
// leaves: c was queued first, so c enters before a although A's index is lower.
TEST_P(Topology, NodesQueuedEarlierAreServedFirst) {
  const std::vector<int> node_of = nodes_of_ranks();
  std::map<int, int> first_rank;  // node -> its lowest rank
  for (int r = world_size() - 1; r >= 0; --r) first_rank[node_of[static_cast<std::size_t>(r)]] = r;
  if (first_rank.size() < 3) GTEST_SKIP() << "needs three nodes";
  auto it = first_rank.begin();
  const int b = (++it)->second, c = (++it)->second;
  tally::mutex m(MPI_COMM_WORLD, opts());
  entry_log log(8);
  const int me = world_rank();
  if (me == 0) {
    m.lock();
    log.append(me);
    tell(b);
    tell(c);
    while (m.stats().requests_received < 2) m.poll();  // both known at the release
    m.unlock();
    m.lock();  // asks again: reaches b while b holds the lock
    log.append(me);
    m.unlock();
  } else if (me == b) {
    hear(0);
    m.lock();
    log.append(me);
    while (m.stats().requests_received < 2) m.poll();  // c's REQUEST and a's second one
    m.unlock();
  } else if (me == c) {
    hear(0);
    m.lock();
    log.append(me);
    m.unlock();
  }
  tally::test::progress_barrier(MPI_COMM_WORLD, m);
  if (me == 0) {
    EXPECT_EQ(log.read(), (std::vector<std::int64_t>{0, b, c, 0}));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

INSTANTIATE_TEST_SUITE_P(Progress, Topology,
                         ::testing::Values(tally::progress_mode::in_calls, tally::progress_mode::thread),
                         tally::test::progress_name{});

using tally::test::expect_error;

TEST(TopologyErrors, BadOrDisagreeingOptionsFailEveryRank) {
  tally::options zero;
  zero.topology = tally::topology::node;
  zero.pass_bound = 0;
  std::string msg = expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, zero); });
  EXPECT_NE(msg.find("pass_bound"), std::string::npos) << msg;
  tally::options huge = zero;
  huge.pass_bound = tally::max_pass_bound + 1;
  expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, huge); });
  tally::options bad_kind;
  bad_kind.topology = static_cast<tally::topology>(7);
  expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, bad_kind); });
  if (world_size() > 1) {
    tally::options mixed;
    mixed.topology = world_rank() == 0 ? tally::topology::flat : tally::topology::node;
    msg = expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, mixed); });
    EXPECT_NE(msg.find("topology differs"), std::string::npos) << msg;
    tally::options bounds;
    bounds.topology = tally::topology::node;
    bounds.pass_bound = world_rank() == 0 ? 1 : 2;
    msg = expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, bounds); });
    EXPECT_NE(msg.find("pass_bound differs"), std::string::npos) << msg;
  }
  // The communicator still works for a good creation.
  tally::options good;
  good.topology = tally::topology::node;
  tally::mutex ok(MPI_COMM_WORLD, good);
  ok.lock();
  ok.unlock();
}

// topology() reports what automatic chose: node where some node holds two or more
// ranks, else flat; $TALLY_TOPOLOGY overrides automatic, never an explicit choice.
// Sets $TALLY_TOPOLOGY for a scope (nullptr: unset) and restores it afterwards.
class topology_env {
 public:
  explicit topology_env(const char* value) {
    if (const char* v = std::getenv("TALLY_TOPOLOGY")) old_ = v;
    set(value);
  }
  ~topology_env() { set(old_ ? old_->c_str() : nullptr); }
  topology_env(const topology_env&) = delete;
  topology_env& operator=(const topology_env&) = delete;

 private:
  static void set(const char* value) {
    if (value)
      ::setenv("TALLY_TOPOLOGY", value, 1);
    else
      ::unsetenv("TALLY_TOPOLOGY");
  }
  std::optional<std::string> old_;
};

TEST(TopologyChoice, AutomaticAndTheEnvironment) {
  const std::vector<int> node_of = nodes_of_ranks();
  const bool shared = count_nodes(node_of) < world_size();
  {
    const topology_env unset(nullptr);
    tally::mutex m(MPI_COMM_WORLD);
    EXPECT_EQ(m.topology(), shared ? tally::topology::node : tally::topology::flat);
    EXPECT_EQ(tally::test::token_entries(m), shared ? count_nodes(node_of) : world_size());
  }
  // The environment decides automatic, and an explicit choice beats it.
  const std::pair<const char*, tally::topology> settings[] = {{"flat", tally::topology::flat},
                                                              {"node", tally::topology::node}};
  for (const auto& [value, chosen] : settings) {
    const topology_env env(value);
    tally::mutex m(MPI_COMM_WORLD);
    EXPECT_EQ(m.topology(), chosen) << value;
    tally::options other;
    other.topology = chosen == tally::topology::flat ? tally::topology::node : tally::topology::flat;
    tally::mutex x(MPI_COMM_WORLD, other);
    EXPECT_EQ(x.topology(), other.topology) << value;
  }
}

// topology::node where one rank's split or shared window fails: every rank gets the
// same errc::mpi naming the step (this rank's or another's); automatic runs flat.
TEST(TopologyErrors, NodeLevelFailureOnOneRankFailsEveryRank) {
  const int victim = world_size() - 1;
  const topology_env unset(nullptr);
  for (std::atomic<int>* fault : {&fail_split_on, &fail_window_on}) {
    const bool split = fault == &fail_split_on;
    // A communicator of its own: the split and the first slab come with its first
    // node-topology mutex.
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    *fault = victim;
    tally::options node;
    node.topology = tally::topology::node;
    const std::string msg = expect_error(errc::mpi, [&] { tally::mutex m(comm, node); });
    EXPECT_NE(msg.find(split ? "MPI_Comm_split_type" : "MPI_Win_allocate_shared"), std::string::npos) << msg;
    EXPECT_NE(msg.find(world_rank() == victim ? "failed on this rank" : "failed on another rank"), std::string::npos)
        << msg;
    {
      tally::mutex m(comm);  // automatic: falls back to flat, and works
      EXPECT_EQ(m.topology(), tally::topology::flat);
      m.lock();
      m.unlock();
      tally::test::progress_barrier(MPI_COMM_WORLD, m);
    }
    *fault = -1;
    {
      tally::mutex m(comm, node);  // the fault gone: the node topology is built
      EXPECT_EQ(m.topology(), tally::topology::node);
      m.lock();
      m.unlock();
      tally::test::progress_barrier(MPI_COMM_WORLD, m);
    }
    MPI_Comm_free(&comm);
  }
}

TEST(TopologyErrors, CApiOptions) {
  tally_options o;
  tally_options_init(&o);
  EXPECT_EQ(o.topology, TALLY_TOPOLOGY_AUTO);
  EXPECT_EQ(o.pass_bound, 16u);
  o.topology = TALLY_TOPOLOGY_NODE;
  o.pass_bound = 0;
  tally_mutex m = nullptr;
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_ERR_ARG);
  EXPECT_EQ(m, nullptr);
  o.pass_bound = 3;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_SUCCESS);
  tally_topology t = TALLY_TOPOLOGY_AUTO;
  EXPECT_EQ(tally_mutex_topology(m, &t), TALLY_SUCCESS);
  EXPECT_EQ(t, TALLY_TOPOLOGY_NODE);
  EXPECT_EQ(tally_mutex_topology(m, nullptr), TALLY_ERR_ARG);
  ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
}

}  // namespace
