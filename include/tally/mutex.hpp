// tally/mutex.hpp — a distributed critical section over an MPI communicator.
//
// Every rank of the communicator is a Suzuki–Kasami peer. tally::mutex meets the
// standard Lockable and TimedLockable requirements, so std::lock_guard and
// std::unique_lock work. Construction and destruction are collective.
//
//   tally::mutex m(MPI_COMM_WORLD);
//   { std::lock_guard<tally::mutex> g(m); /* one rank at a time */ }
//
// Cost: a rank that still holds the token re-enters with zero messages; any other
// entry costs at most n messages (n-1 REQUESTs + 1 token). See docs/design.md.
//
// Errors throw tally::error (tally/error.hpp). Locking semantics are error-checking:
// re-locking from the thread that holds the critical section throws errc::deadlock
// and unlocking without holding it throws errc::not_owner.
#pragma once

#include <mpi.h>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "tally/error.hpp"
#include "tally/export.h"
#include "tally/options.hpp"

namespace tally {

namespace detail {
class engine;
struct acquisition;

// The steady_clock time point `d` from now, saturated: a duration too long to
// represent gives time_point::max() (wait forever), a negative one now.
template <class Rep, class Period>
std::chrono::steady_clock::time_point deadline_after(const std::chrono::duration<Rep, Period>& d) {
  using clock = std::chrono::steady_clock;
  const clock::time_point now = clock::now();
  if (d <= d.zero()) return now;
  // Compared in long double seconds: no integer overflow whatever Rep and Period are.
  const long double left = std::chrono::duration<long double>(clock::time_point::max() - now).count();
  if (std::chrono::duration<long double>(d).count() >= left) return clock::time_point::max();
  return now + std::chrono::ceil<clock::duration>(d);
}
// The steady_clock time point of `t`, saturated: its distance from now is taken in
// long double seconds, so time_point::min() and max() of any clock and duration
// give now (one attempt) or time_point::max() (wait forever) without overflow.
template <class Clock, class Duration>
std::chrono::steady_clock::time_point deadline_at(const std::chrono::time_point<Clock, Duration>& t) {
  using seconds = std::chrono::duration<long double>;
  const seconds left = seconds(t.time_since_epoch()) - seconds(Clock::now().time_since_epoch());
  return deadline_after(left);
}
// A creation that must fail on every rank because of a bad argument found on this
// one (the C API's NULL output handle or unreadable options, tally::guarded's
// oversized initial value): the mutex is created collectively and the error raised
// everywhere, as for a bad option. Only those two create so (mutex's private
// constructor).
struct refusal {
  errc code;
  std::string what;
};
struct c_api;  // the C API's access to that constructor (runtime/c_api.cpp)
}  // namespace detail

template <class T>
class guarded;

// A checked view of the token's payload, taken inside the critical section. Every
// access throws errc::not_owner unless the calling thread is still in the same
// critical-section entry the view was taken in; out-of-range access throws
// errc::arg. Using a view after unlock is therefore an error, never stale data.
class TALLY_API payload_view {
 public:
  std::size_t size() const noexcept { return size_; }
  // Copies dst.size() bytes starting at offset out of / src into the payload.
  void read(std::size_t offset, std::span<std::byte> dst) const;
  void write(std::size_t offset, std::span<const std::byte> src) const;
  // The bytes themselves, checked now; valid until this critical section ends.
  std::span<std::byte> bytes() const;

  // clang-format off
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T load(std::size_t offset = 0) const {
    // clang-format on
    T v;
    read(offset, std::as_writable_bytes(std::span<T, 1>(&v, 1)));
    return v;
  }
  // clang-format off
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void store(const T& v, std::size_t offset = 0) const {
    // clang-format on
    write(offset, std::as_bytes(std::span<const T, 1>(&v, 1)));
  }

 private:
  friend class mutex;
  payload_view(detail::engine* e, std::uint64_t entry, std::size_t size) : engine_(e), entry_(entry), size_(size) {}
  detail::engine* engine_;
  std::uint64_t entry_;
  std::size_t size_;
};

// An asynchronous acquisition of a tally::mutex (mutex::lock_async). Move-only.
// The critical section it acquires belongs to the thread that called lock_async;
// that thread unlocks it with mutex::unlock(). Progress comes from the mutex's
// progress thread, from test()/wait(), or from any other tally call of the process.
class TALLY_API lock_request {
 public:
  lock_request() noexcept = default;
  lock_request(lock_request&&) noexcept = default;
  lock_request& operator=(lock_request&& o) noexcept;
  lock_request(const lock_request&) = delete;
  lock_request& operator=(const lock_request&) = delete;
  // A request whose acquisition nobody observed (test/wait never returned true, no
  // MPI completion of mpi_request()) is cancelled; if the lock had been acquired
  // meanwhile, it is released. Never throws.
  ~lock_request();

  // True once the lock is acquired (the calling thread then holds the critical
  // section); false while it is pending. Drives one progress step. Throws
  // errc::state for a cancelled request or one whose mutex was freed.
  bool test();
  // Blocks until acquired.
  void wait();
  // Blocks until acquired or the deadline passes; false on timeout (the request
  // stays pending).
  template <class Rep, class Period>
  bool wait_for(const std::chrono::duration<Rep, Period>& timeout) {
    return wait_deadline(detail::deadline_after(timeout));
  }
  template <class Clock, class Duration>
  bool wait_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return wait_deadline(detail::deadline_at(deadline));
  }
  // Withdraws a pending acquisition: true if it will never be acquired (a token
  // that arrives later is passed on or kept idle); false if it had already been
  // acquired, in which case the caller holds the critical section and must unlock.
  bool cancel();
  // The acquisition as an MPI generalized request, for MPI_Waitany/MPI_Testsome
  // over lock and communication requests alike; created on first call, completed
  // when the lock is acquired (or the request cancelled: MPI_Test_cancelled). Free
  // it the MPI way (complete it with MPI_Wait/MPI_Test). Needs the mutex's progress
  // thread, because MPI completes nothing by itself here (errc::state otherwise;
  // docs/design.md, "Nonblocking acquire").
  MPI_Request mpi_request();
  // True if this object refers to an acquisition (not default-constructed or moved from).
  bool valid() const noexcept { return bool(acq_); }

 private:
  friend class mutex;
  explicit lock_request(std::shared_ptr<detail::acquisition> a) noexcept : acq_(std::move(a)) {}
  bool wait_deadline(std::chrono::steady_clock::time_point deadline);

  std::shared_ptr<detail::acquisition> acq_;
};

class TALLY_API mutex {
 public:
  // Collective over comm. Throws errc::arg for MPI_COMM_NULL, an intercommunicator,
  // an out-of-range owner, a payload over the limit or differing across ranks;
  // errc::thread_level for progress_mode::thread without MPI_THREAD_MULTIPLE.
  // With the default progress_mode::automatic, the mode is thread when MPI provides
  // MPI_THREAD_MULTIPLE and in_calls otherwise (see progress()).
  explicit mutex(MPI_Comm comm, const options& opts = {}) : mutex(comm, opts, sizeof(options), {}, nullptr) {}
  // Collective: as above, with the payload starting as `initial_payload` (exactly
  // options::payload_bytes bytes, else errc::arg on every rank), in place before
  // any rank can ask for the token. Only the initial owner's bytes count.
  mutex(MPI_Comm comm, const options& opts, std::span<const std::byte> initial_payload)
      : mutex(comm, opts, sizeof(options), initial_payload, nullptr) {}

  // Collective construction from any communicator object convertible to MPI_Comm,
  // such as boost::mpi::communicator.
  // clang-format off
  template <class Communicator>
    requires(!std::same_as<Communicator, MPI_Comm> &&
             std::is_convertible_v<const Communicator&, MPI_Comm>)
  explicit mutex(const Communicator& comm, const options& opts = {})
      // clang-format on
      : mutex(static_cast<MPI_Comm>(comm), opts) {}

  // Collective: calls free() if it has not been called; never throws (a failure is
  // reported on stderr).
  ~mutex();
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  // Blocks until this rank (and this thread) is in the critical section.
  // Throws errc::deadlock if the calling thread already is.
  void lock();
  // Enters only if this rank holds the token idle, without sending anything. Never
  // blocks: otherwise it makes one progress step (as every tally call does, for
  // every mutex of the process) and returns false. Throws errc::deadlock if the
  // calling thread already is in the critical section.
  bool try_lock();
  // Requests the token and waits until the deadline. On timeout returns false; the
  // request stays outstanding and a token that arrives later is passed on or kept
  // idle, never entered. Durations too long to represent wait forever.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return lock_until(detail::deadline_after(timeout));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return lock_until(detail::deadline_at(deadline));
  }
  // Starts an acquisition without waiting for it (see lock_request). At most one
  // acquisition of this mutex may be outstanding per rank: another one, or a
  // lock_async by the thread that holds the critical section, throws
  // errc::deadlock; lock() by other threads waits behind it.
  lock_request lock_async();
  // Leaves the critical section; the calling thread must hold it (errc::not_owner).
  void unlock();

  // Drives progress once: receives REQUESTs, hands over an idle token, completes
  // sends. Useful in progress_mode::in_calls mode during long computations.
  void poll();

  // The token's payload: options::payload_bytes bytes of application state that
  // move with the token, in the same message. The calling thread must hold the
  // critical section (errc::not_owner); the view is checked on every access.
  payload_view payload();

  // Collective teardown: drains every message addressed to this rank, completes
  // every send, frees what this mutex alone holds (the communicators stay with the
  // communicator it was created on, for its other mutexes, until that is freed).
  // Any later call throws errc::state, except the queries below, which keep
  // answering with their final values (also after MPI_Finalize freed the mutex). If the caller still held the critical
  // section, it is released and errc::state is thrown after the teardown completed.
  void free();

  // Counters of this rank; final after free().
  tally::stats stats() const {
    tally::stats s;
    read_stats(s, sizeof s);
    return s;
  }
  // What stats() calls: writes `size` bytes of counters to out (the caller's
  // sizeof(tally::stats)), none beyond; counters this library does not keep read 0.
  void read_stats(tally::stats& out, std::size_t size) const;
  int rank() const;
  int size() const;
  // The progress mode in effect (progress_mode::automatic resolved at creation).
  progress_mode progress() const;
  // The topology in effect: flat or node (topology::automatic resolved at creation,
  // the same on every rank).
  tally::topology topology() const;
  // The name diagnostics use (options::name, or "mutex #k").
  const std::string& name() const;

 private:
  friend struct detail::c_api;
  template <class T>
  friend class guarded;
  // What the constructors above call (inline, so that the sizes are the caller's
  // header's): the library reads only the members of options that options_size
  // covers and refuses a larger one (errc::arg: built against a newer header). A
  // non-null `why` makes creation fail on every rank, raised on this one.
  mutex(MPI_Comm comm, const options& opts, std::size_t options_size, std::span<const std::byte> initial_payload,
        const detail::refusal* why);

  bool lock_until(std::chrono::steady_clock::time_point deadline);

  std::shared_ptr<detail::engine> engine_;
};

}  // namespace tally
