// Every error code of the C API (return codes and tally_last_error), and that a
// failed call leaves the mutex usable. TALLY_ERR_MPI is provoked by making
// MPI_Comm_idup fail through a PMPI wrapper (inject.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "inject.hpp"
#include "support.hpp"
#include "tally/tally.h"

namespace {

using tally::test::world_rank;
using tally::test::world_size;

TEST(CApi, VersionIsTheHeaders) {
  int major = -1, minor = -1, patch = -1;
  EXPECT_EQ(tally_get_version(&major, &minor, &patch), TALLY_SUCCESS);
  EXPECT_EQ(major, TALLY_VERSION_MAJOR);
  EXPECT_EQ(minor, TALLY_VERSION_MINOR);
  EXPECT_EQ(patch, TALLY_VERSION_PATCH);
  EXPECT_EQ(TALLY_VERSION, major * 10000 + minor * 100 + patch);
  int only_minor = -1;  // NULL arguments are skipped
  EXPECT_EQ(tally_get_version(nullptr, &only_minor, nullptr), TALLY_SUCCESS);
  EXPECT_EQ(only_minor, TALLY_VERSION_MINOR);
}

// The structs record their size (tally.h): init writes exactly the caller's bytes,
// create reads only those, and fields a newer header added are refused when set.
TEST(CApi, OptionsCarryTheirSize) {
  struct newer {  // tally_options as a later header could extend it
    tally_options o;
    std::uint64_t added_later;
  };
  static_assert(offsetof(newer, added_later) >= sizeof(tally_options));
  newer n;
  std::memset(&n, 0xab, sizeof n);
  ASSERT_EQ(tally_options_init_sized(&n.o, sizeof n), TALLY_SUCCESS);
  EXPECT_EQ(n.o.size, sizeof n);
  EXPECT_EQ(n.added_later, 0u) << "unknown fields are zeroed";
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, &n.o, &m), TALLY_SUCCESS) << tally_last_error();
  ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
  n.added_later = 1;  // a field this library does not know, set: refused on every rank
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &n.o, &m), TALLY_ERR_ARG);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(tally_last_error(), "newer tally.h"), nullptr) << tally_last_error();

  // A size no init wrote (a struct used uninitialized), and one too small to init.
  tally_options o;
  ASSERT_EQ(tally_options_init(&o), TALLY_SUCCESS);
  EXPECT_EQ(o.size, sizeof o);
  o.size = 3;
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_ERR_ARG);
  EXPECT_NE(std::strstr(tally_last_error(), "tally_options_init"), nullptr) << tally_last_error();
  std::memset(&o, 0xcd, sizeof o);
  EXPECT_EQ(tally_options_init_sized(&o, offsetof(tally_options, pass_bound)), TALLY_ERR_ARG);
  EXPECT_EQ(o.size, static_cast<std::size_t>(0xcdcdcdcdcdcdcdcdull)) << "a refused init writes nothing";
  EXPECT_EQ(tally_options_init(nullptr), TALLY_ERR_ARG);
}

TEST(CApi, StatsWriteOnlyTheCallersSize) {
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  struct newer {
    tally_stats s;
    std::uint64_t added_later;
  };
  newer n;
  std::memset(&n, 0xab, sizeof n);
  ASSERT_EQ(tally_mutex_get_stats_sized(m, &n.s, sizeof n), TALLY_SUCCESS);
  EXPECT_EQ(n.s.acquisitions, 1u);
  EXPECT_EQ(n.added_later, 0u) << "counters this library does not keep read 0";
  tally_stats s;
  std::memset(&s, 0xab, sizeof s);
  EXPECT_EQ(tally_mutex_get_stats_sized(m, &s, 8), TALLY_ERR_ARG);
  EXPECT_EQ(s.acquisitions, 0xababababababababull) << "a refused call writes nothing";
  ASSERT_EQ(tally_mutex_get_stats(m, &s), TALLY_SUCCESS);
  // The counters of this rank's own calls; what other ranks' requests move may
  // have changed between the two reads.
  EXPECT_EQ(s.acquisitions, 1u);
  EXPECT_EQ(s.local_acquisitions, n.s.local_acquisitions);
  EXPECT_EQ(s.requests_sent, n.s.requests_sent);
  EXPECT_EQ(s.broadcasts, n.s.broadcasts);
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
}

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
  EXPECT_EQ(tally_mutex_create_payload(MPI_COMM_WORLD, nullptr, TALLY_MAX_PAYLOAD_BYTES + 1, &m), TALLY_ERR_ARG);
  tally_options_init(&o);
  o.poll_interval_us = 4294967295u;  // about 71 minutes between polls
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &o, &m), TALLY_ERR_ARG);
  EXPECT_NE(std::strstr(tally_last_error(), "polling interval"), nullptr) << tally_last_error();
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

TEST(CErrors, MessagesNameTheCFunction) {
  // What C++ reports as "tally: unlock: ..." a C caller reads in C names.
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_SUCCESS);
  auto says = [](const char* prefix) { return std::string(tally_last_error()).starts_with(prefix); };
  EXPECT_EQ(tally_mutex_unlock(m), TALLY_ERR_NOT_OWNER);
  EXPECT_TRUE(says("tally: tally_mutex_unlock: calling thread does not hold")) << tally_last_error();
  ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
  EXPECT_EQ(tally_mutex_lock(m), TALLY_ERR_DEADLOCK);
  EXPECT_TRUE(says("tally: tally_mutex_lock: calling thread already holds")) << tally_last_error();
  int acquired = -1;
  EXPECT_EQ(tally_mutex_trylock(m, &acquired), TALLY_ERR_DEADLOCK);
  EXPECT_TRUE(says("tally: tally_mutex_trylock: ")) << tally_last_error();
  EXPECT_EQ(tally_mutex_timedlock(m, -1.0, &acquired), TALLY_ERR_ARG);
  EXPECT_TRUE(says("tally: tally_mutex_timedlock: timeout must be")) << tally_last_error();
  EXPECT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  EXPECT_EQ(tally_mutex_lock(nullptr), TALLY_ERR_ARG);
  EXPECT_TRUE(says("tally: tally_mutex_lock: null mutex handle")) << tally_last_error();
  tally_mutex none = nullptr;
  EXPECT_EQ(tally_mutex_create(MPI_COMM_NULL, nullptr, &none), TALLY_ERR_ARG);
  EXPECT_TRUE(says("tally: tally_mutex_create: communicator is MPI_COMM_NULL")) << tally_last_error();
  ASSERT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
  EXPECT_EQ(tally_mutex_free(&m), TALLY_ERR_ARG);
  EXPECT_TRUE(says("tally: tally_mutex_free: null mutex handle")) << tally_last_error();
  // No C++ names anywhere in what a C caller reads.
  EXPECT_EQ(std::strstr(tally_last_error(), "::"), nullptr) << tally_last_error();
}

TEST(CErrors, EveryCodeComesWithAMessageInTheCallingThread) {
  // The message is per thread: a thread that never called tally before gets the
  // message of its own failure, not an empty string or another thread's.
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create(MPI_COMM_WORLD, nullptr, &m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
  int rc = -1;
  std::string what;
  std::thread other([&] {
    rc = tally_mutex_unlock(m);
    what = tally_last_error();
  });
  other.join();
  EXPECT_EQ(rc, TALLY_ERR_NOT_OWNER);
  EXPECT_NE(what.find("does not hold"), std::string::npos) << what;
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  // Huge timeouts saturate to "wait for the token": every rank enters in turn.
  int acquired = 0;
  ASSERT_EQ(tally_mutex_timedlock(m, HUGE_VAL, &acquired), TALLY_SUCCESS);
  EXPECT_EQ(acquired, 1);
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  ASSERT_EQ(tally_mutex_timedlock(m, 1e300, &acquired), TALLY_SUCCESS);
  EXPECT_EQ(acquired, 1);
  ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
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
  // A communicator with no mutex yet: its first creation duplicates it.
  MPI_Comm fresh = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  tally::test::fail_comm_idup = true;
  tally_mutex m = nullptr;
  EXPECT_EQ(tally_mutex_create(fresh, nullptr, &m), TALLY_ERR_MPI);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(tally_last_error(), "MPI_Comm_idup"), nullptr) << tally_last_error();
  tally::test::fail_comm_idup = false;
  MPI_Comm_free(&fresh);
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
