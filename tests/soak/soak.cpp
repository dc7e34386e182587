// Soak: many critical-section entries through every way in, on several mutexes at
// once, with exclusion and lost updates checked twice per entry.
// Usage: mpi_soak ENTRIES thread|in_calls [seed]
// ENTRIES is the total over all ranks; the topology is TALLY_TOPOLOGY's (flat or
// node; unset: automatic). Three mutexes: two on MPI_COMM_WORLD, one on
// a sub-communicator (even and odd ranks). Each entry picks a mutex and a way in at
// random: lock(), try_lock() (retried), try_lock_for() with a short random timeout
// (retried), lock_async() tested while working. Inside, it increments an 8-byte
// payload that travels in the token and a counter in an MPI window with a separate
// get and put, with an occupancy word that detects overlap. At the end it checks:
// overlaps = 0; payload and window counters = entries per mutex (no lost update);
// after the collective free, tokens sent = tokens received over all ranks (no token
// lost or duplicated in flight). Rank 0 prints one summary line; exit 0 iff all hold.
#include <mpi.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "support.hpp"
#include "tally/mutex.hpp"

namespace {

struct lock_site {
  MPI_Comm comm;
  std::unique_ptr<tally::mutex> m;
  std::unique_ptr<tally::test::shared_counter> window;
  std::uint64_t entries = 0;  // by this rank
};

void work(std::minstd_rand& rng) {
  volatile std::uint64_t x = 0;
  for (auto k = rng() % 64; k > 0; --k) x = x + k;
}

// Enters m by one of four ways, chosen at random.
void enter(tally::mutex& m, std::minstd_rand& rng) {
  switch (rng() % 4) {
    case 0: m.lock(); return;
    case 1:  // try_lock enters only where the lock rests idle, and never asks for it
      for (int tries = 0; tries < 8; ++tries) {
        if (m.try_lock()) return;
        work(rng);
      }
      m.lock();
      return;
    case 2:
      while (!m.try_lock_for(std::chrono::microseconds(rng() % 50))) {
      }
      return;
    default: {
      tally::lock_request r = m.lock_async();
      while (!r.test()) work(rng);
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int me = tally::test::world_rank(), n = tally::test::world_size();
  if (argc < 3) {
    if (me == 0) std::fprintf(stderr, "usage: mpi_soak ENTRIES thread|in_calls [seed]\n");
    MPI_Finalize();
    return 2;
  }
  const std::uint64_t total = std::strtoull(argv[1], nullptr, 10);
  tally::options o;
  o.progress = std::strcmp(argv[2], "thread") == 0 ? tally::progress_mode::thread : tally::progress_mode::in_calls;
  o.payload_bytes = sizeof(std::uint64_t);
  const unsigned seed = argc > 3 ? static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10)) : 1u;
  std::minstd_rand rng(seed * 7919u + static_cast<unsigned>(me) * 104729u + 1u);

  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  std::vector<lock_site> sites(3);
  sites[0].comm = MPI_COMM_WORLD;
  sites[1].comm = MPI_COMM_WORLD;
  sites[2].comm = half;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    tally::options oi = o;
    int size = 0;
    MPI_Comm_size(sites[i].comm, &size);
    oi.initial_owner = static_cast<int>(i) % size;
    sites[i].m = std::make_unique<tally::mutex>(sites[i].comm, oi);
    sites[i].window = std::make_unique<tally::test::shared_counter>(sites[i].comm, 0);
  }

  const std::uint64_t mine = total / static_cast<std::uint64_t>(n) +
                             (static_cast<std::uint64_t>(me) < total % static_cast<std::uint64_t>(n) ? 1 : 0);
  std::uint64_t overlaps = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (std::uint64_t k = 0; k < mine; ++k) {
    lock_site& s = sites[rng() % sites.size()];
    enter(*s.m, rng);
    if (s.window->enter(me) != -1) ++overlaps;
    s.window->increment();
    tally::payload_view p = s.m->payload();
    p.store(p.load<std::uint64_t>() + 1);
    if (s.window->leave(me) != me) ++overlaps;
    s.m->unlock();
    ++s.entries;
  }
  // Drain: every rank keeps every mutex answering until all are done.
  tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
    for (auto& s : sites) s.m->poll();
  });
  const double seconds = MPI_Wtime() - t0;

  std::uint64_t lost = 0, all_entries = 0, unbalanced = 0;
  for (auto& s : sites) {
    std::uint64_t entries = 0;
    MPI_Allreduce(&s.entries, &entries, 1, MPI_UINT64_T, MPI_SUM, s.comm);
    all_entries += s.entries;
    // The payload as the token carries it now, read by the comm's rank 0.
    int r = 0;
    MPI_Comm_rank(s.comm, &r);
    std::uint64_t payload = 0;
    if (r == 0) {
      s.m->lock();
      payload = s.m->payload().load<std::uint64_t>();
      s.m->unlock();
    }
    tally::test::progress_barrier(s.comm, *s.m);
    const auto window = static_cast<std::uint64_t>(s.window->value());
    std::uint64_t my_lost = 0;
    if (r == 0) my_lost = (payload != entries ? 1 : 0) + (window != entries ? 1 : 0);
    lost += my_lost;
    s.window.reset();
    s.m->free();
    const tally::stats st = s.m->stats();  // final after free()
    std::uint64_t sent = st.tokens_sent, received = st.tokens_received, sum_sent = 0, sum_received = 0;
    MPI_Allreduce(&sent, &sum_sent, 1, MPI_UINT64_T, MPI_SUM, s.comm);
    MPI_Allreduce(&received, &sum_received, 1, MPI_UINT64_T, MPI_SUM, s.comm);
    if (sum_sent != sum_received) ++unbalanced;
  }
  std::uint64_t totals[4] = {all_entries, overlaps, lost, unbalanced}, sums[4] = {};
  MPI_Allreduce(totals, sums, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  const bool ok = sums[0] == total && sums[1] == 0 && sums[2] == 0 && sums[3] == 0;
  const char* topology = sites[0].m->topology() == tally::topology::node ? "node" : "flat";
  if (me == 0)
    std::printf("soak: %d ranks, %s topology, %s progress: %" PRIu64
                " entries in %.1f s (%.0f entries/s), overlaps %" PRIu64 ", lost updates %" PRIu64
                ", token census %s: %s\n",
                n, topology, argv[2], sums[0], seconds, static_cast<double>(sums[0]) / seconds, sums[1], sums[2],
                sums[3] == 0 ? "balanced" : "UNBALANCED", ok ? "ok" : "FAILED");
  MPI_Comm_free(&half);
  MPI_Finalize();
  return ok ? 0 : 1;
}
