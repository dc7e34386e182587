// lock_async (tally::lock_request) and its C twin, in both progress modes: mutual
// exclusion with acquisitions that complete while the caller works, several
// outstanding acquisitions on different mutexes, MPI_Waitany over lock and
// communication requests, cancel racing with the token's arrival, an unobserved
// acquisition released by the request's destructor, and the errors: free with an
// acquisition outstanding, a request used after its mutex was freed, misuse.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <vector>

#include "support.hpp"
#include "tally/tally.h"

namespace {

using tally::errc;
using tally::progress_mode;
using tally::test::progress_barrier;
using tally::test::shared_counter;
using tally::test::world_rank;
using tally::test::world_size;

using tally::test::expect_error;

class Async : public ::testing::TestWithParam<progress_mode> {
 protected:
  tally::options opts(int owner = 0) const {
    tally::options o;
    o.progress = GetParam();
    o.initial_owner = owner;
    return o;
  }
  bool thread() const { return GetParam() == progress_mode::thread; }
};

// Busy work between tests of a pending request.
void work() {
  volatile double x = 1.0;
  for (int i = 0; i < 2000; ++i) x = x * 1.0000001 + 1e-9;
}

TEST_P(Async, AcquisitionsExcludeWhileTheCallerWorks) {
  constexpr int rounds = 40;
  shared_counter counter(MPI_COMM_WORLD, 0);
  tally::mutex m(MPI_COMM_WORLD, opts());
  std::uint64_t overlaps = 0, worked = 0;
  for (int k = 0; k < rounds; ++k) {
    tally::lock_request r = m.lock_async();
    while (!r.test()) {
      work();
      ++worked;
    }
    if (counter.enter(world_rank()) != -1) ++overlaps;
    counter.increment();
    if (counter.leave(world_rank()) != world_rank()) ++overlaps;
    m.unlock();
  }
  progress_barrier(MPI_COMM_WORLD, m);
  EXPECT_EQ(overlaps, 0u);
  EXPECT_EQ(counter.value(), static_cast<std::int64_t>(rounds) * world_size());
  EXPECT_EQ(m.stats().acquisitions, static_cast<std::uint64_t>(rounds));
  progress_barrier(MPI_COMM_WORLD, m);
}

TEST_P(Async, SeveralOutstandingOnDifferentMutexes) {
  // Three mutexes with different owners; every rank starts all three acquisitions,
  // then serves whichever completes first (no hold-and-wait: each is released before
  // waiting on the next), until all three were held once.
  const int n = world_size();
  std::vector<std::unique_ptr<tally::mutex>> ms;
  for (int k = 0; k < 3; ++k) ms.push_back(std::make_unique<tally::mutex>(MPI_COMM_WORLD, opts(k % n)));
  for (int round = 0; round < 5; ++round) {
    std::vector<tally::lock_request> rs;
    for (auto& m : ms) rs.push_back(m->lock_async());
    for (int left = 3; left > 0;) {
      for (std::size_t k = 0; k < rs.size(); ++k) {
        if (!rs[k].valid() || !rs[k].test()) continue;
        ms[k]->unlock();
        rs[k] = tally::lock_request();
        --left;
      }
    }
  }
  for (auto& m : ms) progress_barrier(MPI_COMM_WORLD, *m);
  for (auto& m : ms) EXPECT_EQ(m->stats().acquisitions, 5u);
}

TEST_P(Async, WaitanyOverLockAndCommunicationRequests) {
  tally::mutex m(MPI_COMM_WORLD, opts());
  tally::lock_request r = m.lock_async();
  if (!thread()) {
    // Open MPI completes generalized requests only through MPI_Grequest_complete:
    // without a progress thread nobody would call it while MPI_Waitany blocks.
    expect_error(errc::state, [&] { (void)r.mpi_request(); });
    r.wait();
    m.unlock();
    progress_barrier(MPI_COMM_WORLD, m);
    return;
  }
  // Each rank waits for its lock and for a message from its left neighbour,
  // whichever comes first; the neighbour sends right away.
  const int n = world_size(), me = world_rank();
  int in = -1, out = me;
  MPI_Request reqs[2];
  reqs[0] = r.mpi_request();
  EXPECT_EQ(r.mpi_request(), reqs[0]);  // the same request until MPI frees it
  MPI_Irecv(&in, 1, MPI_INT, (me + n - 1) % n, 5, MPI_COMM_WORLD, &reqs[1]);
  MPI_Send(&out, 1, MPI_INT, (me + 1) % n, 5, MPI_COMM_WORLD);
  bool locked = false, received = false;
  for (int k = 0; k < 2; ++k) {
    int index = -1;
    MPI_Status st;
    ASSERT_EQ(MPI_Waitany(2, reqs, &index, &st), MPI_SUCCESS);
    if (index == 0) {
      int cancelled = 1;
      MPI_Test_cancelled(&st, &cancelled);
      EXPECT_FALSE(cancelled);
      locked = true;
      m.unlock();  // MPI's completion counts as observed: this thread holds it
    } else {
      received = true;
    }
  }
  EXPECT_TRUE(locked && received);
  EXPECT_EQ(in, (me + n - 1) % n);
  expect_error(errc::state, [&] { (void)r.mpi_request(); });  // completed and freed by MPI
  progress_barrier(MPI_COMM_WORLD, m);
}

TEST_P(Async, CancelRacingWithTheToken) {
  // Many acquisitions, each cancelled after a random short wait: some are withdrawn,
  // some were acquired just before (cancel() says so, and the caller holds the lock).
  // Exclusion and the count of acquired entries must hold either way.
  constexpr int rounds = 300;
  shared_counter counter(MPI_COMM_WORLD, 0);
  tally::mutex m(MPI_COMM_WORLD, opts());
  std::minstd_rand rng(static_cast<unsigned>(world_rank()) * 7919u + 3u);
  std::uint64_t overlaps = 0, acquired = 0, withdrawn = 0;
  for (int k = 0; k < rounds; ++k) {
    tally::lock_request r = m.lock_async();
    for (auto spins = rng() % 40; spins > 0; --spins) {
      if (r.test()) break;
      work();
    }
    if (r.cancel()) {
      ++withdrawn;
      expect_error(errc::state, [&] { (void)r.test(); });
      continue;
    }
    ++acquired;
    if (counter.enter(world_rank()) != -1) ++overlaps;
    counter.increment();
    if (counter.leave(world_rank()) != world_rank()) ++overlaps;
    m.unlock();
  }
  progress_barrier(MPI_COMM_WORLD, m);
  const std::uint64_t all = tally::test::global_sum(acquired);
  EXPECT_EQ(overlaps, 0u);
  EXPECT_EQ(counter.value(), static_cast<std::int64_t>(all));
  EXPECT_EQ(acquired + withdrawn, static_cast<std::uint64_t>(rounds));
  EXPECT_EQ(m.stats().acquisitions, acquired);
  progress_barrier(MPI_COMM_WORLD, m);
}

TEST_P(Async, UnobservedAcquisitionIsReleasedByTheDestructor) {
  // The last rank starts an acquisition and forgets it; once the lock was acquired
  // (stats say so), destroying the request releases it, so everyone can lock again.
  const int n = world_size(), last = n - 1;
  tally::mutex m(MPI_COMM_WORLD, opts(0));
  if (world_rank() == last) {
    {
      tally::lock_request r = m.lock_async();
      while (m.stats().acquisitions == 0) m.poll();  // acquired, never observed
    }
    m.lock();  // a leaked lock would throw errc::deadlock here
    m.unlock();
  }
  progress_barrier(MPI_COMM_WORLD, m);
  m.lock();
  m.unlock();
  progress_barrier(MPI_COMM_WORLD, m);
  EXPECT_EQ(m.stats().acquisitions, world_rank() == last ? 3u : 1u);
}

TEST_P(Async, Misuse) {
  tally::mutex m(MPI_COMM_WORLD, opts(world_size() - 1));
  tally::lock_request r = m.lock_async();
  expect_error(errc::deadlock, [&] { (void)m.lock_async(); });  // one outstanding per rank
  expect_error(errc::deadlock, [&] { m.lock(); });              // this thread waits on r
  r.wait();
  EXPECT_TRUE(r.test());                                        // stays acquired
  EXPECT_FALSE(r.cancel());                                     // too late: acquired, held
  expect_error(errc::deadlock, [&] { (void)m.lock_async(); });  // this thread holds it
  m.unlock();
  tally::lock_request empty;
  EXPECT_FALSE(empty.valid());
  expect_error(errc::state, [&] { (void)empty.test(); });
  progress_barrier(MPI_COMM_WORLD, m);
}

TEST_P(Async, FreeWithAnAcquisitionOutstandingAndUseAfterFree) {
  // Rank 0 holds the critical section, so the last rank's acquisition stays pending
  // through a barrier; then both free: rank 0 learns it still held the lock, the
  // last rank that its acquisition was cancelled (or, with a progress thread that
  // got rank 0's token first, that it held the lock). Its request then reports the
  // freed mutex.
  TALLY_FLAT_SEMANTICS();  // rank 0 holds the idle token, so the last rank waits
  const int n = world_size(), last = n - 1;
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  auto m = std::make_unique<tally::mutex>(MPI_COMM_WORLD, opts(0));
  tally::lock_request r;
  // Rank 0 enters before the last rank asks: a progress thread would otherwise hand
  // rank 0's idle token to the earlier REQUEST, and rank 0's lock() would wait for an
  // acquisition that is released only by free() below.
  if (world_rank() == 0) m->lock();
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == last) r = m->lock_async();
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0 || world_rank() == last) {
    try {
      m->free();
      ADD_FAILURE() << "free succeeded";
    } catch (const tally::error& e) {
      EXPECT_EQ(e.code(), errc::state);
      if (world_rank() == last) {
        // Inline, nothing progresses before free(): still pending, so cancelled. With
        // a thread, rank 0's free may hand the token over first: then it was held.
        const std::string what = e.what();
        const bool cancelled = what.find("asynchronous acquisition") != std::string::npos;
        const bool held = what.find("still held the critical section") != std::string::npos;
        EXPECT_TRUE(cancelled || (thread() && held)) << what;
      }
    }
  } else {
    m->free();
  }
  if (world_rank() == last) {
    expect_error(errc::state, [&] { (void)r.test(); });
    m.reset();
    expect_error(errc::state, [&] { (void)r.test(); });  // the mutex is gone altogether
  }
}

TEST_P(Async, CApi) {
  tally_options o;
  tally_options_init(&o);
  o.progress = thread() ? TALLY_PROGRESS_THREAD : TALLY_PROGRESS_IN_CALLS;
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_SUCCESS);
  tally_request r = nullptr;
  ASSERT_EQ(tally_mutex_ilock(m, &r), TALLY_SUCCESS);
  int acquired = 0;
  while (acquired == 0) ASSERT_EQ(tally_request_test(r, &acquired), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_request_free(&r), TALLY_SUCCESS);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(tally_request_free(&r), TALLY_ERR_ARG);

  ASSERT_EQ(tally_mutex_ilock(m, &r), TALLY_SUCCESS);
  tally_request stale = r;
  ASSERT_EQ(tally_request_wait(r), TALLY_SUCCESS);
  int cancelled = 1;
  ASSERT_EQ(tally_request_cancel(r, &cancelled), TALLY_SUCCESS);
  EXPECT_EQ(cancelled, 0);  // acquired: this thread holds it
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  MPI_Request mr = MPI_REQUEST_NULL;
  EXPECT_EQ(tally_request_get_mpi(r, &mr), thread() ? TALLY_SUCCESS : TALLY_ERR_STATE);
  if (mr != MPI_REQUEST_NULL) MPI_Wait(&mr, MPI_STATUS_IGNORE);  // acquired already: completes
  ASSERT_EQ(tally_request_free(&r), TALLY_SUCCESS);
  EXPECT_EQ(tally_request_test(stale, &acquired), TALLY_ERR_STATE);  // a freed handle
  EXPECT_EQ(tally_request_test(nullptr, &acquired), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_ilock(m, nullptr), TALLY_ERR_ARG);
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Progress, Async, ::testing::Values(progress_mode::in_calls, progress_mode::thread),
                         tally::test::progress_name{});

}  // namespace
