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
#include <type_traits>

#include "tally/error.hpp"
#include "tally/export.h"
#include "tally/options.hpp"

namespace tally {

namespace detail {
class engine;
// A creation that must fail on every rank because of a bad argument found on this
// one (the C API's NULL output handle): the mutex is created collectively and the
// error raised everywhere, as for a bad option.
struct refusal {
  errc code;
  std::string what;
};
}  // namespace detail

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

  template <class T>
    requires std::is_trivially_copyable_v<T>
  T load(std::size_t offset = 0) const {
    T v;
    read(offset, std::as_writable_bytes(std::span<T, 1>(&v, 1)));
    return v;
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void store(const T& v, std::size_t offset = 0) const {
    write(offset, std::as_bytes(std::span<const T, 1>(&v, 1)));
  }

 private:
  friend class mutex;
  payload_view(detail::engine* e, std::uint64_t entry, std::size_t size)
      : engine_(e), entry_(entry), size_(size) {}
  detail::engine* engine_;
  std::uint64_t entry_;
  std::size_t size_;
};

class TALLY_API mutex {
 public:
  // Collective over comm. Throws errc::arg for MPI_COMM_NULL, an intercommunicator,
  // an out-of-range owner, a payload over the limit or differing across ranks;
  // errc::thread_level for progress_mode::thread without MPI_THREAD_MULTIPLE.
  explicit mutex(MPI_Comm comm, const options& opts = {});
  // Collective creation that fails on every rank, with `why` raised on this one.
  mutex(MPI_Comm comm, const options& opts, detail::refusal why);

  // Collective construction from any communicator object convertible to MPI_Comm,
  // such as boost::mpi::communicator.
  template <class Communicator>
    requires(!std::same_as<Communicator, MPI_Comm> &&
             std::is_convertible_v<const Communicator&, MPI_Comm>)
  explicit mutex(const Communicator& comm, const options& opts = {})
      : mutex(static_cast<MPI_Comm>(comm), opts) {}

  // Collective: calls free() if it has not been called; never throws (a failure is
  // reported on stderr).
  ~mutex();
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  // Blocks until this rank (and this thread) is in the critical section.
  // Throws errc::deadlock if the calling thread already is.
  void lock();
  // Enters only if this rank holds the token idle: never sends, never blocks.
  // Throws errc::deadlock if the calling thread already is in the critical section.
  bool try_lock();
  // Requests the token and waits until the deadline. On timeout returns false; the
  // request stays outstanding and a token that arrives later is passed on or kept
  // idle, never entered.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return lock_until(std::chrono::steady_clock::now() +
                      std::chrono::ceil<std::chrono::steady_clock::duration>(timeout));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return lock_until(std::chrono::steady_clock::now() +
                      std::chrono::ceil<std::chrono::steady_clock::duration>(deadline - Clock::now()));
  }
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
  // every send, frees the private communicator. Any later call throws errc::state.
  // If the caller still held the critical section, it is released and errc::state
  // is thrown after the teardown completed.
  void free();

  tally::stats stats() const;
  int rank() const;
  int size() const;

 private:
  bool lock_until(std::chrono::steady_clock::time_point deadline);

  std::unique_ptr<detail::engine> engine_;
};

}  // namespace tally
