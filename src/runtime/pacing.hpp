// runtime/pacing.hpp — when unlock() polls for MPI messages.
//
// Contract (docs/design.md, "Polling in unlock"): unlock() skips its poll when a
// waiter is already known (the token leaves at once); otherwise it polls on every
// call until `quiet_polls` polls in a row found nothing. In such a quiet spell it
// polls only once at least `factor` x the cost of a poll has passed since its last
// poll, so polling takes at most 1/factor of the time. Any message ends the spell.
// Single-threaded: the engine uses it under its mutex.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace tally::detail {

// A cheap monotonic tick count; its unit does not matter (only ratios are used).
inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// ticks() per microsecond, measured once per process (about 50 us of spinning at
// the first call).
inline double ticks_per_us() noexcept {
  static const double rate = [] {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t k0 = ticks();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(50)) {
    }
    const std::uint64_t k1 = ticks();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return std::max(static_cast<double>(k1 - k0) / us, 1e-3);
  }();
  return rate;
}

// Counts the polls of one wait; from the `spins`-th on, each poll also yields the
// core. With more ranks than cores the rank that can end the wait may need it, and
// an MPI that busy-polls without yielding (MPICH) would otherwise keep it off the
// core for a whole time slice per step. A short wait never yields.
class patience {
 public:
  static constexpr std::uint32_t spins = 4096;
  void operator()() noexcept {
    if (n_ > spins)
      std::this_thread::yield();
    else
      ++n_;
  }

 private:
  std::uint32_t n_ = 0;
};

class unlock_pacing {
 public:
  static constexpr std::uint32_t quiet_polls = 64;
  static constexpr std::uint64_t factor = 4;

  // Whether this unlock() should poll.
  bool due(bool waiter_known) const noexcept {
    return !waiter_known && (quiet_ < quiet_polls || ticks() - last_ >= factor * cost_);
  }
  // Brackets unlock()'s poll: t0 = ticks() before it, `arrived` its result.
  void polled(std::uint64_t t0, bool arrived) noexcept {
    last_ = ticks();
    // Follows a cheaper poll at once but a dearer one at most twofold, so that one
    // poll stretched by the scheduler cannot stretch the quiet-spell interval.
    cost_ = std::min(last_ - t0, 2 * cost_ + 1);
    if (!arrived && quiet_ < quiet_polls) ++quiet_;
  }
  // A message arrived, in any poll: the quiet spell is over.
  void message_seen() noexcept { quiet_ = 0; }

 private:
  std::uint64_t last_ = 0;   // ticks() at the end of unlock()'s last poll
  std::uint64_t cost_ = 0;   // what that poll took (estimate)
  std::uint32_t quiet_ = 0;  // unlock() polls in a row that found nothing
};

}  // namespace tally::detail
