// runtime/engine.cpp — lock, try_lock, unlock, payload and stats of one mutex,
// whichever the topology (its events: runtime/level.hpp; progress steps:
// runtime/progress.cpp). Every call but the fast path's first gives the other
// in-calls mutexes a turn (registry.hpp).
#include "runtime/engine.hpp"

#include <string>
#include <thread>

#include "runtime/registry.hpp"

namespace tally::detail {

namespace {

// A waiting lock() releases mu_ (and polls the process's other mutexes) once per
// this many polls of its own; in between it polls in a tight loop.
constexpr std::uint32_t release_every = 16;
// Threads waiting for the slot in in-calls mode wake this often to keep the
// process's other mutexes answering.
constexpr auto slot_wait_slice = std::chrono::microseconds(200);

}  // namespace

std::uint64_t engine::acquisitions_locked() const { return stats_locked().acquisitions; }

// --- locking -----------------------------------------------------------------------

void engine::require_live() const {
  if (!live_) fail(errc::state, "mutex used after free() or after MPI_Finalize");
  if (fault_) std::rethrow_exception(fault_);
}

void engine::release_slot_locked() {
  slot_.release();
  if (async_ && async_->st == acquisition::state::waiting_slot) async_start_locked();
}

bool engine::done_waiting_locked(const acquisition* a) {
  return a ? a->st == acquisition::state::acquired : level_->entered();
}

bool engine::wait_locked(std::optional<clock::time_point> deadline, const char* call, const acquisition* a) {
  const clock::time_point start = clock::now();
  bool warned = wait_warning_ == clock::duration::zero();
  patience wait;
  const std::uint32_t looks = level_->looks_per_step();
  for (std::uint32_t spin = 1; !done_waiting_locked(a); ++spin) {
    // Node topology: a local handoff is a flag in shared memory, so look at it
    // between MPI polls; past a few thousand spins, give the core away (more ranks
    // than cores: the holder may need it).
    if (looks > 1 && spin % looks != 0) {
      wait();
      continue;
    }
    progress_locked();
    if (done_waiting_locked(a)) break;
    wait();
    if (deadline && clock::now() >= *deadline) return false;
    if (spin % release_every != 0) continue;  // a tight loop detects the token soonest
    if (!warned && clock::now() - start >= wait_warning_) {
      warned = true;
      warn_wait(call, clock::now() - start);
    }
    // Let the progress thread and other callers in between polls, and keep this
    // process's other mutexes answering (the caller's guard holds mu_ again by the
    // time it ends: nothing here throws while it is released).
    mu_.unlock();
    registry::poll_others(this);
    mu_.lock();
    require_live();
  }
  return true;
}

void engine::refuse_reentry_locked(std::thread::id me, const char* call) const {
  if (slot_.owned_by(me)) fail(errc::deadlock, call, "calling thread already holds the critical section");
  if (async_ && async_->owner == me)
    fail(errc::deadlock, call, "calling thread has an asynchronous acquisition of this mutex outstanding");
}

bool engine::acquire(std::optional<clock::time_point> deadline) {
  const std::thread::id me = std::this_thread::get_id();
  registry::poll_others(this);
  unique_guard lk(mu_);
  settle_fast_locked();
  require_live();
  refuse_reentry_locked(me, "lock");

  // Waiters for the slot need not poll: its holder is either polling for the
  // token or in the critical section, where REQUESTs are deferred anyway. In inline
  // mode they wake now and then to keep this process's other mutexes answering.
  const bool in_calls = opts_.progress == progress_mode::in_calls;
  while (slot_.taken()) {
    auto until = deadline ? *deadline : clock::time_point::max();
    if (in_calls) until = std::min(until, clock::now() + slot_wait_slice);
    slot_.wait_until(lk.native(), until);
    settle_fast_locked();  // the slot's last owner may have opened it on the way out
    require_live();
    if (!slot_.taken()) break;
    if (deadline && clock::now() >= *deadline) return false;
    if (in_calls) {
      lk.unlock();
      registry::poll_others(this);
      lk.lock();
      settle_fast_locked();
      require_live();
    }
  }
  slot_.take();
  try {
    if (!level_->start("lock") && !wait_locked(deadline, "lock", nullptr) && level_->withdraw("lock timeout")) {
      release_slot_locked();
      progress_.nudge();  // a withdrawn request needs an answer later
      return false;
    }
  } catch (...) {
    // Freed by another thread meanwhile (require_live threw): free() settled the
    // level already, and a node level's slot is gone.
    if (live_) level_->abandon();
    release_slot_locked();
    throw;
  }
  slot_.enter(me);
  listen_locked();
  trace_enter_locked();
  return true;
}

bool engine::try_lock() {
  const std::thread::id me = std::this_thread::get_id();
  registry::poll_others(this);
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  refuse_reentry_locked(me, "try_lock");
  if (slot_.taken()) return false;
  if (!level_->try_enter("try_lock")) {
    // Not an idle holder: one progress step, so that a spinning try_lock still
    // routes a withdrawn request's token and keeps RN current. It cannot enter.
    progress_locked();
    return false;
  }
  slot_.take();
  slot_.enter(me);
  listen_locked();
  trace_enter_locked();
  return true;
}

void engine::unlock() {
  if (try_fast_unlock()) return;
  registry::poll_others(this);
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (!slot_.owned_by(std::this_thread::get_id()))
    fail(errc::not_owner, "unlock", "calling thread does not hold the critical section");
  // Learn of waiting ranks first, so that the token leaves with this unlock (see
  // runtime/pacing.hpp). REQUEST receives are posted again after the token left.
  // Node topology: only the node's leader receives REQUESTs (else, in_calls, a
  // leader re-entering in a loop never hears them).
  if (level_->receives() && pacing_.due(level_->waiter_known())) {
    const std::uint64_t t0 = ticks();
    pacing_.polled(t0, progress_locked(false));
  }
  trace_exit_locked();
  try {
    level_->leave("unlock");
  } catch (...) {
    transport_.repost_requests();
    throw;
  }
  transport_.repost_requests();
  release_slot_locked();
  listen_locked();
  if (needs_watching_locked(true)) progress_.nudge();  // a withdrawn request or a send in flight
  open_fast_locked();
}

void engine::trace_enter_locked() {
  if (!trace_.on()) return;
  const std::uint64_t local = stats_locked().local_acquisitions;
  trace_.record(trace_log::kind::enter, -1, local != traced_local_ ? 1 : 0);
  traced_local_ = local;
}

void engine::fault(std::exception_ptr e) noexcept {
  guard lk(mu_);
  fault_locked(std::move(e));
}

void engine::fault_locked(std::exception_ptr e) noexcept {
  settle_fast_locked();
  if (fault_) return;
  fault_ = std::move(e);
  listen_locked();
  if (!transport_.remote_fault()) notify_fault_locked();
  slot_.wake_all();
}

void engine::notify_fault_locked() noexcept {
  try {
    std::rethrow_exception(fault_);
  } catch (const std::exception& x) {
    transport_.notify_fault(x.what());
  } catch (...) {
    transport_.notify_fault("unknown failure");
  }
}

std::uint64_t engine::payload_entry() {
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (!slot_.owned_by(std::this_thread::get_id()))
    fail(errc::not_owner, "payload", "calling thread does not hold the critical section");
  return acquisitions_locked();
}

std::span<std::byte> engine::payload(std::uint64_t entry) {
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (!slot_.owned_by(std::this_thread::get_id()) || acquisitions_locked() != entry)
    fail(errc::not_owner, "payload", "view used outside the critical section it was taken in");
  return level_->payload();
}

tally::stats engine::stats() const {
  guard lk(mu_);
  return stats_locked();
}

tally::stats engine::stats_locked() const {
  tally::stats s = level_->stats();
  const std::uint64_t fast = fast_entries_.load(std::memory_order_relaxed);
  s.acquisitions += fast;
  s.local_acquisitions += fast;
  return s;
}

}  // namespace tally::detail
