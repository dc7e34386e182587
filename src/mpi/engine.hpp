// mpi/engine.hpp — the MPI runtime behind tally::mutex and the C API.
//
// One engine per mutex. It owns a private duplicate of the user's communicator
// (MPI_ERRORS_RETURN), the committed token datatype, the pre-posted receives and
// every send it starts, and drives one protocol::node with them. All state is
// guarded by mu_; MPI calls on the private communicator happen only under mu_, so
// the engine needs MPI_THREAD_MULTIPLE only when several threads use it (thread
// progress mode, or application threads sharing the mutex).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "mpi/handles.hpp"
#include "mpi/wire.hpp"
#include "tally/mutex.hpp"
#include "tally/protocol.hpp"

namespace tally::detail {

class engine {
 public:
  using clock = std::chrono::steady_clock;

  // Collective over comm; see tally::mutex::mutex for the errors. A caller_error
  // (a bad argument found by the caller) fails the creation on every rank alike.
  engine(MPI_Comm comm, const options& opts, std::optional<error> caller_error = std::nullopt);
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
  struct stats stats() const;
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

 private:
  bool acquire(std::optional<clock::time_point> deadline);
  // Completes a request (collective or otherwise) while this engine (mu_ held by
  // the caller when `own` is set) and every other engine keep making progress.
  void wait_progressing(MPI_Request& req, const char* what, bool own);
  // Carries out the action of a protocol step (sends). mu_ held.
  void execute(const protocol::step& s, const char* event);
  // Tests posted receives and outstanding sends once; handles what completed.
  // Returns true if any message arrived. mu_ held. With repost false, the REQUEST
  // receives that completed are left in unposted_ for the caller to post again.
  bool progress_locked(bool repost = true);
  void post_request_recv(std::size_t k);
  void post_token_recv();
  void broadcast(protocol::seq_t seq);
  void send_token(protocol::rank_t to);
  // Completes sends whose requests finished; with `wait`, blocks until all did.
  void reap_sends(bool wait);
  bool sends_pending() const noexcept;
  void require_live() const;  // throws errc::state after free/finalize
  void rethrow_fault() const;
  void progress_thread_main();
  void stop_progress_thread() noexcept;
  void cancel_receives() noexcept;

  // -- immutable after construction
  int rank_ = 0;
  int size_ = 1;
  options opts_;
  comm_handle comm_;
  wire_format wire_;

  // -- guarded by mu_
  mutable std::mutex mu_;
  std::condition_variable slot_cv_;  // signalled when the rank's slot frees up
  protocol::node node_;
  bool slot_taken_ = false;          // some thread of this rank is locking or in the CS
  std::thread::id owner_{};          // thread in the CS, if any
  bool live_ = true;
  std::exception_ptr fault_;         // failure raised on the progress thread
  std::vector<std::byte> payload_;   // the token's payload while held here

  // Pre-posted receives: [0] token, [1..] REQUESTs (any source).
  std::vector<MPI_Request> recv_reqs_;
  std::vector<std::uint64_t> request_bufs_;
  std::vector<std::size_t> unposted_;  // REQUEST receives to post again (see unlock)
  std::vector<std::byte> token_buf_;
  std::vector<int> done_idx_;
  std::vector<MPI_Status> done_status_;

  struct bcast_slot {  // one REQUEST broadcast: n-1 sends of one sequence number
    std::uint64_t seq = 0;
    std::vector<MPI_Request> reqs;
  };
  struct token_slot {  // one token send
    std::vector<std::byte> buf;
    MPI_Request req = MPI_REQUEST_NULL;
  };
  std::vector<bcast_slot> bcasts_;
  std::vector<token_slot> token_sends_;
  std::uint64_t last_poll_ = 0;  // ticks() at the end of unlock()'s last poll
  std::uint64_t poll_cost_ = 0;  // what that poll takes (estimate, see unlock)
  std::uint32_t quiet_unlocks_ = 0;  // unlock() polls in a row that found nothing
  bool sends_active_ = false;  // some send may be incomplete (false: all reaped)
  protocol::token spare_;      // storage for unpacking, recycled from sent tokens

  // -- progress thread
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

}  // namespace tally::detail
