#include "runtime/progress_thread.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

namespace tally::detail {

using us = std::chrono::microseconds;

// The process's one progress thread and its members (progress_thread.hpp).
class progress_service {
 public:
  static progress_service& get() {
    static progress_service* s = new progress_service;  // never destroyed: members may outlive statics
    return *s;
  }

  void add(progress_thread& m, poll_policy policy, std::function<progress_thread::found()> step) {
    std::lock_guard lk(mu_);
    m.policy_ = policy;
    m.step_ = std::move(step);
    m.index_ = members_.size();
    members_.push_back(&m);
    registered_.insert(&m);
    if (adaptive(m)) drains_.insert(policy.idle_drain);
    watch_locked(m);  // a first round for it, whatever its policy
    if (!running_) {  // a thread that is still ending sees the new epoch and leaves
      running_ = true;
      if (thread_.joinable()) thread_.detach();
      thread_ = std::thread([this, mine = ++epoch_] { main(mine); });
    }
  }

  void remove(progress_thread& m) noexcept {
    std::thread ending;
    {
      std::unique_lock lk(mu_);
      if (!is_member_locked(&m)) return;
      progress_thread* last = members_.back();
      members_[m.index_] = last;
      last->index_ = m.index_;
      members_.pop_back();
      registered_.erase(&m);
      unwatch_locked(m);
      if (adaptive(m)) drains_.erase(drains_.find(m.policy_.idle_drain));
      stepped_.wait(lk, [&] { return current_ != &m; });
      if (members_.empty()) {  // the last one: the thread ends
        running_ = false;
        ++epoch_;
        ending = std::move(thread_);
      }
    }
    wake_.notify_all();
    if (ending.joinable()) ending.join();
  }

  void nudge(progress_thread& m) noexcept {
    if (m.watched_.load()) return;
    {
      std::lock_guard lk(mu_);
      if (!is_member_locked(&m) || m.watched_.load()) return;
      watch_locked(m);
      nudged_ = true;
    }
    wake_.notify_all();
  }

 private:
  static bool adaptive(const progress_thread& m) noexcept { return m.policy_.how == poll_policy::strategy::adaptive; }

  void watch_locked(progress_thread& m) {
    if (m.watched_.load()) return;
    m.watched_.store(true);
    m.backoff_ = us{1};
    m.next_wait_ = us{0};
    watched_.push_back(&m);
  }
  void unwatch_locked(progress_thread& m) {
    if (!m.watched_.load()) return;
    m.watched_.store(false);
    watched_.erase(std::remove(watched_.begin(), watched_.end(), &m), watched_.end());
  }

  // After a step of m: whether it stays watched, and (next_wait_) the wait it asks for.
  static bool settle(progress_thread& m, progress_thread::found f) noexcept {
    using found = progress_thread::found;
    using strategy = poll_policy::strategy;
    const us interval = std::max(m.policy_.interval, us{1});
    switch (m.policy_.how) {
      case strategy::spin: m.next_wait_ = us{0}; return true;
      case strategy::sleep: m.next_wait_ = m.policy_.interval; return true;
      case strategy::adaptive:
        if (f == found::idle) return false;
        [[fallthrough]];
      case strategy::backoff:
        if (f == found::busy) {
          m.backoff_ = us{1};
          m.next_wait_ = us{0};
        } else {
          m.next_wait_ = m.backoff_;
          m.backoff_ = std::min(m.backoff_ * 2, interval);
        }
        return true;
    }
    return true;
  }

  void main(std::uint64_t mine) {
    // Ask the kernel for precise sleeps: the default 50 us timer slack would dominate
    // short polling intervals.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    std::unique_lock lk(mu_);
    std::vector<progress_thread*> round;  // pointers only compared until found registered
    while (epoch_ == mine) {
      round.assign(watched_.begin(), watched_.end());
      const std::size_t n = members_.size();
      for (std::size_t k = 0; k < std::min(progress_thread::drain_slice, n); ++k) {
        progress_thread* m = members_[cursor_++ % n];
        if (!m->watched_.load()) round.push_back(m);
      }
      us wait = us::max();
      const auto began = std::chrono::steady_clock::now();
      for (progress_thread* m : round) {
        if (epoch_ != mine) return;
        if (!is_member_locked(m)) continue;  // stopped since the round began
        current_ = m;
        lk.unlock();
        const progress_thread::found f = m->step_();
        lk.lock();
        current_ = nullptr;
        stepped_.notify_all();
        if (!is_member_locked(m)) continue;  // stopped during its step
        if (settle(*m, f)) {
          if (!m->watched_.load()) {
            m->watched_.store(true);
            watched_.push_back(m);
          }
          wait = std::min(wait, m->next_wait_);
        } else {
          unwatch_locked(*m);
        }
      }
      if (epoch_ != mine) return;
      if (wait == us::max()) wait = us{0};                // watched since the round began: step them now
      if (round.size() > progress_thread::drain_slice) {  // a long round: the thread's share stays bounded
        const auto took = std::chrono::duration_cast<us>(std::chrono::steady_clock::now() - began);
        wait = std::max(wait, took * progress_thread::long_round_factor);
      }
      if (watched_.empty()) {  // park: REQUESTs wait in MPI's queue until a nudge or the drain
        const us park = drains_.empty() ? us{1000} : *drains_.begin();
        wake_.wait_for(lk, park, [&] { return epoch_ != mine || nudged_; });
      } else if (wait > us{0}) {
        wake_.wait_for(lk, wait, [&] { return epoch_ != mine || nudged_; });
      }
      nudged_ = false;
    }
  }

  bool is_member_locked(const progress_thread* m) const noexcept { return registered_.count(m) != 0; }

  std::mutex mu_;
  std::condition_variable wake_;                           // the thread: a nudge, a new member, its end
  std::condition_variable stepped_;                        // remove(): the thread finished a step
  std::vector<progress_thread*> members_;                  // started (m->index_ is m's place)
  std::unordered_set<const progress_thread*> registered_;  // the same, to look up (a member is started iff here)
  std::vector<progress_thread*> watched_;                  // those with watched_ set
  std::multiset<us> drains_;                               // idle_drain of the adaptive members
  std::size_t cursor_ = 0;                                 // the drain's turn in members_
  progress_thread* current_ = nullptr;                     // being stepped (mu_ released)
  bool nudged_ = false;
  bool running_ = false;
  std::uint64_t epoch_ = 0;  // a thread runs while it equals the epoch it was started in
  std::thread thread_;
};

void progress_thread::start(poll_policy policy, std::function<found()> step) {
  progress_service::get().add(*this, policy, std::move(step));
}

void progress_thread::stop() noexcept { progress_service::get().remove(*this); }

void progress_thread::nudge() noexcept { progress_service::get().nudge(*this); }

}  // namespace tally::detail
