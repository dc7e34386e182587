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

#include <benchmark/benchmark.h>

#include <concepts>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>

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

// tally configured by `Options`: a topology and a progress mode.
template <class Options>
class tally_kind {
 public:
  static constexpr const char* name = Options::name;
  explicit tally_kind(MPI_Comm comm) : m_(comm, Options::make()) {}
  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
  void poll() { m_.poll(); }
  tally::mutex& get() noexcept { return m_; }

 private:
  tally::mutex m_;
};

// Flat Suzuki–Kasami (one participant per rank), progress inside its calls only.
struct flat_inline_options {
  static constexpr const char* name = "tally";
  static tally::options make() {
    tally::options o;
    o.topology = tally::topology::flat;
    o.progress = tally::progress_mode::in_calls;
    return o;
  }
};
// Flat, with a background progress thread (needs MPI_THREAD_MULTIPLE).
struct flat_thread_options {
  static constexpr const char* name = "tally_thread";
  static tally::options make() {
    tally::options o = flat_inline_options::make();
    o.progress = tally::progress_mode::thread;
    o.polling = tally_thread_polling;
    return o;
  }
};
// The two-level lock (topology::node): shared memory inside a node, Suzuki–Kasami
// between nodes; progress inside its calls, like `tally`.
struct node_inline_options {
  static constexpr const char* name = "tally_node";
  static tally::options make() {
    tally::options o = flat_inline_options::make();
    o.topology = tally::topology::node;
    return o;
  }
};

using tally_inline = tally_kind<flat_inline_options>;
using tally_thread = tally_kind<flat_thread_options>;
using tally_node = tally_kind<node_inline_options>;

static_assert(lock_kind<tally_inline> && lock_kind<tally_thread> && lock_kind<tally_node>);
#endif

// The skip message of a benchmark that does not apply to this run (a kind the MPI
// or the transport cannot have), as opposed to one that failed. bench/run-local
// counts only the others as failures.
inline std::string not_applicable(const std::string& why) { return "not applicable: " + why; }

// Constructs L over comm on every rank (collective), or skips the benchmark and returns
// false: "not applicable" for tally_node where the transport makes no shared
// windows (harness.hpp, world_info) and for a progress mode above the MPI's thread
// level; the constructor's error for anything else.
template <lock_kind L>
bool construct(benchmark::State& state, std::optional<L>& out, MPI_Comm comm, bool shared_windows) {
#if TALLY_BENCH_HAVE_TALLY
  if (std::is_same_v<L, tally_node> && !shared_windows) {
    state.SkipWithError(not_applicable("tally_node needs MPI_Win_allocate_shared, which this "
                                       "transport's one-sided component cannot make")
                            .c_str());
    return false;
  }
#else
  (void)shared_windows;
#endif
  try {
    out.emplace(comm);
    return true;
#if TALLY_BENCH_HAVE_TALLY
  } catch (const tally::error& e) {
    state.SkipWithError(e.code() == tally::errc::thread_level ? not_applicable(e.what()).c_str() : e.what());
    return false;
#endif
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

static_assert(lock_kind<win_lock> && lock_kind<rma_mcs> && lock_kind<lock_server> && lock_kind<ricart_agrawala>);

// The wire size of tally's token for n ranks and no payload, as the runtime lays
// it out (core/token_layout.hpp): every token is this long, so BM_Floor, which
// sends a message of this size, bounds every handoff from below. The self-test
// checks it against the largest message an uncontended entry sends.
constexpr int token_bytes(int n) noexcept {
  return static_cast<int>(tally::protocol::token_layout::bytes(static_cast<std::size_t>(n)));
}
// The node topology's token between k nodes in full (its trail and LN), which every
// token is below 5 nodes (a delta is no shorter there).
constexpr int node_token_bytes(int k) noexcept {
  return static_cast<int>(tally::protocol::node_token::full_bytes(static_cast<std::size_t>(k)));
}

}  // namespace bench
