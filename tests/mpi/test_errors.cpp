// Every error code, from C++ (tally::error) and from C (return codes), and that a
// failed call leaves the mutex usable. TALLY_ERR_MPI is provoked by making
// MPI_Comm_idup fail through a PMPI wrapper; TALLY_ERR_THREAD_LEVEL lives in
// test_thread_level.cpp, which initializes MPI without MPI_THREAD_MULTIPLE.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "support.hpp"
#include "tally/tally.h"

namespace {
bool fail_comm_dup = false;  // set collectively by the MPI-failure tests
}

extern "C" int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* out, MPI_Request* req) {
  if (fail_comm_dup) return MPI_ERR_OTHER;
  return PMPI_Comm_idup(comm, out, req);
}

namespace {

using tally::errc;
using tally::test::world_rank;
using tally::test::world_size;

// Runs f, expecting tally::error with `code`; returns its message.
template <class F>
std::string expect_error(errc code, F&& f) {
  try {
    f();
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no tally::error thrown, expected code " << static_cast<int>(code);
  return {};
}

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
  fail_comm_dup = true;
  try {
    tally::mutex m(MPI_COMM_WORLD);
    ADD_FAILURE() << "creation succeeded although MPI_Comm_idup failed";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), errc::mpi);
    EXPECT_EQ(e.mpi_error(), MPI_ERR_OTHER);
    EXPECT_NE(std::string(e.what()).find("MPI_Comm_idup"), std::string::npos) << e.what();
  }
  fail_comm_dup = false;
}

// --- C ---------------------------------------------------------------------------------

TEST(CErrors, InvalidArguments) {
  tally_mutex m = nullptr;
  EXPECT_EQ(tally_mutex_create(MPI_COMM_NULL, nullptr, &m), TALLY_ERR_ARG);
  EXPECT_EQ(m, nullptr);
  tally_options o;
  tally_options_init(&o);
  o.initial_owner = world_size();
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_ERR_ARG);
  EXPECT_NE(std::strstr(tally_last_error(), "initial_owner"), nullptr) << tally_last_error();
  tally_options_init(&o);
  const int bad_enum = 7;  // as a C caller could pass it
  std::memcpy(&o.progress, &bad_enum, sizeof o.progress);
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_ERR_ARG);
  tally_options_init(&o);
  std::memcpy(&o.poll, &bad_enum, sizeof o.poll);
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_create_payload(MPI_COMM_WORLD, nullptr, TALLY_MAX_PAYLOAD_BYTES + 1, &m),
            TALLY_ERR_ARG);
  // A NULL out pointer is still a collective failure, on every rank.
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, nullptr), TALLY_ERR_ARG);

  EXPECT_EQ(tally_mutex_lock(nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_unlock(nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_poll(nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_free(nullptr), TALLY_ERR_ARG);

  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_SUCCESS);
  int flag = 0;
  void* ptr = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(tally_mutex_trylock(m, nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_timedlock(m, 1.0, nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_timedlock(m, -1.0, &flag), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_timedlock(m, 0.0 / 0.0, &flag), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_get_stats(m, nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_payload(m, nullptr, &bytes), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_payload(m, &ptr, nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_rank(m, nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_size(m, nullptr), TALLY_ERR_ARG);
  EXPECT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
}

TEST(CErrors, MisuseCodes) {
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_SUCCESS);
  void* ptr = nullptr;
  size_t bytes = 0;
  int acquired = -1;
  EXPECT_EQ(tally_mutex_unlock(m), TALLY_ERR_NOT_OWNER);
  EXPECT_EQ(tally_mutex_payload(m, &ptr, &bytes), TALLY_ERR_NOT_OWNER);
  ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
  EXPECT_EQ(tally_mutex_lock(m), TALLY_ERR_DEADLOCK);
  EXPECT_EQ(tally_mutex_trylock(m, &acquired), TALLY_ERR_DEADLOCK);
  EXPECT_EQ(acquired, 0);
  EXPECT_EQ(tally_mutex_timedlock(m, 0.001, &acquired), TALLY_ERR_DEADLOCK);
  EXPECT_EQ(tally_mutex_payload(m, &ptr, &bytes), TALLY_SUCCESS);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  EXPECT_EQ(tally_mutex_unlock(m), TALLY_ERR_NOT_OWNER);
  EXPECT_NE(std::strstr(tally_last_error(), "unlock"), nullptr) << tally_last_error();
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
}

TEST(CErrors, UseAfterFreeAndDoubleFree) {
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_SUCCESS);
  tally_mutex stale = m;
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(tally_mutex_lock(stale), TALLY_ERR_STATE);
  EXPECT_EQ(tally_mutex_poll(stale), TALLY_ERR_STATE);
  EXPECT_EQ(tally_mutex_free(&stale), TALLY_ERR_STATE);
  EXPECT_EQ(tally_mutex_free(&m), TALLY_ERR_ARG);  // *m is NULL
}

TEST(CErrors, FreeWhileHoldingReturnsStateAfterFreeing) {
  tally_options o;
  tally_options_init(&o);
  o.initial_owner = world_size() - 1;
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_SUCCESS);
  if (world_rank() == world_size() - 1) {
    ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
    EXPECT_EQ(tally_mutex_free(&m), TALLY_ERR_STATE);
  } else {
    EXPECT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
  }
  EXPECT_EQ(m, nullptr);
}

TEST(CErrors, FailedMpiCall) {
  fail_comm_dup = true;
  tally_mutex m = nullptr;
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_ERR_MPI);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(tally_last_error(), "MPI_Comm_idup"), nullptr) << tally_last_error();
  fail_comm_dup = false;
}

TEST(CErrors, EveryCodeHasADistinctDescription) {
  const int codes[] = {TALLY_SUCCESS,          TALLY_ERR_ARG, TALLY_ERR_NOT_OWNER, TALLY_ERR_DEADLOCK,
                       TALLY_ERR_THREAD_LEVEL, TALLY_ERR_MPI, TALLY_ERR_STATE};
  for (int a : codes)
    for (int b : codes)
      if (a != b) {
        EXPECT_STRNE(tally_strerror(a), tally_strerror(b));
      }
  EXPECT_STREQ(tally_strerror(999), "unknown tally error code");
  EXPECT_STREQ(tally_strerror(-1), "unknown tally error code");
}

}  // namespace
