// Message counts, measured two ways: tally's own stats and a PMPI interposition
// that counts every point-to-point send this process makes. A remote entry costs
// n-1 REQUESTs + 1 token; a retained-token re-entry costs nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "support.hpp"

namespace {

// Counted by the wrappers below. tally sends REQUESTs as one MPI_UINT64_T, the
// token as units of its derived datatype and free()'s collective as
// MPI_UNSIGNED_LONG_LONG; it must use no other send call.
std::atomic<std::uint64_t> request_sends{0};
std::atomic<std::uint64_t> token_sends{0};
std::atomic<std::uint64_t> free_sends{0};
std::atomic<std::uint64_t> other_sends{0};

}  // namespace

extern "C" {
int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  if (type == MPI_UINT64_T && count == 1)
    ++request_sends;
  else if (type == MPI_UNSIGNED_LONG_LONG)
    ++free_sends;
  else
    ++token_sends;
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  ++other_sends;
  return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  ++other_sends;
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}
int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  ++other_sends;
  return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}
}

namespace {

using tally::test::global_sum;
using tally::test::world_rank;
using tally::test::world_size;

struct totals {
  std::uint64_t requests = 0, tokens = 0, others = 0;
};

// Sums this process's PMPI counts over all ranks.
totals global_counts() {
  std::uint64_t mine[3] = {request_sends.load(), token_sends.load(), other_sends.load()};
  std::uint64_t sum[3];
  MPI_Allreduce(mine, sum, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return {sum[0], sum[1], sum[2]};
}

class Messages : public ::testing::TestWithParam<tally::progress_mode> {};

TEST_P(Messages, EachRemoteEntryCostsAtMostNAndReentryCostsNothing) {
  const int n = world_size();
  const int me = world_rank();
  tally::options opts;
  opts.progress = GetParam();
  const std::uint64_t req0 = request_sends.load(), tok0 = token_sends.load();
  tally::mutex m(MPI_COMM_WORLD, opts);

  // Rank k % n takes the lock twice in round k while the others keep polling: the
  // first entry is remote unless it already holds the token, the second is local.
  for (int k = 0; k < 2 * n + 1; ++k) {
    const int turn = k % n;
    const bool holds = (k == 0 && turn == 0) || (n == 1);
    const totals before = global_counts();
    if (me == turn) {
      m.lock();
      m.unlock();
    }
    tally::test::progress_barrier(MPI_COMM_WORLD, m);
    const totals first = global_counts();
    if (holds) {
      EXPECT_EQ(first.requests - before.requests, 0u) << "round " << k;
      EXPECT_EQ(first.tokens - before.tokens, 0u) << "round " << k;
    } else {
      EXPECT_EQ(first.requests - before.requests, static_cast<std::uint64_t>(n - 1)) << "round " << k;
      EXPECT_EQ(first.tokens - before.tokens, 1u) << "round " << k;
    }
    if (me == turn) {
      m.lock();
      m.unlock();
    }
    tally::test::progress_barrier(MPI_COMM_WORLD, m);
    const totals second = global_counts();
    EXPECT_EQ(second.requests - first.requests, 0u) << "re-entry, round " << k;
    EXPECT_EQ(second.tokens - first.tokens, 0u) << "re-entry, round " << k;
  }
  const tally::stats s = m.stats();
  EXPECT_EQ(s.requests_sent, request_sends.load() - req0);
  EXPECT_EQ(s.tokens_sent, token_sends.load() - tok0);
  EXPECT_EQ(other_sends.load(), 0u);
}

TEST_P(Messages, ContendedEntriesCostExactlyOneBroadcastAndOneToken) {
  const int n = world_size();
  tally::options opts;
  opts.progress = GetParam();
  opts.initial_owner = n / 2;
  const std::uint64_t req0 = request_sends.load(), tok0 = token_sends.load();
  tally::mutex m(MPI_COMM_WORLD, opts);
  for (int i = 0; i < 100; ++i) {
    m.lock();
    m.unlock();
  }
  tally::test::progress_barrier(MPI_COMM_WORLD, m);
  const tally::stats s = m.stats();
  m.free();
  // Local: the stats agree with what PMPI saw.
  EXPECT_EQ(s.requests_sent, request_sends.load() - req0);
  EXPECT_EQ(s.tokens_sent, token_sends.load() - tok0);
  EXPECT_EQ(s.acquisitions, 100u);
  // Global: every remote entry took one broadcast (n-1 REQUESTs) and one token;
  // after free every REQUEST was received and every token sent was received (a
  // REQUEST may still be in flight after the barrier, but not after free).
  const tally::stats f = m.stats();
  EXPECT_EQ(f.requests_sent, s.requests_sent);  // free sends no REQUEST
  const std::uint64_t remote = global_sum(f.acquisitions - f.local_acquisitions);
  EXPECT_EQ(global_sum(f.requests_sent), remote * static_cast<std::uint64_t>(n - 1));
  EXPECT_EQ(global_sum(f.tokens_sent), remote);
  EXPECT_EQ(global_sum(f.requests_received), global_sum(f.requests_sent));
  EXPECT_EQ(global_sum(f.tokens_received), global_sum(f.tokens_sent));
  EXPECT_EQ(global_sum(f.acquisitions), 100u * static_cast<std::uint64_t>(n));
}

INSTANTIATE_TEST_SUITE_P(Progress, Messages,
                         ::testing::Values(tally::progress_mode::in_calls, tally::progress_mode::thread),
                         tally::test::progress_name{});

}  // namespace
