// The windowed REQUEST broadcast (runtime/transport.hpp): a broadcast posts
// TALLY_BROADCAST_WINDOW REQUESTs per progress step, the rest on later steps. A
// PMPI layer stamps each REQUEST send (one MPI_UINT64_T) of this process with
// the number of MPI_Testsome calls made so far, which every progress step starts
// with. With a window of 1, every REQUEST of rank 1's broadcast after the first
// leaves on a later step than the one before it; with the default window (16, above
// the 7 peers of 8 ranks) all leave within the one call that started the broadcast.
// Either way each of the n-1 peers gets exactly one REQUEST, every rank enters
// once, and the mutex frees with nothing in flight.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "support.hpp"
#include "tally/mutex.hpp"

namespace {
std::atomic<long> testsome_calls{0};
std::mutex mu;
std::vector<std::pair<int, long>> request_sends;  // (destination, Testsome calls before it)
}  // namespace

extern "C" int MPI_Testsome(int count, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  ++testsome_calls;
  return PMPI_Testsome(count, reqs, outcount, indices, statuses);
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* req) {
  if (type == MPI_UINT64_T && count == 1) {
    const std::lock_guard g(mu);
    request_sends.emplace_back(dest, testsome_calls.load());
  }
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

namespace {

using tally::test::progress_barrier;
using tally::test::world_rank;
using tally::test::world_size;

// Rank 1 takes the lock from rank 0 (which holds it idle) under the given window;
// returns rank 1's REQUEST sends. Flat topology, progress inside calls.
std::vector<std::pair<int, long>> rank_one_broadcast(const char* window) {
  ::setenv("TALLY_BROADCAST_WINDOW", window, 1);
  tally::options o;
  o.topology = tally::topology::flat;
  o.progress = tally::progress_mode::in_calls;
  tally::mutex m(MPI_COMM_WORLD, o);
  ::unsetenv("TALLY_BROADCAST_WINDOW");
  {
    const std::lock_guard g(mu);
    request_sends.clear();
  }
  if (world_rank() == 1) {
    m.lock();
    m.unlock();
  }
  progress_barrier(MPI_COMM_WORLD, m);
  const tally::stats s = m.stats();
  EXPECT_EQ(s.broadcasts, world_rank() == 1 ? 1u : 0u);
  EXPECT_EQ(s.requests_sent, world_rank() == 1 ? static_cast<std::uint64_t>(world_size() - 1) : 0u);
  const std::lock_guard g(mu);
  return request_sends;
}

TEST(BroadcastWindow, OneRequestPerProgressStepWithAWindowOfOne) {
  const int n = world_size();
  ASSERT_GE(n, 3) << "registered at 3 or more ranks: two peers at least";
  const auto sends = rank_one_broadcast("1");
  if (world_rank() != 1) return;
  ASSERT_EQ(sends.size(), static_cast<std::size_t>(n - 1));
  std::vector<int> got(static_cast<std::size_t>(n), 0);
  for (const auto& [to, stamp] : sends) ++got[static_cast<std::size_t>(to)];
  for (int r = 0; r < n; ++r) EXPECT_EQ(got[static_cast<std::size_t>(r)], r == 1 ? 0 : 1) << "rank " << r;
  for (std::size_t k = 1; k < sends.size(); ++k)
    EXPECT_GT(sends[k].second, sends[k - 1].second) << "REQUEST " << k << " left in the same step as " << k - 1;
}

TEST(BroadcastWindow, TheDefaultWindowPostsEveryPeerAtOnceUpTo16) {
  const int n = world_size();
  ASSERT_GE(n, 3);
  ASSERT_LE(n, 17) << "the default window (16) covers every peer only up to 17 ranks";
  const auto sends = rank_one_broadcast("16");
  if (world_rank() != 1) return;
  ASSERT_EQ(sends.size(), static_cast<std::size_t>(n - 1));
  for (const auto& s : sends) EXPECT_EQ(s.second, sends.front().second);
}

}  // namespace
