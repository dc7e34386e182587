#include "runtime/progress_thread.hpp"

#include <sys/prctl.h>

#include <algorithm>

namespace tally::detail {

void progress_thread::start(poll_policy policy, std::function<found()> step) {
  stop_ = false;
  thread_ = std::thread([this, policy, step = std::move(step)] { main(policy, step); });
}

void progress_thread::stop() noexcept {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void progress_thread::nudge() noexcept {
  nudged_.store(true);
  if (!parked_.load()) return;
  { std::lock_guard lk(mu_); }  // the parked thread is in cv_.wait, not between check and wait
  cv_.notify_all();
}

bool progress_thread::wait(std::chrono::microseconds d, bool parking) {
  std::unique_lock lk(mu_);
  if (!parking) return !cv_.wait_for(lk, d, [this] { return stop_.load(); });
  parked_.store(true);
  cv_.wait_for(lk, d, [this] { return stop_.load() || nudged_.load(); });
  parked_.store(false);
  nudged_.store(false);
  return !stop_;
}

void progress_thread::main(poll_policy policy, const std::function<found()>& step) {
  // Ask the kernel for precise sleeps: the default 50 us timer slack would dominate
  // short polling intervals.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  using us = std::chrono::microseconds;
  const us interval = std::max(policy.interval, us{1});
  us backoff{1};
  for (;;) {
    const found f = step();
    if (f == found::busy) backoff = us{1};
    switch (policy.how) {
      case poll_policy::strategy::spin:
        if (stop_.load(std::memory_order_acquire)) return;
        break;
      case poll_policy::strategy::sleep:
        if (!wait(policy.interval, false)) return;
        break;
      case poll_policy::strategy::adaptive:
        if (f == found::idle) {
          backoff = us{1};
          if (!wait(policy.idle_drain, true)) return;
          break;
        }
        [[fallthrough]];
      case poll_policy::strategy::backoff:
        if (f == found::busy) {
          if (stop_.load(std::memory_order_acquire)) return;
        } else {
          if (!wait(backoff, false)) return;
          backoff = std::min(backoff * 2, interval);
        }
        break;
    }
  }
}

}  // namespace tally::detail
