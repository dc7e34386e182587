// tally/boost.hpp — guarded<T> for any T that Boost.Serialization can serialize.
//
//   #include <tally/boost.hpp>        // link tally::boost (find_package(tally COMPONENTS boost))
//   tally::guarded<std::vector<double>> log(MPI_COMM_WORLD, {}, 64 * 1024);  // collective
//   {
//     auto g = log.lock();            // unpacked from the token on entry
//     g->push_back(x);                // packed back into the token when g unlocks
//   }
//
// The value travels in the token's payload as a Boost.MPI packed archive (MPI_Pack
// over the mutex's communicator) behind an 8-byte length, so the payload is
// capacity + 8 bytes, fixed at creation, and moves on every handoff: size it for
// the largest value, not generously. A value whose packed form exceeds the capacity
// is never truncated: guard::unlock() throws errc::arg and keeps the critical
// section, so the caller can shrink the value and unlock again; the guard's
// destructor leaves the token's previous value in place, releases the lock and
// then throws errc::arg (or, when an exception is already unwinding, prints the
// error to stderr instead).
#pragma once

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/packed_iarchive.hpp>
#include <boost/mpi/packed_oarchive.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tally/guarded.hpp"

namespace tally {

// clang-format off
template <class T>
  requires(!std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>)
class guarded<T> {
  // clang-format on
  using buffer = boost::mpi::packed_oarchive::buffer_type;
  static constexpr std::size_t header = sizeof(std::uint64_t);  // the packed length

 public:
  class guard {
   public:
    guard(guard&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)), value_(std::move(o.value_)), unwinding_(o.unwinding_) {}
    guard& operator=(guard&&) = delete;
    guard(const guard&) = delete;
    // Packs the value and unlocks; see the header comment for a value too large.
    ~guard() noexcept(false) {
      guarded* g = std::exchange(owner_, nullptr);
      if (!g) return;
      const std::size_t packed = g->pack(value_);
      if (packed <= g->capacity_) {
        g->write();
        g->m_.unlock();
        return;
      }
      g->m_.unlock();  // the token keeps the value it arrived with
      const std::string what = g->too_large(packed) + "; the token keeps its previous value";
      if (std::uncaught_exceptions() > unwinding_) {
        std::fprintf(stderr, "%s\n", what.c_str());
        return;
      }
      throw error(errc::arg, what);
    }

    T& operator*() noexcept { return value_; }
    const T& operator*() const noexcept { return value_; }
    T* operator->() noexcept { return &value_; }
    const T* operator->() const noexcept { return &value_; }

    // Packs the value into the token and leaves the critical section. A value
    // over the capacity throws errc::arg and keeps the critical section and this
    // guard: shrink it and call unlock() again.
    void unlock() {
      if (!owner_) throw error(errc::not_owner, "tally: guarded::guard already unlocked");
      const std::size_t packed = owner_->pack(value_);
      if (packed > owner_->capacity_)
        throw error(errc::arg, owner_->too_large(packed) + "; the critical section is still held");
      owner_->write();
      std::exchange(owner_, nullptr)->m_.unlock();
    }

   private:
    friend class guarded;
    guard(guarded* g, T&& v) : owner_(g), value_(std::move(v)), unwinding_(std::uncaught_exceptions()) {}
    guarded* owner_;
    T value_;
    int unwinding_;
  };

  // Collective over comm: `initial` is the value the token starts with (all ranks
  // should pass the same) and `capacity` the most bytes its packed form may ever
  // take (capacity + 8 <= max_payload_bytes). An initial value over the capacity
  // is refused on every rank with errc::arg; other errors as for tally::mutex.
  guarded(MPI_Comm comm, const T& initial, std::size_t capacity, options opts = {})
      : comm_(comm, boost::mpi::comm_attach), capacity_(capacity), m_(make(comm, initial, capacity, opts)) {}
  // clang-format off
  template <class Communicator>
    requires(!std::same_as<Communicator, MPI_Comm> &&
             std::is_convertible_v<const Communicator&, MPI_Comm>)
  guarded(const Communicator& comm, const T& initial, std::size_t capacity, options opts = {})
      // clang-format on
      : guarded(static_cast<MPI_Comm>(comm), initial, capacity, opts) {}

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

  // The most bytes the packed value may take, as given at creation.
  std::size_t capacity() const noexcept { return capacity_; }
  // The underlying mutex: poll(), stats(), free(), rank(), size().
  // clang-format off
  class mutex& mutex() noexcept { return m_; }
  // clang-format on

 private:
  // The mutex, its payload holding `initial`; a refusal on every rank if it does
  // not fit (packing is local, creation collective).
  tally::mutex make(MPI_Comm comm, const T& initial, std::size_t capacity, options opts) {
    opts.payload_bytes = capacity + header;
    const std::size_t packed = pack(initial);
    if (packed > capacity) {
      const detail::refusal why{errc::arg, too_large(packed) + " (initial value)"};
      return tally::mutex(comm, opts, sizeof(options), {}, &why);
    }
    std::vector<std::byte> bytes(opts.payload_bytes);
    frame(bytes);
    return tally::mutex(comm, opts, bytes);
  }

  // Packs v into out_; returns the packed size.
  std::size_t pack(const T& v) {
    out_.clear();
    boost::mpi::packed_oarchive oa(comm_, out_);
    oa << v;
    return out_.size();
  }
  // The length and the packed bytes of out_ at the start of dst.
  void frame(std::span<std::byte> dst) const {
    const std::uint64_t n = out_.size();
    std::memcpy(dst.data(), &n, header);
    std::memcpy(dst.data() + header, out_.data(), out_.size());
  }
  // Writes out_ into the token's payload (inside the critical section).
  void write() {
    payload_view p = m_.payload();
    const std::uint64_t n = out_.size();
    p.store(n);
    p.write(header, std::as_bytes(std::span<const char>(out_.data(), out_.size())));
  }
  std::string too_large(std::size_t packed) const {
    return "tally: guarded value packs to " + std::to_string(packed) + " bytes, over its capacity of " +
           std::to_string(capacity_) + " bytes";
  }
  // Unpacks the token's value for the critical section just entered; if that
  // throws, the critical section is left before the exception leaves.
  guard enter() {
    try {
      payload_view p = m_.payload();
      const auto n = p.load<std::uint64_t>();
      if (n > capacity_) throw error(errc::state, "tally: guarded value: corrupt length in the token");
      buffer in(static_cast<std::size_t>(n));
      p.read(header, std::as_writable_bytes(std::span<char>(in.data(), in.size())));
      boost::mpi::packed_iarchive ia(comm_, in);
      T v{};
      ia >> v;
      return guard(this, std::move(v));
    } catch (...) {
      m_.unlock();
      throw;
    }
  }

  boost::mpi::communicator comm_;  // packs and unpacks (MPI_Pack); not owned
  std::size_t capacity_;
  buffer out_;  // the last packed value; used by the critical section's holder only
  class mutex m_;
};

}  // namespace tally
