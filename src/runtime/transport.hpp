// runtime/transport.hpp — tally's messages on its private communicator.
//
// Contract. A transport owns the duplicate communicator (MPI_ERRORS_RETURN set),
// the committed token datatype, the posted receives and every send it starts:
//   - REQUEST = one MPI_UINT64_T (the sequence number), tag 1, MPI_Isend to every
//     other rank; the sender's rank comes from the status.
//   - token   = one message of the token datatype (runtime/wire.hpp), tag 2.
//   - receives are posted ahead, all MPI_ANY_SOURCE: one for the token and
//     min(n-1, 16) for REQUESTs; more REQUESTs wait in MPI's unexpected queue.
// Every buffer of a pending nonblocking operation keeps its address until the
// operation completed: send slots live in deques (never moved) and a slot is reused
// only after all its requests completed. The transport decides nothing about the
// protocol, and is not thread-safe: the engine calls it under its mutex.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/protocol.hpp"
#include "runtime/handles.hpp"
#include "runtime/wire.hpp"

namespace tally::detail {

class transport {
 public:
  struct request_arrival {
    protocol::rank_t from;
    protocol::seq_t seq;
  };
  struct arrivals {
    std::span<const request_arrival> requests;  // in completion order
    bool token = false;                         // read it with read_token()
    bool any() const noexcept { return token || !requests.empty(); }
  };

  transport() = default;
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  // Takes the duplicate communicator, commits the token datatype for `size` ranks
  // and `payload_bytes`, and posts the receives. Throws tally::error(errc::mpi).
  void open(comm_handle comm, int rank, int size, std::size_t payload_bytes);
  MPI_Comm comm() const noexcept { return comm_.get(); }
  std::size_t token_bytes() const noexcept { return wire_.bytes(); }

  // Tests every posted receive once. The REQUEST receives that completed stay
  // unposted until repost_requests(); the token receive until the next broadcast()
  // (no token can come before this rank requests again). Valid until the next test().
  arrivals test();
  // Posts again every REQUEST receive that test() completed.
  void repost_requests();
  // The token that test() reported, into `t` (its storage reused) and `payload`.
  void read_token(protocol::token& t, std::span<std::byte> payload) const;

  // REQUEST(seq) to every other rank, starting with the next rank up so that
  // simultaneous broadcasts spread their load. Posts the token receive first.
  void broadcast(protocol::seq_t seq);
  void send_token(protocol::rank_t to, const protocol::token& t, std::span<const std::byte> payload);

  // Completes the sends that finished; with `wait`, blocks until all did.
  void reap_sends(bool wait);
  // True iff some send may be incomplete (false right after a reap found none).
  bool sends_active() const noexcept { return sends_active_; }
  bool sends_pending() const noexcept;
  // Send slots in use or idle; a reap is worth it when they pile up.
  std::size_t send_slots() const noexcept { return bcasts_.size() + token_sends_.size(); }

  // Cancels and completes every posted receive (teardown, or a failed creation).
  void cancel_receives() noexcept;
  // Frees the datatype and the communicator; nothing may be pending.
  void close();

 private:
  void post_request_recv(std::size_t k);
  void post_token_recv();

  int rank_ = 0;
  int size_ = 1;
  comm_handle comm_;
  wire_format wire_;
  // [0] the token receive, [1..] REQUEST receives into request_bufs_[k - 1].
  std::vector<MPI_Request> recv_reqs_;
  std::vector<std::uint64_t> request_bufs_;
  std::vector<std::byte> token_buf_;
  std::vector<int> done_idx_;
  std::vector<MPI_Status> done_status_;
  std::vector<request_arrival> arrived_;
  std::vector<std::size_t> unposted_;  // REQUEST receives to post again

  struct bcast_slot {  // one broadcast: n-1 sends of one sequence number
    std::uint64_t seq = 0;
    std::vector<MPI_Request> reqs;
  };
  struct token_slot {  // one token send
    std::vector<std::byte> buf;
    MPI_Request req = MPI_REQUEST_NULL;
  };
  std::deque<bcast_slot> bcasts_;
  std::deque<token_slot> token_sends_;
  bool sends_active_ = false;
};

}  // namespace tally::detail
