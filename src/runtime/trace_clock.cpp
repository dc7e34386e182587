#include "runtime/trace_clock.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/handles.hpp"

namespace tally::detail {

namespace {

std::int64_t monotonic_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What identifies the CLOCK_MONOTONIC a process reads: the kernel's boot (its
// boot_id, else the host name) and the time namespace, which may offset it.
std::uint64_t monotonic_identity() {
  std::string id;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  if (!(boot >> id)) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    id = host;
  }
  struct stat ns {};
  if (stat("/proc/self/ns/time", &ns) == 0) id += ":" + std::to_string(ns.st_ino);
  return std::hash<std::string>{}(id);
}

// Rounds of ping-pong per estimate; the one with the least round trip wins.
constexpr int sync_rounds = 8;

}  // namespace

trace_clock::trace_clock(int rank) : key_(monotonic_identity()) {
  const char* env = std::getenv("TALLY_TRACE_SKEW");
  if (!env || !*env) return;
  // FIRST[-LAST]:NS[:PPM]
  char* p = nullptr;
  const long first = std::strtol(env, &p, 10);
  long last = first;
  bool ok = p != env;
  if (ok && *p == '-') {
    const char* q = p + 1;
    last = std::strtol(q, &p, 10);
    ok = p != q;
  }
  ok = ok && *p == ':' && first >= 0 && last >= first;
  long long ns = 0;
  double ppm = 0;
  if (ok) {
    const char* q = p + 1;
    ns = std::strtoll(q, &p, 10);
    ok = p != q;
  }
  if (ok && *p == ':') {
    const char* q = p + 1;
    ppm = std::strtod(q, &p);
    ok = p != q && ppm > -1e6 && ppm < 1e6;
  }
  if (!ok || *p != '\0') {
    warn("ignoring TALLY_TRACE_SKEW='%s' (FIRST[-LAST]:NANOSECONDS[:PPM])\n", env);
    return;
  }
  if (rank < first || rank > last) return;
  skew_ns_ = ns;
  skew_ppm_ = ppm;
  // The skewed ranks: one clock domain of their own.
  if (skewed()) key_ = std::hash<std::string>{}("skewed:" + std::to_string(key_));
}

std::int64_t trace_clock::now() const noexcept {
  const std::int64_t t = monotonic_ns();
  if (!skewed()) return t;
  return t + skew_ns_ + static_cast<std::int64_t>(skew_ppm_ * 1e-6 * static_cast<double>(t));
}

clock_sample sync_clock(const trace_clock& clock, MPI_Comm comm, int tag, const clock_waiter& wait, int& domain) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const auto n = static_cast<std::size_t>(size);
  std::vector<std::uint64_t> keys(n);
  const std::uint64_t mine = clock.domain_key();
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(&mine, 1, MPI_UINT64_T, keys.data(), 1, MPI_UINT64_T, comm, &req),
            "MPI_Iallgather(clock domains)");
  wait(req, "MPI_Iallgather(clock domains)");
  // leader[r]: the lowest rank of r's domain.
  std::vector<int> leader(n);
  std::unordered_map<std::uint64_t, int> first;
  for (int r = 0; r < size; ++r) leader[r] = first.try_emplace(keys[r], r).first->second;
  domain = leader[rank];
  auto measured = [&](int r) { return leader[r] == r && keys[r] != keys[0]; };

  // Rank 0 answers each measuring leader in turn with its clock; a leader keeps the
  // round with the least delay. Rank 0's reading lies within the round trip.
  std::int64_t best[3] = {0, 0, 0};  // at, offset, rtt
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      if (!measured(r)) continue;
      for (int k = 0; k < sync_rounds; ++k) {
        std::int64_t ping = 0;
        check_mpi(MPI_Irecv(&ping, 1, MPI_INT64_T, r, tag, comm, &req), "MPI_Irecv(clock)");
        wait(req, "MPI_Irecv(clock)");
        const std::int64_t t0 = clock.now();
        check_mpi(MPI_Isend(&t0, 1, MPI_INT64_T, r, tag, comm, &req), "MPI_Isend(clock)");
        wait(req, "MPI_Isend(clock)");
      }
    }
    best[0] = clock.now();  // rank 0's domain: no offset, at any time
  } else if (measured(rank)) {
    best[2] = std::numeric_limits<std::int64_t>::max();
    for (int k = 0; k < sync_rounds; ++k) {
      std::int64_t t0 = 0;
      MPI_Request pong = MPI_REQUEST_NULL;
      check_mpi(MPI_Irecv(&t0, 1, MPI_INT64_T, 0, tag, comm, &pong), "MPI_Irecv(clock)");
      const std::int64_t t1 = clock.now();
      check_mpi(MPI_Isend(&t1, 1, MPI_INT64_T, 0, tag, comm, &req), "MPI_Isend(clock)");
      wait(req, "MPI_Isend(clock)");
      wait(pong, "MPI_Irecv(clock)");
      const std::int64_t t2 = clock.now();
      const std::int64_t mid = t1 + (t2 - t1) / 2;
      if (t2 - t1 < best[2]) {
        best[0] = mid;
        best[1] = t0 - mid;
        best[2] = t2 - t1;
      }
    }
  }
  // Every rank takes its leader's estimate: they read the same clock.
  std::vector<std::int64_t> all(3 * n);
  check_mpi(MPI_Iallgather(best, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, comm, &req),
            "MPI_Iallgather(clock offsets)");
  wait(req, "MPI_Iallgather(clock offsets)");
  const std::size_t l = 3 * static_cast<std::size_t>(domain);
  return {all[l], all[l + 1], all[l + 2]};
}

}  // namespace tally::detail
