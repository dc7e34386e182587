// runtime/slot.hpp — one thread of a rank at a time drives a mutex's protocol peer.
//
// Contract: a thread takes the slot before it calls lock() on the peer and keeps it
// until it leaves the critical section or gives up waiting, so a rank has at most
// one REQUEST broadcast outstanding. The thread in the critical section is the
// owner. Every member is used under the engine's mutex, which wait_until() releases
// while it waits.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace tally::detail {

class rank_slot {
 public:
  using clock = std::chrono::steady_clock;

  bool taken() const noexcept { return taken_; }
  bool owned_by(std::thread::id t) const noexcept { return taken_ && owner_ == t; }
  void take() noexcept { taken_ = true; }
  // The taking thread entered the critical section.
  void enter(std::thread::id t) noexcept { owner_ = t; }
  // The one way out: no owner, free again, one waiting thread woken.
  void release() noexcept {
    owner_ = {};
    taken_ = false;
    cv_.notify_one();
  }
  void wake_all() noexcept { cv_.notify_all(); }
  // Sleeps until notified or `until` (clock::time_point::max(): no limit).
  void wait_until(std::unique_lock<std::mutex>& lk, clock::time_point until) {
    if (until == clock::time_point::max())
      cv_.wait(lk);
    else
      cv_.wait_until(lk, until);
  }

 private:
  bool taken_ = false;
  std::thread::id owner_{};
  std::condition_variable cv_;
};

}  // namespace tally::detail
