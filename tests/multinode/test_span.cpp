// Runs on the emulated cluster (tests/multinode): proves the job really spans the
// nodes it was given, then checks tally across them. TALLY_TEST_NODES is the
// number of nodes the test was started on.
//   - every node has its own processor name and hostname, and
//     MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives exactly one group per node,
//     whose ranks share one name: shared memory inside, a network between;
//   - exclusion, with a non-atomic read-modify-write of a counter that travels in
//     the token (a second holder would lose updates), under contention;
//   - FIFO between nodes (flat topology): requests queued while a rank holds the
//     lock are served in the order the holder appends them (increasing rank),
//     wherever they live;
//   - a mutex per node (on the split communicator) beside a global one.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"
#include "tally/guarded.hpp"

namespace {

using tally::test::progress_barrier;
using tally::test::world_rank;
using tally::test::world_size;

int expected_nodes() { return static_cast<int>(tally::test::env_count("TALLY_TEST_NODES", 0)); }

std::vector<std::string> gather_names(const std::string& mine) {
  constexpr int width = 256;
  std::vector<char> buf(width, '\0'), all(static_cast<std::size_t>(width * world_size()));
  mine.copy(buf.data(), width - 1);
  MPI_Allgather(buf.data(), width, MPI_CHAR, all.data(), width, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < world_size(); ++r) out.emplace_back(all.data() + r * width);
  return out;
}

TEST(Span, OneSharedMemoryGroupPerNode) {
  const int k = expected_nodes();
  ASSERT_GE(k, 2) << "TALLY_TEST_NODES must name the node count (2 or more)";
  char pname[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(pname, &len);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::vector<std::string> pnames = gather_names(pname), hosts = gather_names(host);
  EXPECT_EQ(std::set<std::string>(pnames.begin(), pnames.end()).size(), static_cast<std::size_t>(k));
  EXPECT_EQ(std::set<std::string>(hosts.begin(), hosts.end()).size(), static_cast<std::size_t>(k));

  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  int leader = node_rank == 0, groups = 0;
  MPI_Allreduce(&leader, &groups, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(groups, k);
  // Every rank of a group carries the group's processor name.
  std::vector<char> first(MPI_MAX_PROCESSOR_NAME, '\0');
  if (node_rank == 0) std::copy(pname, pname + len, first.begin());
  MPI_Bcast(first.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, node);
  EXPECT_STREQ(first.data(), pname);
  MPI_Comm_free(&node);
}

class AcrossNodes : public ::testing::TestWithParam<tally::progress_mode> {
 protected:
  tally::options opts(int owner = 0) const {
    tally::options o;
    o.progress = GetParam();
    o.initial_owner = owner;
    return o;
  }
};

TEST_P(AcrossNodes, ExclusionWithACounterInTheToken) {
  constexpr int rounds = 60;
  tally::guarded<long> counter(MPI_COMM_WORLD, 0L, opts(world_size() - 1));
  for (int k = 0; k < rounds; ++k) {
    auto g = counter.lock();
    const long seen = *g;
    std::this_thread::yield();  // a second holder would read the same value
    *g = seen + 1;
  }
  progress_barrier(MPI_COMM_WORLD, counter.mutex());
  if (world_rank() == 0) {
    auto g = counter.lock();
    EXPECT_EQ(*g, static_cast<long>(rounds) * world_size());
  }
  progress_barrier(MPI_COMM_WORLD, counter.mutex());
  // Besides the rounds: rank 0's check.
  EXPECT_EQ(counter.mutex().stats().acquisitions, rounds + (world_rank() == 0 ? 1u : 0u));
}

struct order {  // who entered, in which order (at most 64 ranks)
  int count = 0;
  int who[64] = {};
};

TEST_P(AcrossNodes, QueuedRequestsAreServedInFifoOrder) {
  // Rank 0 holds the lock until it has seen every other rank's REQUEST (the poll
  // inside its critical section defers them); on unlock they are queued in
  // increasing rank order, and each entrant appends itself to the token's record.
  // Flat topology: rank 0 receives a REQUEST from every rank (test_topology checks
  // FIFO between nodes under topology::node).
  const int n = world_size();
  ASSERT_LE(n, 64);
  tally::options flat = opts(0);
  flat.topology = tally::topology::flat;
  tally::guarded<order> log(MPI_COMM_WORLD, order{}, flat);
  tally::mutex& m = log.mutex();
  auto go = [] {  // the others ask only once rank 0 holds the lock
    // One byte, not zero: a broadcast of nothing may complete at once on the
    // receivers (Open MPI's does), before the root has even called it.
    char byte = 1;
    MPI_Request r;
    MPI_Ibcast(&byte, 1, MPI_CHAR, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  };
  if (world_rank() == 0) {
    auto g = log.lock();
    go();
    while (m.stats().requests_received < static_cast<std::uint64_t>(n - 1)) m.poll();
    g->who[g->count++] = 0;
  } else {
    go();
    auto g = log.lock();
    g->who[g->count++] = world_rank();
  }
  progress_barrier(MPI_COMM_WORLD, m);
  // The record ends wherever the token is: its holder checks the order.
  if (std::optional<tally::guarded<order>::guard> g = log.try_lock()) {
    const order& o = **g;
    ASSERT_EQ(o.count, n);
    for (int r = 0; r < n; ++r) EXPECT_EQ(o.who[r], r) << "position " << r;
  }
  progress_barrier(MPI_COMM_WORLD, m);
}

TEST_P(AcrossNodes, AMutexPerNodeBesideAGlobalOne) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  {
    tally::guarded<long> local(node, 0L, opts());
    tally::guarded<long> global(MPI_COMM_WORLD, 0L, opts());
    for (int k = 0; k < 20; ++k) {
      auto a = global.lock();  // always global first: one order, no deadlock
      auto b = local.lock();
      ++*a;
      ++*b;
    }
    progress_barrier(MPI_COMM_WORLD, [&] {
      local.mutex().poll();
      global.mutex().poll();
    });
    if (auto g = local.try_lock()) {
      EXPECT_EQ(**g, 20L * node_size);
    }
    if (auto g = global.try_lock()) {
      EXPECT_EQ(**g, 20L * world_size());
    }
    progress_barrier(MPI_COMM_WORLD, [&] {
      local.mutex().poll();
      global.mutex().poll();
    });
  }
  MPI_Comm_free(&node);
}

INSTANTIATE_TEST_SUITE_P(Progress, AcrossNodes,
                         ::testing::Values(tally::progress_mode::in_calls, tally::progress_mode::thread),
                         tally::test::progress_name{});

}  // namespace
