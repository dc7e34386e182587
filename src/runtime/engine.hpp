// runtime/engine.hpp — the MPI runtime behind tally::mutex (one engine per mutex).
//
// Contract. The engine carries the protocol core (protocol::peer) over MPI: every
// event goes to the peer, and the engine carries out the one action the peer
// returns, through its transport. It decides nothing about the protocol. Its jobs
// live in separate files:
//   runtime/lifecycle.cpp        creation (validation and agreement), teardown
//   runtime/engine.cpp           lock, try_lock, unlock, poll, payload, stats
//   runtime/async.cpp            lock_async: acquisitions, MPI generalized requests
//   runtime/watchdog.cpp         the wait warning
//   runtime/transport.hpp        communicator, datatype, posted receives, sends
//   runtime/pacing.hpp           when unlock() polls
//   runtime/slot.hpp             one thread of a rank at a time
//   runtime/progress_thread.hpp  progress_mode::thread
//   runtime/registry.hpp         the process's live engines, MPI_Finalize hook
// All state is guarded by mu_; MPI calls on the private communicator happen only
// under mu_, so the engine needs MPI_THREAD_MULTIPLE only when several threads use
// it (thread progress, or application threads sharing the mutex).
#pragma once

#include <mpi.h>

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
#include "runtime/pacing.hpp"
#include "runtime/progress_thread.hpp"
#include "runtime/slot.hpp"
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

  void lock() { (void)acquire(std::nullopt); }
  bool lock_until(clock::time_point deadline) { return acquire(deadline); }
  bool try_lock();
  void unlock();
  void poll();
  // One progress step if the engine is idle and in in_calls mode; never blocks or
  // throws (a failure is kept and rethrown by the engine's next call).
  void poll_nowait() noexcept;
  // The calling thread's current critical-section entry number (the acquisitions
  // count at entry); throws errc::not_owner unless it holds the critical section.
  std::uint64_t payload_entry() const;
  // The payload, if the calling thread is still in critical-section entry `entry`;
  // else throws errc::not_owner.
  std::span<std::byte> payload(std::uint64_t entry);
  std::size_t payload_size() const noexcept { return payload_.size(); }
  // Collective teardown (see tally::mutex::free). `at_finalize` only changes the
  // wording of diagnostics.
  void free(bool at_finalize = false);
  tally::stats stats() const;
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  progress_mode progress() const noexcept { return opts_.progress; }
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
  // is acquired) or the deadline passes (then false); mu_ held by lk, released every
  // few polls so that other threads and mutexes get a turn. Warns once when the wait
  // outlasts the wait warning.
  bool wait_locked(std::unique_lock<std::mutex>& lk, std::optional<clock::time_point> deadline,
                   const char* call, const acquisition* a);
  // Prints the wait warning (runtime/watchdog.cpp).
  void warn_wait(const char* call, clock::duration waited) const noexcept;
  // Releases the rank's slot; an acquisition waiting for it starts now. mu_ held.
  void release_slot_locked();
  // Starts the outstanding acquisition (the slot is free). mu_ held.
  void async_start_locked();
  // The outstanding acquisition entered: it owns the critical section now. mu_ held.
  void async_acquired_locked();
  // Completes the generalized request of `a`, if any and not yet done. mu_ held.
  void complete_greq_locked(acquisition& a) noexcept;
  // True if only a progress thread could answer for this rank now. mu_ held.
  bool attention_locked() const noexcept;
  // Completes a request (collective or otherwise) while this engine (mu_ held by
  // the caller when `own` is set) and every other engine keep making progress.
  void wait_progressing(MPI_Request& req, const char* what, bool own);
  // Carries out the action of a protocol step (sends). mu_ held.
  void execute(const protocol::step& s, const char* event);
  // Tests posted receives and outstanding sends once; hands what arrived to the
  // peer. Returns true if any message arrived. mu_ held. With repost false, the
  // REQUEST receives that completed stay unposted until transport_.repost_requests().
  bool progress_locked(bool repost = true);
  // The progress thread's step: progress_locked() if mu_ is free and all is well.
  progress_thread::found progress_from_thread() noexcept;
  void require_live() const;  // throws errc::state after free/finalize, or a kept fault
  void send_token(protocol::rank_t to);

  // -- immutable after construction
  int rank_ = 0;
  int size_ = 1;
  options opts_;                          // progress resolved, name filled in
  clock::duration wait_warning_{};        // zero: off

  // -- guarded by mu_
  mutable std::mutex mu_;
  transport transport_;
  protocol::peer peer_;
  rank_slot slot_;
  unlock_pacing pacing_;
  bool live_ = true;
  std::exception_ptr fault_;        // failure raised where nobody could be told
  std::vector<std::byte> payload_;  // the token's payload while held here
  protocol::token spare_;           // storage for unpacking, recycled from sent tokens
  std::shared_ptr<acquisition> async_;  // the outstanding acquisition (waiting_slot or pending)
  bool async_cancelled_at_free_ = false;

  progress_thread progress_;
};

}  // namespace tally::detail
