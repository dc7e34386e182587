// runtime/engine.hpp — the MPI runtime behind tally::mutex (one engine per mutex).
//
// Contract. The engine carries the protocol core over MPI for one mutex: its
// level (runtime/level.hpp: a protocol::peer per rank for topology::flat, the
// node's protocol::cohort in shared memory for topology::node) turns each event
// into the core's transition and carries out its actions; the engine decides
// when: who may call, waiting, progress, pacing, teardown. It decides nothing
// about the protocol. Its jobs live in separate files, each with its contract at
// the top: creation and teardown (lifecycle.cpp), the calls (engine.cpp), progress
// (progress.cpp), the fast path (fast_path.cpp), lock_async (async.cpp), the wait
// warning (watchdog.cpp); the map of every file is docs/design.md, "The map".
// All mutable state is guarded by mu_ (TALLY_GUARDED_BY: Clang checks it, see
// runtime/thread_safety.hpp) but for the fast path's atomics; the mutex's MPI calls
// happen only under mu_, so the engine needs MPI_THREAD_MULTIPLE only when several
// threads use it (thread progress, or application threads sharing the mutex).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/protocol.hpp"
#include "runtime/acquisition.hpp"
#include "runtime/level.hpp"
#include "runtime/pacing.hpp"
#include "runtime/progress_thread.hpp"
#include "runtime/slot.hpp"
#include "runtime/thread_safety.hpp"
#include "runtime/transport.hpp"
#include "tally/error.hpp"
#include "tally/options.hpp"

namespace tally::detail {

class engine : public std::enable_shared_from_this<engine> {
 public:
  using clock = std::chrono::steady_clock;

  // Collective over comm; see tally::mutex::mutex for the errors. A caller_error
  // (a bad argument found by the caller) fails the creation on every rank alike.
  // Create it with std::make_shared: asynchronous acquisitions refer to it weakly.
  // `initial_payload` (empty, or payload_bytes bytes) is the payload the token
  // starts with, set before any other rank can ask for it.
  engine(MPI_Comm comm, const options& opts, std::optional<error> caller_error = std::nullopt,
         std::span<const std::byte> initial_payload = {});
  // Tears down collectively if free() was not called; never throws.
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  void lock() {
    if (!try_fast_lock()) (void)acquire(std::nullopt);
  }
  bool lock_until(clock::time_point deadline) { return acquire(deadline); }
  bool try_lock();
  void unlock();
  void poll();
  // One progress step if the engine is idle and in in_calls mode; never blocks or
  // throws (a failure is kept and rethrown by the engine's next call).
  void poll_nowait() noexcept;
  // The calling thread's current critical-section entry number (the acquisitions
  // count at entry); throws errc::not_owner unless it holds the critical section.
  std::uint64_t payload_entry();
  // The payload, if the calling thread is still in critical-section entry `entry`;
  // else throws errc::not_owner.
  std::span<std::byte> payload(std::uint64_t entry);
  std::size_t payload_size() const noexcept { return opts_.payload_bytes; }
  // Collective teardown (see tally::mutex::free). `at_finalize` only changes the
  // wording of diagnostics.
  void free(bool at_finalize = false);
  // Keeps an MPI failure (errc::mpi) raised by a call: every later call of every
  // thread rethrows it, waiting threads wake to see it, and the other ranks are told
  // (transport::notify_fault) unless it came from one of them. free() then tears
  // down without the protocol's drain and rethrows it.
  void fault(std::exception_ptr e) noexcept;
  tally::stats stats() const;
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  progress_mode progress() const noexcept { return opts_.progress; }
  tally::topology topology() const noexcept { return opts_.topology; }
  const std::string& name() const noexcept { return opts_.name; }

  // -- asynchronous acquisition (runtime/async.cpp; the contracts of lock_request)
  std::shared_ptr<acquisition> lock_async();
  bool async_test(acquisition& a);
  bool async_wait(acquisition& a, std::optional<clock::time_point> deadline);
  bool async_cancel(acquisition& a);
  // The request object goes away: cancel, or release a lock acquired unobserved.
  void async_abandon(acquisition& a) noexcept;
  MPI_Request async_mpi_request(const std::shared_ptr<acquisition>& a);
  // MPI_Cancel of the generalized request (its cancel callback).
  void async_mpi_cancel(acquisition& a) noexcept;

 private:
  bool acquire(std::optional<clock::time_point> deadline);
  // Polls until this rank enters the critical section (for `a`, if given: until `a`
  // is acquired) or the deadline passes (then false). Releases mu_ every few polls
  // (mu_ itself: the caller's guard holds it again on return) so that other threads
  // and mutexes get a turn. Warns once when the wait outlasts the wait warning.
  bool wait_locked(std::optional<clock::time_point> deadline, const char* call, const acquisition* a)
      TALLY_REQUIRES(mu_);
  bool done_waiting_locked(const acquisition* a) TALLY_REQUIRES(mu_);
  // Prints the wait warning (runtime/watchdog.cpp).
  void warn_wait(const char* call, clock::duration waited) const noexcept;
  // Releases the rank's slot; an acquisition waiting for it starts now. mu_ held.
  void release_slot_locked() TALLY_REQUIRES(mu_);
  // Starts the outstanding acquisition (the slot is free). mu_ held.
  void async_start_locked() TALLY_REQUIRES(mu_);
  // The outstanding acquisition entered: it owns the critical section now. mu_ held.
  void async_acquired_locked() TALLY_REQUIRES(mu_);
  // Completes the generalized request of `a`, if any and not yet done. mu_ held.
  void complete_greq_locked(acquisition& a) noexcept TALLY_REQUIRES(mu_);
  // True if only a progress thread could answer for this rank now. mu_ held. With
  // `after_event` (right after this rank's own event), the level answers as of
  // that event (level::needs_progress).
  bool needs_watching_locked(bool after_event = false) const noexcept TALLY_REQUIRES(mu_);
  // Completes a request (collective or otherwise) while this engine (mu_ held by
  // the caller when `own` is set) and every other engine keep making progress.
  void wait_progressing(MPI_Request& req, const char* what);
  // The same, progressing this engine too.
  void wait_progressing_locked(MPI_Request& req, const char* what) TALLY_REQUIRES(mu_);
  std::uint64_t acquisitions_locked() const TALLY_REQUIRES(mu_);
  tally::stats stats_locked() const TALLY_REQUIRES(mu_);
  // Tests for messages and outstanding sends once; hands what arrived to the level.
  // Returns true if any message arrived. mu_ held. With repost false, the channel's
  // REQUEST receives that completed stay unposted until transport_.repost_requests().
  bool progress_locked(bool repost = true) TALLY_REQUIRES(mu_);
  // Keeps the channel told whether this rank listens (level::listens), so that
  // a REQUEST for it gets a turn without this engine being polled. mu_ held; after
  // every event that can change it (the token's arrival or departure, an entry, an
  // exit).
  void listen_locked() noexcept TALLY_REQUIRES(mu_);
  // The progress thread's step: progress_locked() if mu_ is free and all is well.
  progress_thread::found progress_from_thread() noexcept;
  void require_live() const TALLY_REQUIRES(mu_);  // throws errc::state after free/finalize, or a kept fault
  // Throws errc::deadlock naming `call` if thread `me` holds the critical section or
  // has a lock_async outstanding.
  void refuse_reentry_locked(std::thread::id me, const char* call) const TALLY_REQUIRES(mu_);
  void fault_locked(std::exception_ptr e) noexcept TALLY_REQUIRES(mu_);
  void notify_fault_locked() noexcept TALLY_REQUIRES(mu_);  // fault_'s text to the other ranks
  // The timeline's enter and exit events (trace_); an entry counted local by the
  // protocol is marked local.
  void trace_enter_locked() TALLY_REQUIRES(mu_);
  void trace_exit_locked() noexcept TALLY_REQUIRES(mu_) { trace_.record(trace_log::kind::exit); }
  // -- an idle holder's re-entry without the engine's mutex (flat topology,
  //    untraced; docs/design.md, "Re-entry without the engine's lock")
  // lock() enters by one compare-and-swap when fast_ is open; unlock() by another
  // when it still names the thread. Everything else that takes mu_ settles first.
  bool try_fast_lock() noexcept;
  bool try_fast_unlock() noexcept;
  // Opens the fast path where it applies: the token idle here, the slot free,
  // nothing outstanding (in_calls: until the pace is due). mu_ held.
  void open_fast_locked() noexcept TALLY_REQUIRES(mu_);
  // Closes it; a thread inside by the fast path becomes the slot's owner in the
  // critical section, as if it had entered the slow way. mu_ held.
  void settle_fast_locked() noexcept TALLY_REQUIRES(mu_);
  // free() of a faulted mutex: no drain (a failed rank may never answer).
  void free_faulted_locked() TALLY_REQUIRES(mu_);
  // free()'s steps: give up the critical section or the wait for it (held: it was
  // held; outstanding: a lock_async was), then drain the traffic and close.
  void leave_for_free_locked(bool& held, bool& outstanding) TALLY_REQUIRES(mu_);
  void drain_and_close_locked() TALLY_REQUIRES(mu_);

  // -- immutable after construction
  int rank_ = 0;
  int size_ = 1;
  options opts_;                    // progress resolved, name filled in
  clock::duration wait_warning_{};  // zero: off

  // -- guarded by mu_
  mutable guarded_mutex mu_;
  transport transport_ TALLY_GUARDED_BY(mu_);
  // The topology's half: set up by the constructor, used only under mu_.
  std::unique_ptr<level> level_ TALLY_GUARDED_BY(mu_);
  rank_slot slot_ TALLY_GUARDED_BY(mu_);
  unlock_pacing pacing_ TALLY_GUARDED_BY(mu_);
  bool live_ TALLY_GUARDED_BY(mu_) = true;
  bool listening_ TALLY_GUARDED_BY(mu_) = false;     // the channel counts this mutex as a listener
  bool using_thread_ TALLY_GUARDED_BY(mu_) = false;  // registered with the channel's thread (use_thread)
  std::exception_ptr fault_ TALLY_GUARDED_BY(mu_);   // an MPI failure, here or on another rank (fault())
  // One offset sample of the timeline's clock (collective over comm).
  void sync_trace_clock(MPI_Comm comm);
  trace_log trace_;                                       // the handoff timeline, off unless asked for
  bool all_traced_ = false;                               // every rank traces: its clock is synced (immutable)
  std::uint64_t traced_local_ TALLY_GUARDED_BY(mu_) = 0;  // local entries when the last enter was traced
  // The outstanding acquisition (waiting_slot or pending).
  std::shared_ptr<acquisition> async_ TALLY_GUARDED_BY(mu_);

  // -- the fast path (written under mu_ but for the compare-and-swaps of lock and
  //    unlock; read without it)
  static constexpr std::uintptr_t fast_closed = 0, fast_open = 1;
  std::atomic<std::uintptr_t> fast_{fast_closed};         // closed, open, or the entered thread's token
  std::atomic<std::uint64_t> fast_entries_{0};            // entries made by the fast path (stats)
  std::atomic<std::uint64_t> fast_due_{0};                // in_calls: ticks() from which lock() goes slow
  bool fast_allowed_ = false;                             // immutable after creation: untraced, the token can idle here
  std::uint64_t last_arrival_ TALLY_GUARDED_BY(mu_) = 0;  // ticks() of the last poll that found a message

  progress_thread progress_;
};

}  // namespace tally::detail
