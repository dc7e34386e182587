// The token's payload: it travels inside the one token message, the checked view
// rejects use outside its critical section, tally::guarded<T> delivers a typed
// value with the lock, and the C API reaches it too. Then the use case: ordered
// appends to one shared file with the next offset carried in the token.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "helpers/shared_append.hpp"
#include "core/token_layout.hpp"
#include "support.hpp"
#include "tally/guarded.hpp"
#include "tally/tally.h"

namespace {
std::atomic<std::uint64_t> token_sends{0};
std::atomic<int> token_min{1 << 30}, token_max{0};  // bytes of the shortest and longest token sent
}  // namespace

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* req) {
  if (type != MPI_UINT64_T) {  // not a REQUEST (one word, three under topology::node): the token
    int bytes = 0;
    MPI_Type_size(type, &bytes);
    const int b = bytes * count;
    for (int m = token_min; b < m && !token_min.compare_exchange_weak(m, b);) {
    }
    for (int m = token_max; b > m && !token_max.compare_exchange_weak(m, b);) {
    }
    ++token_sends;
  }
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

namespace {

using tally::errc;
using tally::test::progress_barrier;
using tally::test::world_rank;
using tally::test::world_size;

TEST(Payload, TravelsInTheOneTokenMessage) {
  const int n = world_size();
  tally::options o;
  o.payload_bytes = 40;
  const std::uint64_t sends0 = token_sends;
  token_min = 1 << 30;
  token_max = 0;
  tally::mutex m(MPI_COMM_WORLD, o);
  constexpr int rounds = 30;
  for (int i = 0; i < rounds; ++i) {
    std::lock_guard g(m);
    const tally::payload_view p = m.payload();
    ASSERT_EQ(p.size(), 40u);
    p.store(p.load<std::uint64_t>(0) + 1, 0);                 // a shared count
    p.store(p.load<std::uint64_t>(8) + world_rank() + 1, 8);  // a shared sum
  }
  progress_barrier(MPI_COMM_WORLD, m);
  const tally::stats s = m.stats();
  EXPECT_EQ(token_sends - sends0, s.tokens_sent);  // one send per handoff, no extra
  const int entries = tally::test::token_entries(m);
  const auto k = static_cast<std::size_t>(entries);
  using tally::protocol::node_token;
  if (s.tokens_sent > 0 && m.topology() == tally::topology::flat) {
    // Every token: LN with the queue's links (4 bytes per entry), the payload.
    EXPECT_EQ(token_min, 4 * entries + 40);
    EXPECT_EQ(token_max, 4 * entries + 40);
  } else if (s.tokens_sent > 0) {
    const char* form = std::getenv("TALLY_NODE_TOKEN");
    if (form != nullptr && std::strcmp(form, "delta") == 0) {
      // A delta wherever one is exact, else (a receiver whose copy is older than
      // the route reaches) the full body. With so few nodes a delta is longer than
      // the full body (its 20 bytes of overhead), so the longest token shows one went.
      EXPECT_GE(static_cast<std::size_t>(token_min), node_token::full_bytes(k, 40));
      EXPECT_LE(static_cast<std::size_t>(token_max), node_token::bytes(k, 40));
      EXPECT_GT(static_cast<std::size_t>(token_max), node_token::full_bytes(k, 40));
    } else {
      // The trail, then the full body (a delta is never shorter below 5 nodes).
      ASSERT_LT(k, 5u);
      EXPECT_EQ(static_cast<std::size_t>(token_min), node_token::full_bytes(k, 40));
      EXPECT_EQ(static_cast<std::size_t>(token_max), node_token::full_bytes(k, 40));
    }
  }
  if (world_rank() == 0) {
    m.lock();
    const tally::payload_view p = m.payload();
    EXPECT_EQ(p.load<std::uint64_t>(0), std::uint64_t{rounds} * n);
    EXPECT_EQ(p.load<std::uint64_t>(8), std::uint64_t{rounds} * n * (n + 1) / 2);
    m.unlock();
  }
  progress_barrier(MPI_COMM_WORLD, m);
}

TEST(Payload, ViewIsCheckedOnEveryAccess) {
  tally::options o;
  o.payload_bytes = 16;
  tally::mutex m(MPI_COMM_WORLD, o);
  m.lock();
  const tally::payload_view first = m.payload();
  std::byte big[17];
  EXPECT_THROW(first.read(0, big), tally::error);
  EXPECT_THROW(first.write(10, std::span<const std::byte>(big, 7)), tally::error);
  EXPECT_NO_THROW(first.write(8, std::span<const std::byte>(big, 8)));
  m.unlock();
  try {
    (void)first.load<int>();
    ADD_FAILURE() << "view used after unlock";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), errc::not_owner);
  }
  m.lock();  // a later critical section does not revive an old view
  EXPECT_THROW(first.store(1), tally::error);
  EXPECT_NO_THROW(m.payload().store(1));
  m.unlock();
  EXPECT_THROW((void)m.payload(), tally::error);
  progress_barrier(MPI_COMM_WORLD, m);
}

struct ledger {
  std::uint64_t entries;
  std::int32_t last_rank;
  double total;
};

TEST(Payload, GuardedValueArrivesWithTheLock) {
  const int n = world_size();
  tally::guarded<ledger> g(MPI_COMM_WORLD, ledger{100, -1, 0.5});
  constexpr int rounds = 25;
  for (int i = 0; i < rounds; ++i) {
    auto v = g.lock();
    v->entries += 1;
    v->last_rank = world_rank();
    v->total += 1.0;
  }
  progress_barrier(MPI_COMM_WORLD, g.mutex());
  if (world_rank() == n - 1) {
    auto v = g.lock();
    EXPECT_EQ(v->entries, 100u + std::uint64_t{rounds} * n);
    EXPECT_DOUBLE_EQ(v->total, 0.5 + rounds * n);
    EXPECT_GE(v->last_rank, 0);
    v.unlock();
    EXPECT_THROW(v.unlock(), tally::error);
  }
  progress_barrier(MPI_COMM_WORLD, g.mutex());
}

TEST(Payload, CApi) {
  tally_mutex m = nullptr;
  ASSERT_EQ(tally_mutex_create_payload(MPI_COMM_WORLD, nullptr, 8, &m), TALLY_SUCCESS);
  void* p = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(tally_mutex_payload(m, &p, &bytes), TALLY_ERR_NOT_OWNER);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
    ASSERT_EQ(tally_mutex_payload(m, &p, &bytes), TALLY_SUCCESS);
    ASSERT_EQ(bytes, 8u);
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    ++v;
    std::memcpy(p, &v, 8);
    ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  }
  MPI_Request req;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  while (!done) {
    tally_mutex_poll(m);
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  }
  if (world_rank() == 0) {
    ASSERT_EQ(tally_mutex_lock(m), TALLY_SUCCESS);
    ASSERT_EQ(tally_mutex_payload(m, &p, &bytes), TALLY_SUCCESS);
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    EXPECT_EQ(v, 10u * static_cast<std::uint64_t>(world_size()));
    ASSERT_EQ(tally_mutex_unlock(m), TALLY_SUCCESS);
  }
  EXPECT_EQ(tally_mutex_free(&m), TALLY_SUCCESS);
}

TEST(Payload, LargestPayloadWorks) {
  tally::options o;
  o.payload_bytes = tally::max_payload_bytes;
  tally::mutex m(MPI_COMM_WORLD, o);
  for (int i = 0; i < 3; ++i) {
    std::lock_guard g(m);
    const tally::payload_view p = m.payload();
    p.store(p.load<std::uint32_t>(tally::max_payload_bytes - 4) + 1, tally::max_payload_bytes - 4);
  }
  progress_barrier(MPI_COMM_WORLD, m);
  m.lock();
  EXPECT_GE(m.payload().load<std::uint32_t>(tally::max_payload_bytes - 4), 3u);
  m.unlock();
  progress_barrier(MPI_COMM_WORLD, m);
}

// --- ordered append to one shared file ---------------------------------------------

TEST(SharedAppend, VerifierRejectsBrokenFiles) {
  using namespace tally::example;
  std::vector<std::byte> file;
  for (std::uint32_t i = 0; i < 3; ++i) {
    const auto r = make_record(0, i);
    file.insert(file.end(), r.begin(), r.end());
  }
  EXPECT_EQ(verify(file, 1, 3), "");
  auto corrupt = file;
  corrupt.back() ^= std::byte{1};  // the last record's last body byte
  EXPECT_NE(verify(corrupt, 1, 3).find("corrupt"), std::string::npos);
  auto gap = file;
  gap.insert(gap.begin() + static_cast<std::ptrdiff_t>(make_record(0, 0).size()), std::byte{0});
  EXPECT_NE(verify(gap, 1, 3).find("gap"), std::string::npos);
  auto truncated = file;
  truncated.pop_back();
  EXPECT_NE(verify(truncated, 1, 3).find("truncated"), std::string::npos);
  EXPECT_NE(verify(file, 1, 4).find("expected"), std::string::npos);
  auto twice = file;
  const auto r0 = make_record(0, 0);
  twice.insert(twice.end(), r0.begin(), r0.end());
  EXPECT_NE(verify(twice, 1, 4).find("duplicate"), std::string::npos);
}

TEST(SharedAppend, FileIsExactlyTheRecords) {
  using namespace tally::example;
  const int n = world_size();
  // One path for all ranks: rank 0 makes a unique name and broadcasts it.
  char path[256] = {};
  if (world_rank() == 0) {
    std::snprintf(path, sizeof path, "%s/tally_append_%d_%ld.dat",
                  std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp", n, static_cast<long>(getpid()));
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  constexpr std::uint32_t per_rank = 150;
  MPI_File fh;
  ASSERT_EQ(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), MPI_SUCCESS);
  std::uint64_t mine = 0;
  {
    tally::guarded<std::uint64_t> next(MPI_COMM_WORLD);
    for (std::uint32_t i = 0; i < per_rank; ++i) {
      const auto rec = make_record(world_rank(), i);
      append(next, fh, rec);
      mine += rec.size();
    }
  }
  MPI_File_close(&fh);
  const std::uint64_t total = tally::test::global_sum(mine);
  if (world_rank() == 0) {
    std::vector<std::byte> bytes;
    if (std::FILE* f = std::fopen(path, "rb")) {
      std::byte buf[1 << 16];
      for (std::size_t k; (k = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.insert(bytes.end(), buf, buf + k);
      std::fclose(f);
    }
    EXPECT_EQ(bytes.size(), total);
    EXPECT_EQ(verify(bytes, n, per_rank), "");
    std::remove(path);
  }
}

}  // namespace
