// tally/guarded.hpp — a value of type T that travels inside the token.
//
//   tally::guarded<std::uint64_t> next_offset(MPI_COMM_WORLD);   // collective
//   {
//     auto g = next_offset.lock();   // the value arrives with the token
//     my_offset = *g;
//     *g += my_bytes;                // leaves with the token on unlock
//   }
//
// The value is sizeof(T) bytes of the token's payload: acquiring the lock delivers
// it in the same message, with no extra RMA or message.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include "tally/mutex.hpp"

namespace tally {

// guarded<T> for a trivially copyable T is below; <tally/boost.hpp> adds any T that
// Boost.Serialization can serialize (std::vector, std::map, ...), packed with
// Boost.MPI into a payload of fixed capacity.
template <class T>
class guarded {
  static_assert(std::is_trivially_copyable_v<T>,
                "tally::guarded<T> needs a trivially copyable T; for a type that "
                "Boost.Serialization can serialize, include <tally/boost.hpp> and link "
                "tally::boost");
};

// clang-format off
template <class T>
  requires std::is_trivially_copyable_v<T>
class guarded<T> {
  // clang-format on
 public:
  // Access to the value while this thread holds the critical section. Moving a
  // guard transfers the critical section; destroying it writes the value back and
  // unlocks (an unlock failure there terminates, as for any lock guard; call
  // unlock() to see it as an exception instead).
  class guard {
   public:
    guard(guard&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), value_(o.value_) {}
    guard& operator=(guard&&) = delete;
    guard(const guard&) = delete;
    ~guard() {
      if (owner_) unlock();
    }

    T& operator*() noexcept { return value_; }
    const T& operator*() const noexcept { return value_; }
    T* operator->() noexcept { return &value_; }
    const T* operator->() const noexcept { return &value_; }

    // Writes the value back into the token and leaves the critical section.
    void unlock() {
      guarded* g = std::exchange(owner_, nullptr);
      if (!g) throw error(errc::not_owner, "tally: guarded::guard already unlocked");
      g->m_.payload().store(value_);
      g->m_.unlock();
    }

   private:
    friend class guarded;
    explicit guard(guarded* g) : owner_(g), value_(g->m_.payload().template load<T>()) {}
    guarded* owner_;
    T value_;
  };

  // Collective over comm; `initial` is the value the token starts with (the initial
  // owner's counts; all ranks should pass the same), in place before any rank can
  // ask for it. Errors as for tally::mutex.
  explicit guarded(MPI_Comm comm, const T& initial = T{}, options opts = {})
      : m_(comm, with_payload(opts), std::as_bytes(std::span<const T, 1>(&initial, 1))) {}
  // clang-format off
  template <class Communicator>
    requires(!std::same_as<Communicator, MPI_Comm> &&
             std::is_convertible_v<const Communicator&, MPI_Comm>)
  explicit guarded(const Communicator& comm, const T& initial = T{}, options opts = {})
      // clang-format on
      : guarded(static_cast<MPI_Comm>(comm), initial, opts) {}

  // Blocks until this thread holds the critical section; the guard holds the value.
  guard lock() {
    m_.lock();
    return enter();
  }
  // A guard if this rank holds the token idle, else nullopt; never sends.
  std::optional<guard> try_lock() {
    if (!m_.try_lock()) return std::nullopt;
    return enter();
  }
  template <class Rep, class Period>
  std::optional<guard> try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (!m_.try_lock_for(timeout)) return std::nullopt;
    return enter();
  }

  // The underlying mutex: poll(), stats(), free(), rank(), size().
  // clang-format off
  class mutex& mutex() noexcept { return m_; }
  // clang-format on

 private:
  // The guard of the critical section just entered. If it cannot be built (T's
  // constructor throws), the critical section is left before the exception leaves.
  guard enter() {
    try {
      return guard(this);
    } catch (...) {
      m_.unlock();
      throw;
    }
  }
  static options with_payload(options o) {
    o.payload_bytes = sizeof(T);
    return o;
  }
  class mutex m_;
};

}  // namespace tally
