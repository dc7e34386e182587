// runtime/async.cpp — lock_async: acquisitions that complete while the caller
// does other work, and their MPI generalized requests.
//
// Contract (see also tally::lock_request and runtime/acquisition.hpp). An
// acquisition holds the rank's slot from its start (waiting_slot until another
// thread of the rank releases it) to its end: acquired (the slot's owner is then
// the thread that called lock_async) or cancelled (withdrawn like a timed-out
// try_lock_for: a token that arrives later is passed on or kept idle). Whoever
// makes progress (the progress thread, test(), wait(), any tally call of the
// process) completes it. Its generalized request is completed exactly once, under
// mu_, when it is acquired or cancelled.
#include <cstdio>
#include <string>
#include <thread>

#include "runtime/engine.hpp"
#include "runtime/registry.hpp"

namespace tally::detail {

namespace {

using state = acquisition::state;

// extra_state of a generalized request: keeps the acquisition alive until MPI
// frees the request.
struct greq_state {
  std::shared_ptr<acquisition> acq;
};

int greq_query(void* extra, MPI_Status* status) {
  const auto* g = static_cast<greq_state*>(extra);
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, g->acq->st == state::cancelled ? 1 : 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int greq_free(void* extra) {
  auto* g = static_cast<greq_state*>(extra);
  // MPI completed the request for the user: its outcome has been observed.
  if (g->acq->st == state::acquired) g->acq->observed = true;
  g->acq->greq_freed = true;
  delete g;
  return MPI_SUCCESS;
}

int greq_cancel(void* extra, int complete) {
  if (complete) return MPI_SUCCESS;  // acquired or cancelled already: nothing to undo
  auto* g = static_cast<greq_state*>(extra);
  if (const std::shared_ptr<engine> e = g->acq->eng.lock()) e->async_mpi_cancel(*g->acq);
  return MPI_SUCCESS;
}

}  // namespace

std::shared_ptr<acquisition> engine::lock_async() {
  const std::thread::id me = std::this_thread::get_id();
  registry::poll_others(this);
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (slot_.owned_by(me)) fail(errc::deadlock, "lock_async", "calling thread already holds the critical section");
  if (async_)
    fail(errc::deadlock, "lock_async",
         "an asynchronous acquisition of this mutex is already "
         "outstanding on this rank; wait for it or cancel it first");
  async_ = std::make_shared<acquisition>(weak_from_this(), me);
  std::shared_ptr<acquisition> a = async_;
  if (!slot_.taken()) async_start_locked();
  progress_.nudge();
  return a;
}

void engine::async_start_locked() {
  slot_.take();
  bool entered = false;
  try {
    entered = level_->start("lock_async");
  } catch (...) {
    slot_.release();
    async_->st = state::cancelled;
    complete_greq_locked(*async_);
    async_.reset();
    throw;
  }
  async_->st = state::pending;
  if (entered) async_acquired_locked();  // an idle holder
}

void engine::async_acquired_locked() {
  acquisition& a = *async_;
  slot_.enter(a.owner);
  listen_locked();
  trace_enter_locked();
  a.entry = acquisitions_locked();
  a.st = state::acquired;
  complete_greq_locked(a);
  async_.reset();
}

void engine::complete_greq_locked(acquisition& a) noexcept {
  if (a.greq == MPI_REQUEST_NULL || a.greq_completed) return;
  a.greq_completed = true;
  MPI_Grequest_complete(a.greq);
}

bool engine::async_test(acquisition& a) {
  registry::poll_others(this);
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (a.st == state::cancelled) fail(errc::state, "lock_request", "the request was cancelled");
  // An MPI test that finds nothing completed makes progress only after it looked
  // (Open MPI's MPI_Testsome): a token that arrived meanwhile is seen by a second
  // one. test() is called once per stretch of the caller's work, so look twice.
  if (a.st != state::acquired && !progress_locked()) progress_locked();
  if (a.st != state::acquired) return false;
  a.observed = true;
  return true;
}

bool engine::async_wait(acquisition& a, std::optional<clock::time_point> deadline) {
  registry::poll_others(this);
  unique_guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (a.st == state::cancelled) fail(errc::state, "lock_request", "the request was cancelled");
  if (!wait_locked(deadline, "lock_request::wait", &a)) return false;
  a.observed = true;
  return true;
}

bool engine::async_cancel(acquisition& a) {
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  switch (a.st.load()) {
    case state::cancelled: return true;
    case state::acquired: a.observed = true; return false;
    case state::waiting_slot: break;
    case state::pending:
      if (!level_->withdraw("lock_request::cancel")) {  // granted meanwhile
        async_acquired_locked();
        a.observed = true;
        return false;
      }
      release_slot_locked();  // async_ is still this one: nothing restarts
      break;
  }
  a.st = state::cancelled;
  complete_greq_locked(a);
  if (async_.get() == &a) async_.reset();
  progress_.nudge();  // a withdrawn request needs an answer later
  return true;
}

void engine::async_mpi_cancel(acquisition& a) noexcept {
  try {
    (void)async_cancel(a);
  } catch (...) {  // freed meanwhile: free() completed the request already
  }
}

void engine::async_abandon(acquisition& a) noexcept {
  try {
    unique_guard lk(mu_);
    settle_fast_locked();
    if (!live_ || a.observed) return;
    if (a.st == state::acquired) {
      // Acquired but nobody learned of it: release the critical section it holds.
      if (!slot_.owned_by(a.owner) || acquisitions_locked() != a.entry) return;
      lk.unlock();
      if (a.owner == std::this_thread::get_id()) {
        unlock();
      } else {
        warn(
            "rank %d: a lock_request of %s was destroyed by another thread "
            "than its owner after it had been acquired; the lock stays held\n",
            rank_, opts_.name.c_str());
      }
      return;
    }
    lk.unlock();
    (void)async_cancel(a);
  } catch (const std::exception& e) {
    warn("error while abandoning a lock_request: %s\n", e.what());
  }
}

MPI_Request engine::async_mpi_request(const std::shared_ptr<acquisition>& a) {
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  if (a->greq_freed) fail(errc::state, "mpi_request", "its MPI request was completed and freed already");
  if (a->greq != MPI_REQUEST_NULL) return a->greq;
  if (opts_.progress != progress_mode::thread)
    fail(errc::state, "mpi_request",
         "MPI cannot complete the request by itself; it needs the "
         "mutex's progress thread (progress_mode::thread, or automatic with "
         "MPI_THREAD_MULTIPLE)");
  auto* g = new greq_state{a};
  const int rc = MPI_Grequest_start(greq_query, greq_free, greq_cancel, g, &a->greq);
  if (rc != MPI_SUCCESS) {
    delete g;
    check_mpi(rc, "MPI_Grequest_start");
  }
  if (a->st == state::acquired || a->st == state::cancelled) complete_greq_locked(*a);
  return a->greq;
}

}  // namespace tally::detail
