// runtime/thread_safety.hpp — the locking discipline, stated where Clang checks it.
//
// Contract. A member marked TALLY_GUARDED_BY(m) is read and written only with m
// held; a function marked TALLY_REQUIRES(m) is called only with m held. Clang's
// -Wthread-safety proves both at compile time (the test lint.tidy.runtime runs
// clang-tidy with it, findings as errors); other compilers ignore the marks. The runtime's
// own mutexes are `guarded_mutex`, held through `guard` (a scope) or
// `unique_guard` (a scope that can release and retake it, and lend the
// std::unique_lock inside to a std::condition_variable).
#pragma once

#include <mutex>

#if defined(__clang__)
#define TALLY_TSA(x) __attribute__((x))
#else
#define TALLY_TSA(x)
#endif
#define TALLY_CAPABILITY(x) TALLY_TSA(capability(x))
#define TALLY_SCOPED_CAPABILITY TALLY_TSA(scoped_lockable)
#define TALLY_GUARDED_BY(x) TALLY_TSA(guarded_by(x))
#define TALLY_PT_GUARDED_BY(x) TALLY_TSA(pt_guarded_by(x))
#define TALLY_REQUIRES(...) TALLY_TSA(requires_capability(__VA_ARGS__))
#define TALLY_ACQUIRE(...) TALLY_TSA(acquire_capability(__VA_ARGS__))
#define TALLY_RELEASE(...) TALLY_TSA(release_capability(__VA_ARGS__))
#define TALLY_TRY_ACQUIRE(...) TALLY_TSA(try_acquire_capability(__VA_ARGS__))
#define TALLY_EXCLUDES(...) TALLY_TSA(locks_excluded(__VA_ARGS__))

namespace tally::detail {

class TALLY_CAPABILITY("mutex") guarded_mutex {
 public:
  void lock() TALLY_ACQUIRE() { m_.lock(); }
  void unlock() TALLY_RELEASE() { m_.unlock(); }
  bool try_lock() TALLY_TRY_ACQUIRE(true) { return m_.try_lock(); }
  std::mutex& native() noexcept { return m_; }

 private:
  std::mutex m_;
};

class TALLY_SCOPED_CAPABILITY guard {
 public:
  explicit guard(guarded_mutex& m) TALLY_ACQUIRE(m) : m_(m) { m.lock(); }
  // Takes over a lock already held (after a successful try_lock()).
  guard(guarded_mutex& m, std::adopt_lock_t) TALLY_REQUIRES(m) : m_(m) {}
  ~guard() TALLY_RELEASE() { m_.unlock(); }
  guard(const guard&) = delete;
  guard& operator=(const guard&) = delete;

 private:
  guarded_mutex& m_;
};

class TALLY_SCOPED_CAPABILITY unique_guard {
 public:
  explicit unique_guard(guarded_mutex& m) TALLY_ACQUIRE(m) : lk_(m.native()) {}
  ~unique_guard() TALLY_RELEASE() {}
  unique_guard(const unique_guard&) = delete;
  unique_guard& operator=(const unique_guard&) = delete;
  void lock() TALLY_ACQUIRE() { lk_.lock(); }
  void unlock() TALLY_RELEASE() { lk_.unlock(); }
  // For std::condition_variable::wait*: it releases and retakes the lock inside.
  std::unique_lock<std::mutex>& native() noexcept { return lk_; }

 private:
  std::unique_lock<std::mutex> lk_;
};

}  // namespace tally::detail
