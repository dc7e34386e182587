// Every error code from C++ (tally::error), and that a failed call leaves the
// mutex usable; the C API's codes: tests/capi/test_capi_errors.cpp. TALLY_ERR_MPI is
// provoked by making MPI_Comm_idup fail through a PMPI wrapper (inject.hpp);
// errc::thread_level lives in test_thread_level.cpp, which initializes MPI without
// MPI_THREAD_MULTIPLE.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "inject.hpp"
#include "support.hpp"
#include "tally/guarded.hpp"

// tally::guarded<T> is tally::mutex's friend: this specialization stands for a
// program built against another header, whose inline constructors would pass a
// different sizeof(tally::options) to the library.
namespace tally {
struct other_header {};
template <>
class guarded<other_header> {
 public:
  static void create(MPI_Comm comm, std::size_t options_size) {
    const mutex m(comm, options{}, options_size, {}, nullptr);
  }
};
}  // namespace tally

namespace {

using tally::errc;
using tally::test::world_rank;
using tally::test::world_size;

using tally::test::expect_error;

tally::options owner(int r) {
  tally::options o;
  o.initial_owner = r;
  return o;
}

// --- C++ -------------------------------------------------------------------------------

TEST(CppErrors, InvalidArgumentsAtCreation) {
  const int n = world_size();
  expect_error(errc::arg, [] { tally::mutex m(MPI_COMM_NULL); });
  const std::string msg = expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, owner(n)); });
  EXPECT_NE(msg.find("initial_owner"), std::string::npos) << msg;
  expect_error(errc::arg, [] { tally::mutex m(MPI_COMM_WORLD, owner(-1)); });
  tally::options big;
  big.payload_bytes = tally::max_payload_bytes + 1;
  expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, big); });
  tally::options bad_interval;
  bad_interval.polling.interval = std::chrono::microseconds(-5);
  expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, bad_interval); });
  // An interval beyond the limit would stretch every handoff (and, before the limit,
  // an hour-long sleep delayed free()).
  tally::options long_interval;
  long_interval.polling.interval = tally::max_poll_interval + std::chrono::microseconds(1);
  const std::string what = expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, long_interval); });
  EXPECT_NE(what.find("exceeds the limit"), std::string::npos) << what;
  tally::options long_drain;
  long_drain.polling.idle_drain = std::chrono::hours(2);
  expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, long_drain); });
}

TEST(CppErrors, AnMpiFailureMakesTheMutexUnusableOnEveryRank) {
  // The last rank's next MPI_Isend (the first REQUEST of its lock) fails. That lock
  // throws errc::mpi with MPI's error string; every later call of every thread of
  // that rank rethrows it; every other rank learns it from a FAULT message and
  // fails its next call naming the rank; free() tears down without hanging and
  // reports it; and MPI still works for a new mutex.
  TALLY_FLAT_SEMANTICS();  // a single node sends nothing under topology::node
  const int n = world_size(), me = world_rank(), victim = n - 1;
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  char mpi_text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(MPI_ERR_OTHER, mpi_text, &len);
  for (const auto mode : {tally::progress_mode::in_calls, tally::progress_mode::thread}) {
    tally::options o;
    o.progress = mode;
    tally::mutex m(MPI_COMM_WORLD, o);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == victim) {
      tally::test::fail_isend_after = 1;
      const std::string what = expect_error(errc::mpi, [&] { m.lock(); });
      EXPECT_NE(what.find("MPI_Isend(REQUEST) failed"), std::string::npos) << what;
      EXPECT_NE(what.find(mpi_text), std::string::npos) << what;
      std::string other_thread;
      std::thread t([&] { other_thread = expect_error(errc::mpi, [&] { m.lock(); }); });
      t.join();
      EXPECT_EQ(other_thread, what);
      EXPECT_EQ(expect_error(errc::mpi, [&] { (void)m.try_lock(); }), what);
      EXPECT_EQ(expect_error(errc::mpi, [&] { (void)m.lock_async(); }), what);
    } else {
      std::string what;
      while (what.empty()) {  // until the FAULT message arrives
        try {
          m.poll();
        } catch (const tally::error& e) {
          EXPECT_EQ(e.code(), errc::mpi);
          what = e.what();
        }
      }
      EXPECT_NE(what.find("rank " + std::to_string(victim) + " of this mutex failed"), std::string::npos) << what;
      EXPECT_NE(what.find("MPI_Isend(REQUEST) failed"), std::string::npos) << what;
      EXPECT_EQ(expect_error(errc::mpi, [&] { m.lock(); }), what);
    }
    expect_error(errc::mpi, [&] { m.free(); });  // no drain, no hang; the failure again
    expect_error(errc::state, [&] { m.lock(); });
  }
  tally::mutex fresh(MPI_COMM_WORLD);
  fresh.lock();
  fresh.unlock();
  tally::test::progress_barrier(MPI_COMM_WORLD, fresh);
  EXPECT_EQ(fresh.stats().acquisitions, 1u);
}

// A larger tally::options than the library's (a newer header) is refused on every
// rank, naming the cause; one smaller than any 1.x header's is no options at all.
TEST(CppErrors, OptionsOfAnotherHeaderSizeAreRefused) {
  using probe = tally::guarded<tally::other_header>;
  const std::string newer = expect_error(errc::arg, [] { probe::create(MPI_COMM_WORLD, sizeof(tally::options) + 8); });
  EXPECT_NE(newer.find("newer tally/options.hpp"), std::string::npos) << newer;
  expect_error(errc::arg, [] { probe::create(MPI_COMM_WORLD, sizeof(tally::options) / 2); });
  probe::create(MPI_COMM_WORLD, sizeof(tally::options));  // the same header: created and freed
}

TEST(CppErrors, QueriesKeepTheirFinalValuesAfterFree) {
  tally::mutex m(MPI_COMM_WORLD);
  m.lock();
  m.unlock();
  m.free();
  EXPECT_EQ(m.stats().acquisitions, 1u);
  EXPECT_EQ(m.rank(), world_rank());
  EXPECT_EQ(m.size(), world_size());
  expect_error(errc::state, [&] { m.lock(); });
  expect_error(errc::state, [&] { m.poll(); });
}

TEST(CppErrors, OneRanksBadArgumentFailsEveryRank) {
  // Only the last rank passes an out-of-range owner; all ranks must fail, none hang.
  const int n = world_size();
  expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, owner(world_rank() == n - 1 ? n : 0)); });
  tally::options o;
  o.payload_bytes = world_rank() == 0 ? 8 : 16;
  if (n > 1) {
    const std::string msg = expect_error(errc::arg, [&] { tally::mutex m(MPI_COMM_WORLD, o); });
    EXPECT_NE(msg.find("payload"), std::string::npos) << msg;
  }
  // The communicator is still fine for a correct creation afterwards.
  tally::mutex ok(MPI_COMM_WORLD);
  ok.lock();
  ok.unlock();
}

TEST(CppErrors, AnErrorNamesItsOperationApartFromItsDetail) {
  tally::mutex m(MPI_COMM_WORLD, owner(0));
  try {
    m.unlock();
    FAIL() << "unlock without holding did not throw";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.operation(), "unlock");
    EXPECT_EQ(e.detail(), "calling thread does not hold the critical section");
    EXPECT_STREQ(e.what(), "tally: unlock: calling thread does not hold the critical section");
  }
  try {  // creation: no operation, the detail after the prefix
    tally::mutex bad(MPI_COMM_NULL);
    FAIL() << "MPI_COMM_NULL did not throw";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.operation(), "");
    EXPECT_EQ(e.detail(), "communicator is MPI_COMM_NULL");
    EXPECT_STREQ(e.what(), "tally: communicator is MPI_COMM_NULL");
  }
  // An error built by a user: its text as given, all of it the detail.
  const tally::error own(errc::state, "mine: as written");
  EXPECT_EQ(own.operation(), "");
  EXPECT_EQ(own.detail(), "mine: as written");
  tally::test::progress_barrier(MPI_COMM_WORLD, m);
}

TEST(CppErrors, MisuseThrowsAndLeavesTheMutexUsable) {
  tally::mutex m(MPI_COMM_WORLD, owner(0));
  expect_error(errc::not_owner, [&] { m.unlock(); });
  expect_error(errc::not_owner, [&] { (void)m.payload(); });
  m.lock();
  expect_error(errc::deadlock, [&] { m.lock(); });
  expect_error(errc::deadlock, [&] { (void)m.try_lock(); });
  expect_error(errc::deadlock, [&] { (void)m.try_lock_for(std::chrono::milliseconds(1)); });
  EXPECT_EQ(m.payload().size(), 0u);
  m.unlock();
  expect_error(errc::not_owner, [&] { m.unlock(); });
  m.lock();  // still works
  m.unlock();
  tally::test::progress_barrier(MPI_COMM_WORLD, m);
}

TEST(CppErrors, UseAfterFreeIsAStateError) {
  tally::mutex m(MPI_COMM_WORLD);
  m.free();
  expect_error(errc::state, [&] { m.lock(); });
  expect_error(errc::state, [&] { (void)m.try_lock(); });
  expect_error(errc::state, [&] { m.unlock(); });
  expect_error(errc::state, [&] { m.poll(); });
  expect_error(errc::state, [&] { m.free(); });
}

TEST(CppErrors, FreeWhileHoldingReleasesFreesAndReports) {
  tally::mutex m(MPI_COMM_WORLD, owner(0));
  if (world_rank() == 0) {
    m.lock();
    expect_error(errc::state, [&] { m.free(); });
  } else {
    m.free();
  }
  expect_error(errc::state, [&] { m.lock(); });
}

TEST(CppErrors, FailedMpiCallIsReportedWithMpisMessage) {
  // A communicator with no mutex yet: its first creation duplicates it.
  MPI_Comm fresh = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  tally::test::fail_comm_idup = true;
  try {
    tally::mutex m(fresh);
    ADD_FAILURE() << "creation succeeded although MPI_Comm_idup failed";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), errc::mpi);
    EXPECT_EQ(e.mpi_error(), MPI_ERR_OTHER);
    EXPECT_NE(std::string(e.what()).find("MPI_Comm_idup"), std::string::npos) << e.what();
  }
  tally::test::fail_comm_idup = false;
  MPI_Comm_free(&fresh);
}

}  // namespace
