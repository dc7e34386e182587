// Writes handoff timelines for tests/tools/test_trace.py and test_timeline.py:
// usage trace_run DIR [flat|node|auto] (the topology; default flat, auto:
// TALLY_TOPOLOGY decides). Two mutexes, one traced through TALLY_TRACE (the test
// sets it to DIR), one through options::trace (DIR/by-option); each is entered by
// lock, try_lock and lock_async, with re-entries. Next to each trace the rank writes the counters the
// merged trace must agree with: DIR[/by-option]/expect-<mutex>-rank<k>.json.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support.hpp"
#include "tally/mutex.hpp"

namespace {
void expect(const std::string& dir, const tally::mutex& m) {
  const tally::stats s = m.stats();
  const std::string path = dir + "/expect-" + m.name() + "-rank" + std::to_string(m.rank()) + ".json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f,
               "{\"mutex\":\"%s\",\"rank\":%d,\"acquisitions\":%llu,\"local_acquisitions\":%llu,"
               "\"broadcasts\":%llu,\"tokens_sent\":%llu,\"tokens_received\":%llu}\n",
               m.name().c_str(), m.rank(), static_cast<unsigned long long>(s.acquisitions),
               static_cast<unsigned long long>(s.local_acquisitions), static_cast<unsigned long long>(s.broadcasts),
               static_cast<unsigned long long>(s.tokens_sent), static_cast<unsigned long long>(s.tokens_received));
  std::fclose(f);
}

void work(tally::mutex& m, int me) {
  for (int k = 0; k < 12; ++k) {
    if (k % 3 == 0) {
      if (!m.try_lock()) m.lock();  // try_lock only enters an idle holder; it never asks
    } else if (k % 3 == 1) {
      tally::lock_request r = m.lock_async();
      r.wait();
    } else {
      m.lock();
    }
    m.unlock();
    if (k % 4 == me % 4) {  // a re-entry, usually without messages
      m.lock();
      m.unlock();
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const std::string topo = argc == 3 ? argv[2] : "flat";
  if (argc < 2 || argc > 3 || (topo != "flat" && topo != "node" && topo != "auto")) {
    if (me == 0) std::fprintf(stderr, "usage: trace_run DIR [flat|node|auto]\n");
    MPI_Finalize();
    return 2;
  }
  const std::string dir = argv[1], by_option = dir + "/by-option";
  if (me == 0) std::filesystem::remove_all(dir);  // free() makes DIR and DIR/by-option again
  MPI_Barrier(MPI_COMM_WORLD);
  // Flat by default: on one node the node topology moves the lock without any message.
  tally::options env_traced;
  env_traced.name = "by-env";
  env_traced.topology = topo == "flat"   ? tally::topology::flat
                        : topo == "node" ? tally::topology::node
                                         : tally::topology::automatic;
  tally::options opt_traced = env_traced;
  opt_traced.name = "by-option";
  opt_traced.trace = by_option;
  tally::mutex a(MPI_COMM_WORLD, env_traced), b(MPI_COMM_WORLD, opt_traced);
  work(a, me);
  work(b, me + 1);
  // Every rank answers until all are done: the counters are final.
  tally::test::progress_barrier(MPI_COMM_WORLD, [&] {
    a.poll();
    b.poll();
  });
  a.free();
  b.free();
  expect(dir, a);  // final after free(): every token send completed
  expect(by_option, b);
  if (me == 0) std::printf("trace_run: ok\n");
  MPI_Finalize();
  return 0;
}
