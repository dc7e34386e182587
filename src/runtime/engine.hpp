// runtime/engine.hpp — the MPI runtime behind tally::mutex (one engine per mutex).
//
// Contract. The engine carries the protocol core over MPI: one protocol::peer per
// rank (topology::flat), or the node's protocol::cohort in shared memory
// (topology::node). Every event goes to the core, and the engine carries out the
// actions it returns, through its transport. It decides nothing about the protocol. Its jobs
// live in separate files:
//   runtime/lifecycle.cpp        creation (agreement, channel, id), teardown
//   runtime/settings.hpp         validation, environment overrides
//   runtime/engine.cpp           lock, try_lock, unlock, payload, stats
//   runtime/progress.cpp         a progress step; poll, poll_nowait, the thread's step
//   runtime/fast_path.cpp        an idle holder's re-entry without mu_ (flat)
//   runtime/node_engine.cpp      the same events for topology::node (protocol::cohort
//                                in shared memory, runtime/node_level.hpp)
//   runtime/async.cpp            lock_async: acquisitions, MPI generalized requests
//   runtime/watchdog.cpp         the wait warning
//   runtime/channel.hpp          one communicator's messages, shared by its mutexes
//   runtime/transport.hpp        one mutex's messages: its id, datatype, sends
//   runtime/pacing.hpp           when unlock() polls
//   runtime/slot.hpp             one thread of a rank at a time
//   runtime/progress_thread.hpp  progress_mode::thread
//   runtime/registry.hpp         the process's live engines, MPI_Finalize hook
// All mutable state is guarded by mu_ (TALLY_GUARDED_BY: Clang checks it, see
// runtime/thread_safety.hpp) but for the fast path's atomics; the mutex's MPI calls
// happen only under mu_, so the engine needs MPI_THREAD_MULTIPLE only when several
// threads use it (thread progress, or application threads sharing the mutex).
#pragma once

#include <mpi.h>

#include <array>
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
#include "core/token_layout.hpp"
#include "runtime/acquisition.hpp"
#include "runtime/node_level.hpp"
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
  // `after_event` (node topology, right after this rank's own cohort event), the
  // node's part is the snapshot that event took under the spinlock.
  bool attention_locked(bool after_event = false) const noexcept TALLY_REQUIRES(mu_);
  // Completes a request (collective or otherwise) while this engine (mu_ held by
  // the caller when `own` is set) and every other engine keep making progress.
  void wait_progressing(MPI_Request& req, const char* what);
  // The same, progressing this engine too.
  void wait_progressing_locked(MPI_Request& req, const char* what) TALLY_REQUIRES(mu_);
  // Carries out the action of a protocol step (sends). mu_ held.
  void execute(const protocol::step& s, const char* event) TALLY_REQUIRES(mu_);

  // -- the acquisition, whichever the topology (mu_ held)
  // Starts one: true if this rank entered at once.
  bool start_locked(const char* call) TALLY_REQUIRES(mu_);
  // True iff this rank has entered (node topology: its grant arrived).
  bool entered_locked() TALLY_REQUIRES(mu_);
  // Gives up waiting: true if withdrawn, false if it had entered meanwhile.
  bool withdraw_locked(const char* call) TALLY_REQUIRES(mu_);
  // Enters only if that needs no message; never sends.
  bool try_enter_locked(const char* call) TALLY_REQUIRES(mu_);
  void leave_locked(const char* call) TALLY_REQUIRES(mu_);
  std::uint64_t acquisitions_locked() const TALLY_REQUIRES(mu_);
  tally::stats stats_locked() const TALLY_REQUIRES(mu_);
  // An exception interrupted an acquisition: withdraw it, or leave the critical
  // section if it had been entered. Never throws.
  void abandon_locked() noexcept TALLY_REQUIRES(mu_);
  std::span<std::byte> payload_locked() noexcept TALLY_REQUIRES(mu_);

  // -- topology::node (runtime/node_engine.cpp; mu_ held)
  // Runs one cohort event under the node's spinlock: grants and the token packed
  // there, sends after it. A non-ok status throws unless it is `allowed`.
  template <class Event>
  protocol::cohort_step node_event(Event&& e, const char* what, protocol::status allowed = protocol::status::ok)
      TALLY_REQUIRES(mu_);
  bool node_progress_locked(bool repost) TALLY_REQUIRES(mu_);
  bool node_attention_locked() const noexcept TALLY_REQUIRES(mu_);
  // The node's part of attention_locked(); the spinlock held.
  bool node_needs_me() const noexcept TALLY_REQUIRES(mu_);
  // The node's request names this rank: the token will come here. Spinlock held.
  bool node_named() const noexcept TALLY_REQUIRES(mu_);
  // Teardown's drain: every REQUEST for this node received, no node request left.
  void node_drain_locked(std::uint64_t total_broadcasts) TALLY_REQUIRES(mu_);
  // Tests for messages and outstanding sends once; hands what arrived to the peer.
  // Returns true if any message arrived. mu_ held. With repost false, the channel's
  // REQUEST receives that completed stay unposted until transport_.repost_requests().
  bool progress_locked(bool repost = true) TALLY_REQUIRES(mu_);
  // Keeps the channel told whether the token is idle here (flat topology), so that
  // a REQUEST for it gets a turn without this engine being polled. mu_ held; after
  // every event that can change it (the token's arrival or departure, an entry, an
  // exit).
  void listen_locked() noexcept TALLY_REQUIRES(mu_);
  // The progress thread's step: progress_locked() if mu_ is free and all is well.
  progress_thread::found progress_from_thread() noexcept;
  void require_live() const TALLY_REQUIRES(mu_);  // throws errc::state after free/finalize, or a kept fault
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
  void send_token(protocol::rank_t to) TALLY_REQUIRES(mu_);

  // -- immutable after construction
  int rank_ = 0;
  int size_ = 1;
  options opts_;                          // progress resolved, name filled in
  clock::duration wait_warning_{};        // zero: off

  // -- guarded by mu_
  mutable guarded_mutex mu_;
  transport transport_ TALLY_GUARDED_BY(mu_);
  protocol::peer peer_ TALLY_GUARDED_BY(mu_);
  rank_slot slot_ TALLY_GUARDED_BY(mu_);
  unlock_pacing pacing_ TALLY_GUARDED_BY(mu_);
  bool live_ TALLY_GUARDED_BY(mu_) = true;
  bool listening_ TALLY_GUARDED_BY(mu_) = false;     // the channel counts this mutex as a listener
  bool using_thread_ TALLY_GUARDED_BY(mu_) = false;  // registered with the channel's thread (use_thread)
  std::exception_ptr fault_ TALLY_GUARDED_BY(mu_);   // an MPI failure, here or on another rank (fault())
  // One offset sample of the timeline's clock (collective over comm).
  void sync_trace_clock(MPI_Comm comm);
  trace_log trace_;                 // the handoff timeline, off unless asked for
  bool all_traced_ = false;         // every rank traces: its clock is synced (immutable)
  std::uint64_t traced_local_ TALLY_GUARDED_BY(mu_) = 0;  // local entries when the last enter was traced
  std::vector<std::byte> payload_ TALLY_GUARDED_BY(mu_);  // the token's payload while held here
  protocol::token spare_ TALLY_GUARDED_BY(mu_);           // storage for unpacking, recycled from sent tokens
  std::array<std::int32_t, protocol::node_token::route> spare_route_ TALLY_GUARDED_BY(mu_){};  // a node token's trail
  // The outstanding acquisition (waiting_slot or pending).
  std::shared_ptr<acquisition> async_ TALLY_GUARDED_BY(mu_);

  // -- the fast path (written under mu_ but for the compare-and-swaps of lock and
  //    unlock; read without it)
  static constexpr std::uintptr_t fast_closed = 0, fast_open = 1;
  std::atomic<std::uintptr_t> fast_{fast_closed};  // closed, open, or the entered thread's token
  std::atomic<std::uint64_t> fast_entries_{0};     // entries made by the fast path (stats)
  std::atomic<std::uint64_t> fast_due_{0};         // in_calls: ticks() from which lock() goes slow
  bool fast_allowed_ = false;                      // immutable after creation: flat, untraced
  std::uint64_t last_arrival_ TALLY_GUARDED_BY(mu_) = 0;  // ticks() of the last poll that found a message

  // -- topology::node only (null otherwise)
  std::unique_ptr<node_level> node_;
  bool node_in_cs_ TALLY_GUARDED_BY(mu_) = false;      // this rank took its grant and has not left
  bool node_attention_ TALLY_GUARDED_BY(mu_) = false;  // node_needs_me() at this rank's last cohort event
  std::vector<std::int32_t> bcast_order_ TALLY_GUARDED_BY(mu_);  // the next broadcast's peers, in order
  tally::stats node_final_ TALLY_GUARDED_BY(mu_){};    // its counters, kept when the slot is let go of

  progress_thread progress_;
};

// Defined here: engine.cpp and node_engine.cpp instantiate it with their lambdas.
template <class Event>
protocol::cohort_step engine::node_event(Event&& e, const char* what, protocol::status allowed) {
  protocol::cohort& c = node_->cohort();
  int token_count = 0;  // units of the token staged below
  node_->lock();
  const protocol::cohort_step s = e(c);
  node_attention_ = node_needs_me();
  if (s.ok()) {
    if (s.act.grant >= 0) node_->grant(s.act.grant);
    if (s.act.broadcast) {  // the order is shared state: read it under the spinlock
      bcast_order_.clear();
      for (const std::int32_t j : c.broadcast_order())
        bcast_order_.push_back(static_cast<std::int32_t>(node_->peer_index(j)));
    }
    if (s.act.token_to.value() >= 0)
      token_count = transport_.wire().pack(c, s.act.token_to, node_->payload(), transport_.stage_token());
  }
  node_->unlock();
  if (!s.ok()) {
    if (s.st == allowed) return s;
    fail(protocol::to_errc(s.st), std::string(what) + ": " + protocol::describe(s.st));
  }
  if (s.act.token_to.value() >= 0) transport_.send_staged(s.act.token_to, token_count);
  if (s.act.broadcast) transport_.broadcast(s.act.seq, s.act.requester, s.act.copy, bcast_order_);
  return s;
}

}  // namespace tally::detail
