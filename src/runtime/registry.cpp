#include "runtime/registry.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <vector>

#include "runtime/engine.hpp"

namespace tally::detail::registry {

namespace {

std::mutex mu;
std::vector<engine*> live;  // creation order
bool hooked = false;
// Readable without mu: live.size(), and its one engine when there is just one.
std::atomic<std::size_t> count{0};
std::atomic<const engine*> sole{nullptr};

void publish_size() {  // mu held
  count.store(live.size(), std::memory_order_relaxed);
  sole.store(live.size() == 1 ? live.front() : nullptr, std::memory_order_relaxed);
}

int at_finalize(MPI_Comm, int, void*, void*) {
  // A snapshot: engines stay registered until their own free(), so that the ones
  // not yet freed keep answering while this rank waits inside an earlier free().
  std::vector<engine*> left;
  {
    std::lock_guard lk(mu);
    left = live;
  }
  if (left.empty()) return MPI_SUCCESS;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr,
               "tally: warning: MPI_Finalize called on rank %d with %zu live mutex(es); freeing "
               "them now. Destroy every tally mutex before MPI_Finalize.\n",
               rank, left.size());
  for (engine* e : left) {
    try {
      e->free(true);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "tally: rank %d: %s\n", rank, ex.what());
    }
  }
  return MPI_SUCCESS;
}

}  // namespace

void add(engine* e) {
  std::lock_guard lk(mu);
  if (!hooked) {
    int keyval = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &keyval, nullptr),
              "MPI_Comm_create_keyval");
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr), "MPI_Comm_set_attr");
    hooked = true;
  }
  live.push_back(e);
  publish_size();
}

void poll_others(const engine* self) noexcept {
  // The common case, no mutex but `self` (which free() has already removed), costs
  // no lock. A mutex created by another thread meanwhile is polled from the next
  // call on.
  const std::size_t c = count.load(std::memory_order_relaxed);
  if (c == 0 || (c == 1 && sole.load(std::memory_order_relaxed) == self)) return;
  std::lock_guard lk(mu);
  for (engine* e : live)
    if (e != self) e->poll_nowait();
}

void remove(engine* e) noexcept {
  std::lock_guard lk(mu);
  live.erase(std::remove(live.begin(), live.end(), e), live.end());
  publish_size();
}

}  // namespace tally::detail::registry
