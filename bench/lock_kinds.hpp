// bench/lock_kinds.hpp — the lock kinds the benchmarks compare, behind one
// interface.
//
// A lock kind L is constructed collectively from a communicator (which it
// duplicates, so its traffic never meets the harness's), destroyed collectively,
// and offers lock()/unlock() like a Lockable plus poll(), which drives whatever
// progress the kind needs while the caller is not inside lock() or unlock(). The
// harness calls poll() on every rank whenever it waits, so that kinds without
// asynchronous progress (tally in in_calls mode, the lock server, Ricart–Agrawala)
// are treated alike. L::name is the kind's name in benchmark names and reports.
#pragma once

#include <mpi.h>

#include <concepts>

#include "baselines/lock_server.hpp"
#include "core/token_layout.hpp"
#include "baselines/ricart_agrawala.hpp"
#include "baselines/rma_mcs.hpp"
#include "baselines/win_lock.hpp"

#if TALLY_BENCH_HAVE_TALLY
#include "tally/mutex.hpp"
#endif

namespace bench {

template <class L>
concept lock_kind = std::constructible_from<L, MPI_Comm> && requires(L& l) {
  { L::name } -> std::convertible_to<const char*>;
  l.lock();
  l.unlock();
  l.poll();
};

#if TALLY_BENCH_HAVE_TALLY

// Polling policy of the tally_thread kind's progress thread (set from the
// command line before any benchmark runs).
inline tally::poll_policy tally_thread_polling{};

// tally with progress inside its calls only.
class tally_inline {
 public:
  static constexpr const char* name = "tally";
  explicit tally_inline(MPI_Comm comm) : m_(comm, opts()) {}
  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
  void poll() { m_.poll(); }
  tally::mutex& get() noexcept { return m_; }

 private:
  static tally::options opts() {
    tally::options o;
    o.progress = tally::progress_mode::in_calls;
    return o;
  }
  tally::mutex m_;
};

// tally with a background progress thread (needs MPI_THREAD_MULTIPLE): what the
// default options give under MPI_THREAD_MULTIPLE.
class tally_thread {
 public:
  static constexpr const char* name = "tally_thread";
  explicit tally_thread(MPI_Comm comm) : m_(comm, opts()) {}
  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
  void poll() { m_.poll(); }
  tally::mutex& get() noexcept { return m_; }

 private:
  static tally::options opts() {
    tally::options o;
    o.progress = tally::progress_mode::thread;
    o.polling = tally_thread_polling;
    return o;
  }
  tally::mutex m_;
};

static_assert(lock_kind<tally_inline> && lock_kind<tally_thread>);
#endif

static_assert(lock_kind<win_lock> && lock_kind<rma_mcs> && lock_kind<lock_server> &&
              lock_kind<ricart_agrawala>);

// The wire size of tally's token for n ranks and no payload, as the runtime lays
// it out (core/token_layout.hpp). BM_Floor sends a message of this size; the
// self-test checks it against the largest message tally really sends.
constexpr int token_bytes(int n) noexcept {
  return static_cast<int>(tally::protocol::token_layout::bytes(static_cast<std::size_t>(n)));
}

}  // namespace bench
