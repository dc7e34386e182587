#include "runtime/registry.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "runtime/channel.hpp"
#include "runtime/engine.hpp"
#include "runtime/pacing.hpp"

namespace tally::detail::registry {

namespace {

std::mutex mu;
std::vector<engine*> live;    // creation order
std::vector<engine*> polled;  // those in progress_mode::in_calls, which poll_others() polls
bool hooked = false;
// Readable without mu: polled.size(), and its one engine when there is just one.
std::atomic<std::size_t> count{0};
std::atomic<const engine*> sole{nullptr};

// poll_others() polls this many engines a round, in turn, and starts a round only
// once `others_factor` times the last round's cost has passed since it ended.
constexpr std::size_t others_slice = 4;
constexpr std::uint64_t others_factor = 16;
std::size_t cursor = 0;             // guarded by mu: the next engine's turn
std::atomic<std::uint64_t> due{0};  // ticks() before which no round starts

// In-calls engines that a channel filed REQUESTs for (ready()), polled first in the
// next round. Its own lock: ready() runs under a channel's lock.
std::mutex ready_mu;
std::unordered_set<const engine*> eligible;  // in_calls engines not yet removed
std::unordered_set<const engine*> queued;    // in `ready`
std::vector<engine*> ready_list;
std::atomic<bool> any_ready{false};

void publish_size() {  // mu held
  count.store(polled.size(), std::memory_order_relaxed);
  sole.store(polled.size() == 1 ? polled.front() : nullptr, std::memory_order_relaxed);
}

int at_finalize(MPI_Comm, int, void*, void*) {
  // A snapshot: engines stay registered until their own free(), so that the ones
  // not yet freed keep answering while this rank waits inside an earlier free().
  std::vector<engine*> left;
  {
    std::lock_guard lk(mu);
    left = live;
  }
  if (left.empty()) {
    channel::finalize_all();
    return MPI_SUCCESS;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  warn(
      "warning: MPI_Finalize called on rank %d with %zu live mutex(es); freeing "
      "them now. Destroy every tally mutex before MPI_Finalize.\n",
      rank, left.size());
  for (engine* e : left) {
    try {
      e->free(true);
    } catch (const std::exception& ex) {
      warn("rank %d: %s\n", rank, ex.what());
    }
  }
  channel::finalize_all();
  return MPI_SUCCESS;
}

}  // namespace

void hook_finalize() {
  std::lock_guard lk(mu);
  if (hooked) return;
  int keyval = MPI_KEYVAL_INVALID;
  check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &keyval, nullptr), "MPI_Comm_create_keyval");
  check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr), "MPI_Comm_set_attr");
  hooked = true;
}

void add(engine* e) {
  hook_finalize();
  std::lock_guard lk(mu);
  live.push_back(e);
  if (e->progress() == progress_mode::in_calls) {
    polled.push_back(e);
    std::lock_guard rl(ready_mu);
    eligible.insert(e);
  }
  publish_size();
}

void ready(engine* e) noexcept {
  std::lock_guard rl(ready_mu);
  if (!eligible.count(e) || !queued.insert(e).second) return;
  ready_list.push_back(e);
  any_ready.store(true, std::memory_order_relaxed);
}

void poll_others(const engine* self) noexcept {
  // Engines in thread mode are their thread's: only in_calls ones are polled here.
  // The common case, none but `self` (which free() has already removed), costs
  // no lock. A mutex created by another thread meanwhile is polled from the next
  // round on. Rounds are paced and take a few engines each, so that a call's share
  // of the polling does not grow with the number of mutexes (docs/design.md,
  // "Progress").
  const std::size_t c = count.load(std::memory_order_relaxed);
  if (c == 0 || (c == 1 && sole.load(std::memory_order_relaxed) == self)) return;
  const std::uint64_t t0 = ticks();
  if (t0 < due.load(std::memory_order_relaxed)) return;
  std::unique_lock lk(mu, std::try_to_lock);
  if (!lk.owns_lock()) return;  // another thread is polling them
  // The channels first: REQUESTs for idle tokens here make their engines ready.
  channel::poll_all();
  if (any_ready.load(std::memory_order_relaxed)) {
    std::vector<engine*> now;
    {
      std::lock_guard rl(ready_mu);
      now.swap(ready_list);
      queued.clear();
      any_ready.store(false, std::memory_order_relaxed);
    }
    // Engines removed meanwhile wait in free() for mu (held here) to take them
    // out of `polled`: each one here is still alive.
    for (engine* e : now)
      if (e != self) e->poll_nowait();
  }
  // Then a few in turn: withdrawn requests, sends in flight.
  const std::size_t n = polled.size();
  for (std::size_t k = 0; k < std::min(n, others_slice); ++k) {
    engine* e = polled[cursor++ % n];
    if (e != self) e->poll_nowait();
  }
  const std::uint64_t t1 = ticks();
  due.store(t1 + others_factor * (t1 - t0), std::memory_order_relaxed);
}

void remove(engine* e) noexcept {
  std::lock_guard lk(mu);
  {
    std::lock_guard rl(ready_mu);
    eligible.erase(e);
    if (queued.erase(e)) ready_list.erase(std::remove(ready_list.begin(), ready_list.end(), e), ready_list.end());
  }
  live.erase(std::remove(live.begin(), live.end(), e), live.end());
  polled.erase(std::remove(polled.begin(), polled.end(), e), polled.end());
  publish_size();
}

}  // namespace tally::detail::registry
