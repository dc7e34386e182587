// Teardown: free is collective and leaves nothing in flight, also with withdrawn
// requests outstanding; creating and freeing a thousand times with traffic leaks
// no communicator, no datatype and no window; what the mutexes' channel holds
// (two communicators; topology::node: the node's communicator and a slab window)
// goes when the communicator they were created on is freed. A creation agrees on
// its mutex's id also where ranks' free ids differ.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <thread>
#include <utility>

#include "runtime/agreement.hpp"
#include "support.hpp"

namespace {
std::atomic<long> comms_made{0}, comms_freed{0}, types_made{0}, types_freed{0}, wins_made{0}, wins_freed{0};
// Nonblocking reductions on MPI_COMM_WORLD: all of them (a creation's agreement
// starts with one) and those of two MPI_LONG_LONG (a round of the id agreement).
std::atomic<long> world_reductions{0}, id_rounds{0};
}  // namespace

extern "C" {
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* out, MPI_Request* req) {
  ++comms_made;
  return PMPI_Comm_idup(comm, out, req);
}
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out) {
  const int rc = PMPI_Comm_split_type(comm, type, key, info, out);
  if (rc == MPI_SUCCESS) ++comms_made;
  return rc;
}
int MPI_Win_allocate_shared(MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void* base, MPI_Win* win) {
  const int rc = PMPI_Win_allocate_shared(size, unit, info, comm, base, win);
  if (rc == MPI_SUCCESS) ++wins_made;  // a failed allocation leaves nothing to free
  return rc;
}
int MPI_Win_free(MPI_Win* win) {
  ++wins_freed;
  return PMPI_Win_free(win);
}
int MPI_Comm_free(MPI_Comm* comm) {
  ++comms_freed;
  return PMPI_Comm_free(comm);
}
int MPI_Iallreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* req) {
  if (comm == MPI_COMM_WORLD) {
    if (count == 2 && type == MPI_LONG_LONG) ++id_rounds;
    ++world_reductions;
  }
  return PMPI_Iallreduce(in, out, count, type, op, comm, req);
}
int MPI_Type_commit(MPI_Datatype* type) {
  ++types_made;
  return PMPI_Type_commit(type);
}
int MPI_Type_free(MPI_Datatype* type) {
  ++types_freed;
  return PMPI_Type_free(type);
}
}

namespace {

using tally::test::global_sum;
using tally::test::progress_barrier;
using tally::test::world_rank;
using tally::test::world_size;

// Frees m and checks, over all ranks, that every message sent was received.
// A failing free() is reported, not thrown: every rank must reach the reductions.
void free_and_check_balanced(tally::mutex& m) {
  try {
    m.free();
  } catch (const tally::error& e) {
    ADD_FAILURE() << e.what();
  }
  const tally::stats s = m.stats();
  EXPECT_EQ(global_sum(s.requests_sent), global_sum(s.requests_received));
  EXPECT_EQ(global_sum(s.tokens_sent), global_sum(s.tokens_received));
}

// The id agreement of a creation (runtime/agreement.hpp), over the real reduction,
// with each rank's free ids made to differ as a free() still ending on another
// thread leaves them: rank r still holds id r. Rank 0 proposes 1 and the others 0;
// then rank 1 finds 1 taken and proposes 2, and so on: n rounds after the first
// reduction, ending at id n, the lowest one free on every rank.
TEST(IdAgreement, RanksWhoseFreeIdsDifferAgreeOnOneFreeOnAll) {
  const long long n = world_size(), me = world_rank();
  const auto lowest_free = [me](long long from) { return from == me ? from + 1 : from; };
  int rounds = 0;
  const auto reduce = [&rounds](long long v) {
    ++rounds;
    long long in[2] = {v, -v}, out[2] = {0, 0};
    EXPECT_EQ(MPI_Allreduce(in, out, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    return std::pair<long long, long long>{out[0], -out[1]};
  };
  const std::pair<long long, long long> first = reduce(lowest_free(0));
  EXPECT_EQ(first.first, 1);
  EXPECT_EQ(first.second, n == 1 ? 1 : 0);
  const long long id = tally::detail::agree_on_id(first.first, first.second, lowest_free, reduce);
  EXPECT_EQ(id, n);
  EXPECT_EQ(lowest_free(id), id) << "the id agreed is taken on rank " << me;
  EXPECT_EQ(rounds, n == 1 ? 1 : n + 1);
}

// The same through tally: on rank 0 a creation proposes its id while a mutex that
// the other ranks free first is still alive; only then does rank 0 free it, on
// another thread. The ranks propose different ids, run one more round and agree
// on one free everywhere; the new mutex then serves every rank.
TEST(IdAgreement, CreationWhileAFreeIsEndingOnAnotherThread) {
  const int n = world_size(), me = world_rank();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  tally::mutex keep(MPI_COMM_WORLD);  // the channel stays in use throughout
  tally::mutex x(MPI_COMM_WORLD);
  std::unique_ptr<tally::mutex> y;
  const long rounds_before = id_rounds.load();
  if (me == 0) {
    const long reductions = world_reductions.load();
    std::exception_ptr failed;
    std::atomic<bool> ended{false};
    std::thread creator([&] {
      try {
        y = std::make_unique<tally::mutex>(MPI_COMM_WORLD);
      } catch (...) {
        failed = std::current_exception();
      }
      ended = true;
    });
    // The creation has made its proposal (x alive here) once its agreement starts
    // (or it failed before that: then the join below reports it).
    while (world_reductions.load() == reductions && !ended.load()) std::this_thread::yield();
    x.free();
    creator.join();
    if (failed) std::rethrow_exception(failed);
  } else {
    x.free();
    y = std::make_unique<tally::mutex>(MPI_COMM_WORLD);
  }
  EXPECT_EQ(id_rounds.load() - rounds_before, 1) << "the ranks proposed the same id: no second round ran";
  for (int k = 0; k < 20; ++k) {
    y->lock();
    y->unlock();
  }
  EXPECT_EQ(global_sum(y->stats().acquisitions), static_cast<std::uint64_t>(20 * n));
  progress_barrier(MPI_COMM_WORLD, [&] { y->poll(); });
  y->free();
  keep.free();
}

TEST(Teardown, FreeWithWithdrawnRequestsOutstanding) {
  tally::options o;
  o.initial_owner = 0;
  tally::mutex m(MPI_COMM_WORLD, o);
  // Rank 0 is in the critical section while everyone else asks and gives up at
  // once, so no attempt can enter (a zero timeout still makes one progress step,
  // which would take a token that is idle and quick). Then rank 0 leaves: the token
  // must visit each withdrawn requester (or be routed past it) before free
  // completes.
  if (world_rank() == 0) m.lock();
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() != 0) {
    EXPECT_FALSE(m.try_lock_for(std::chrono::seconds(0)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) m.unlock();
  free_and_check_balanced(m);
}

TEST(Teardown, FreeRightAfterContention) {
  tally::mutex m(MPI_COMM_WORLD);
  for (int i = 0; i < 10; ++i) {
    m.lock();
    m.unlock();
  }
  free_and_check_balanced(m);  // no barrier first: REQUESTs may still be in flight
}

// $TALLY_TEARDOWN_CYCLES creations (default 1000; the MPICH test preset runs fewer:
// MPICH busy-polls, and each node-topology cycle creates a shared-memory segment).
int teardown_cycles() { return static_cast<int>(tally::test::env_count("TALLY_TEARDOWN_CYCLES", 1000)); }

TEST(Teardown, CreateAndFreeAThousandTimesWithTraffic) {
  const int cycles = teardown_cycles();
  const long comms0 = comms_made - comms_freed;
  const long wins0 = wins_made - wins_freed;
  const long types_before = types_made;
  const long freed_before = types_freed;
  // The mutexes' communicator, duplicated through the counted MPI_Comm_idup: its
  // first mutex creates the channel (two duplicates), which freeing it frees.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request dup = MPI_REQUEST_NULL;
  MPI_Comm_idup(MPI_COMM_WORLD, &comm, &dup);
  MPI_Wait(&dup, MPI_STATUS_IGNORE);
  std::uint64_t acquisitions = 0;
  for (int i = 0; i < cycles; ++i) {
    tally::options o;
    o.initial_owner = i % world_size();
    o.progress = i % 10 == 0 ? tally::progress_mode::thread : tally::progress_mode::in_calls;
    tally::mutex m(comm, o);
    if ((i + world_rank()) % 3 == 0) {
      m.lock();
      m.unlock();
    } else if ((i + world_rank()) % 3 == 1) {
      if (m.try_lock_for(std::chrono::microseconds(i % 7))) m.unlock();
    }
    acquisitions += m.stats().acquisitions;
    // The destructor frees collectively.
  }
  EXPECT_GT(global_sum(acquisitions), 0u);
  // Left until the communicator is freed: it and its channel's two duplicates (and
  // in the node topology the channel's node communicator and one slab window).
  const bool node = tally::test::run_topology() == "node";
  EXPECT_EQ(comms_made - comms_freed, comms0 + (node ? 4 : 3));
  EXPECT_EQ(wins_made - wins_freed, wins0 + (node ? 1 : 0));  // the node level was really built
  MPI_Comm_free(&comm);
  EXPECT_EQ(comms_made - comms_freed, comms0);
  EXPECT_EQ(wins_made - wins_freed, wins0);
  EXPECT_EQ(types_made - types_before, cycles);   // one committed token type per mutex
  EXPECT_EQ(types_freed - freed_before, cycles);  // and frees it
}

}  // namespace
