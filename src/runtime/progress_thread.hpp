// runtime/progress_thread.hpp — the background thread of progress_mode::thread.
//
// Contract: start() runs `step` in a loop on a new thread; `step` returns whether
// it handled any message. Between steps the thread waits as the poll_policy says
// (spin: not at all; sleep: `interval`; backoff: 1 us doubling up to `interval`,
// reset by traffic). stop() wakes the thread at once, even from a long wait, and
// joins it; it is idempotent and runs from the destructor too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "tally/options.hpp"

namespace tally::detail {

class progress_thread {
 public:
  progress_thread() = default;
  progress_thread(const progress_thread&) = delete;
  progress_thread& operator=(const progress_thread&) = delete;
  ~progress_thread() { stop(); }

  void start(poll_policy policy, std::function<bool()> step);
  void stop() noexcept;

 private:
  void main(poll_policy policy, const std::function<bool()>& step);
  // Waits up to d, or until stop(); returns false once stop() was called.
  bool wait(std::chrono::microseconds d);

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stop_{false};  // written under mu_, so that wait() cannot miss it
  std::thread thread_;
};

}  // namespace tally::detail
