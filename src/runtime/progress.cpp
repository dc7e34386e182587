// runtime/progress.cpp — the engine's progress: one step of messages in, handed to
// the level (progress_locked), what the channel and the progress thread
// are told (listen_locked, needs_watching_locked), and the entry points of the pollers
// other than the engine's own calls: poll(), registry::poll_others (poll_nowait)
// and the progress thread (progress_from_thread).
#include "runtime/engine.hpp"
#include "runtime/registry.hpp"

namespace tally::detail {

void engine::listen_locked() noexcept {
  const bool want = live_ && !fault_ && level_->listens();
  if (want == listening_) return;
  listening_ = want;
  transport_.chan().listen(want);
}

bool engine::progress_locked(bool repost) {
  level_->before_test();
  const transport::arrivals a = transport_.test(repost);
  if (a.any()) {  // news for the protocol: no entry may bypass it now, or soon
    settle_fast_locked();
    last_arrival_ = ticks();
  }
  level_->deliver(a);
  // A local handoff is no message: an asynchronous acquisition looks at the level.
  if (async_ && async_->st == acquisition::state::pending && level_->entered()) async_acquired_locked();
  transport_.pump();  // after any token send: the token overtakes the rest
  // Sends are reaped by polls that found nothing, off the path from a message's
  // arrival to what it triggers (or when slots pile up).
  if (transport_.sends_active() && (!a.any() || transport_.send_slots() > 8)) transport_.reap_sends(false);
  if (a.any()) {
    pacing_.message_seen();
    listen_locked();
  }
  return a.any();
}

bool engine::needs_watching_locked(bool after_event) const noexcept {
  if (async_ != nullptr || transport_.sends_active()) return true;
  // A listener needs no watching of its own: the channel listens for it.
  return level_->needs_progress(after_event);
}

// --- the other pollers -------------------------------------------------------------

void engine::poll_nowait() noexcept {
  if (opts_.progress != progress_mode::in_calls) return;  // its thread does it
  if (!mu_.try_lock()) return;
  guard lk(mu_, std::adopt_lock);
  if (!live_ || fault_) return;
  try {
    progress_locked();
  } catch (...) {
    fault_locked(std::current_exception());
  }
}

progress_thread::found engine::progress_from_thread() noexcept {
  // try_lock: the thread never delays the application.
  if (!mu_.try_lock()) return progress_thread::found::watching;
  guard lk(mu_, std::adopt_lock);
  if (!live_ || fault_) return progress_thread::found::idle;
  try {
    if (progress_locked()) return progress_thread::found::busy;
    return needs_watching_locked() ? progress_thread::found::watching : progress_thread::found::idle;
  } catch (...) {
    fault_locked(std::current_exception());
    return progress_thread::found::idle;
  }
}

void engine::poll() {
  registry::poll_others(this);
  guard lk(mu_);
  settle_fast_locked();
  require_live();
  while (progress_locked()) {
  }
}

}  // namespace tally::detail
