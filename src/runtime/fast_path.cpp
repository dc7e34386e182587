// runtime/fast_path.cpp — an idle holder's re-entry without the engine's mutex
// (flat topology, untraced): engine::try_fast_lock, try_fast_unlock, and under the
// mutex open_fast_locked and settle_fast_locked. The contract and its reasoning:
// docs/design.md, "Re-entry without the engine's lock".
#include <thread>

#include "runtime/engine.hpp"

namespace tally::detail {

namespace {

// In in_calls mode an idle holder that re-enters in a loop takes the slow path,
// which polls, at least this often: how long a REQUEST can wait for such a rank.
constexpr double fast_pace_us = 20;
// The fast path opens only when no message has arrived for this long: under
// contention lock and unlock take the slow path, whose polls hand the token on.
constexpr double fast_quiet_us = 100;

// A thread's token in engine::fast_: the address of its own thread_token (never 0
// or 1), which names the thread when the slow path takes its entry over.
struct thread_token {
  std::thread::id id = std::this_thread::get_id();
};
std::uintptr_t my_token() noexcept {
  thread_local const thread_token t;
  return reinterpret_cast<std::uintptr_t>(&t);
}

}  // namespace

bool engine::try_fast_lock() noexcept {
  if (fast_.load(std::memory_order_relaxed) != fast_open) return false;
  if (opts_.progress == progress_mode::in_calls && ticks() >= fast_due_.load(std::memory_order_relaxed))
    return false;  // due to poll: the slow path
  std::uintptr_t open = fast_open;
  if (!fast_.compare_exchange_strong(open, my_token(), std::memory_order_acquire, std::memory_order_relaxed))
    return false;
  fast_entries_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool engine::try_fast_unlock() noexcept {
  std::uintptr_t mine = my_token();
  return fast_.load(std::memory_order_relaxed) == mine &&
         fast_.compare_exchange_strong(mine, fast_open, std::memory_order_release, std::memory_order_relaxed);
}

void engine::open_fast_locked() noexcept {
  if (!fast_allowed_ || !live_ || fault_ || async_ || slot_.taken() || !level_->token_idle_here() ||
      level_->needs_progress(false))
    return;
  const std::uint64_t now = ticks();
  if (now - last_arrival_ < static_cast<std::uint64_t>(fast_quiet_us * ticks_per_us())) return;
  if (opts_.progress == progress_mode::in_calls)
    fast_due_.store(now + static_cast<std::uint64_t>(fast_pace_us * ticks_per_us()), std::memory_order_relaxed);
  fast_.store(fast_open, std::memory_order_release);
}

void engine::settle_fast_locked() noexcept {
  if (fast_.load(std::memory_order_relaxed) == fast_closed) return;  // only mu_'s holder opens it
  const std::uintptr_t s = fast_.exchange(fast_closed, std::memory_order_acq_rel);
  if (s == fast_closed || s == fast_open) return;
  // A thread entered by the fast path and has not left: it holds the slot and the
  // protocol's critical section from now on, as if it had entered the slow way (an
  // idle holder's entry: no message, counted once).
  fast_entries_.fetch_sub(1, std::memory_order_relaxed);
  level_->enter_idle();
  slot_.take();
  // fast_ holds the entering thread's token address (engine.hpp).
  slot_.enter(reinterpret_cast<const thread_token*>(s)->id);  // NOLINT(performance-no-int-to-ptr)
}

}  // namespace tally::detail
