#include "runtime/progress_thread.hpp"

#include <sys/prctl.h>

#include <algorithm>

namespace tally::detail {

void progress_thread::start(poll_policy policy, std::function<bool()> step) {
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

bool progress_thread::wait(std::chrono::microseconds d) {
  std::unique_lock lk(mu_);
  return !cv_.wait_for(lk, d, [this] { return stop_.load(); });
}

void progress_thread::main(poll_policy policy, const std::function<bool()>& step) {
  // Ask the kernel for precise sleeps: the default 50 us timer slack would dominate
  // short polling intervals.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  using us = std::chrono::microseconds;
  const us interval = policy.interval;
  us backoff{1};
  for (;;) {
    const bool active = step();
    switch (policy.how) {
      case poll_policy::strategy::spin:
        if (stop_.load(std::memory_order_acquire)) return;
        break;
      case poll_policy::strategy::sleep:
        if (!wait(interval)) return;
        break;
      case poll_policy::strategy::backoff:
        if (active) {
          backoff = us{1};
          if (stop_.load(std::memory_order_acquire)) return;
        } else {
          if (!wait(backoff)) return;
          backoff = std::min(backoff * 2, std::max(interval, us{1}));
        }
        break;
    }
  }
}

}  // namespace tally::detail
