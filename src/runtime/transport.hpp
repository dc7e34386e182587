// runtime/transport.hpp — one mutex's messages, on its channel (runtime/channel.hpp).
//
// Contract. A transport holds the mutex's id on its channel, the committed token
// datatype, its token receive and every send it starts:
//   - REQUEST = MPI_UINT64_T words on the channel's requests(), tag = id, MPI_Isend
//     to every broadcast peer, shape().window at a time: broadcast() posts the first
//     window, pump() one more per call, so a token sent in between overtakes the
//     rest. Flat topology: one word (the sequence number), the requester is the MPI
//     source. Node topology: three words (the sequence number, the rank that should
//     receive the token, the move of the node's LN copy), sent to the other nodes'
//     leaders only. They arrive through the channel's shared receives.
//   - token = one message of the token datatype (runtime/wire.hpp) on the channel's
//     messages(), tag_token(id). Its receive is posted only while the token may come
//     here: flat, from a broadcast until the token arrived; node topology, while the
//     node's request names this rank (want_token()).
// Every buffer of a pending nonblocking operation keeps its address until the
// operation completed: send slots live in deques (never moved) and a slot is reused
// only after all its requests completed. The transport decides nothing about the
// protocol, and is not thread-safe: the engine calls it under its mutex.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/protocol.hpp"
#include "core/token_layout.hpp"
#include "runtime/channel.hpp"
#include "runtime/handles.hpp"
#include "runtime/trace.hpp"
#include "runtime/wire.hpp"

namespace tally::detail {

class transport {
 public:
  struct request_arrival {
    protocol::rank_t from;
    protocol::seq_t seq;
    std::uint64_t copy_hop = 0;  // node topology: the move of the asking node's LN copy
  };
  struct arrivals {
    std::span<const request_arrival> requests;  // in completion order
    bool token = false;                         // read it with read_token()
    bool any() const noexcept { return token || !requests.empty(); }
  };

  transport() = default;
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  // What one rank sends and receives.
  struct shape {
    int token_entries = 1;              // LN entries of the token: ranks (flat) or nodes
    std::vector<std::int32_t> node_of;  // node topology: each rank's node; flat: empty
    std::int32_t token_self = 0;        // this rank's LN index: its rank or its node
    std::size_t payload_bytes = 0;
    bool with_requester = false;                                // REQUEST carries the requester (node topology)
    std::vector<int> peers;                                     // where a broadcast goes, in sending order
    std::size_t window = protocol::broadcast_window;            // REQUESTs posted per step (>= 1)
    protocol::token_form form = protocol::token_form::shorter;  // node topology's token body
  };
  // Attaches `id` on `ch` (with `notify`: channel::attach) and commits the token
  // datatype. Throws tally::error(errc::mpi).
  void open(std::shared_ptr<channel> ch, std::uint32_t id, shape sh, std::function<void()> notify);
  channel& chan() const noexcept { return *channel_; }
  std::uint32_t id() const noexcept { return id_; }

  // Collects this mutex's REQUESTs from the channel and tests the token receive
  // once. With `repost` false, the shared REQUEST receives that completed stay
  // unposted until repost_requests(); the token receive stays unposted until the
  // next broadcast() or want_token() (no token can come before this rank requests
  // again). Throws errc::mpi if a FAULT came. Valid until the next test().
  arrivals test(bool repost = true);
  // Posts again every shared REQUEST receive that test() completed.
  void repost_requests();
  // The token that test() reported, into `t` (its storage reused) and `payload`;
  // LN as the wire carries it (protocol::ln_t).
  void read_token(protocol::token& t, std::span<std::byte> payload);
  // The node topology's (wire_format::unpack): LN patched or overwritten in `ln`, the
  // node's copy from move `copy` (straight into the node's state, cohort::ln_inbox).
  void read_token(std::uint64_t copy_hop, std::span<protocol::ln_t> ln, std::vector<protocol::rank_t>& queue,
                  std::uint64_t& hop, std::span<std::int32_t> route, std::span<std::byte> payload);

  // Node topology: the token receive is posted iff `named` (the node's request
  // names this rank), or it is being received. Flat topology: broadcast() posts it.
  void want_token(bool named);
  bool token_posted() const noexcept { return token_req_ != MPI_REQUEST_NULL; }

  // REQUEST(seq[, requester]) to every broadcast peer. Posts the token receive first
  // if it is not posted.
  // `order`: indices into shape().peers, each once, in sending order; empty: the
  // peers' own order.
  // The first window leaves at once, ahead of what earlier broadcasts have not
  // posted yet (stale news: a peer may see sequence numbers out of order, which
  // Suzuki–Kasami's RN = max(RN, seq) absorbs).
  void broadcast(protocol::seq_t seq, protocol::rank_t requester, std::uint64_t copy_hop = 0,
                 std::span<const std::int32_t> order = {});
  // Posts the next window of the newest broadcast not yet wholly posted, if any.
  // The engine calls it on every progress step, after the token's send.
  void pump();
  void send_token(protocol::rank_t to, const protocol::token& t, std::span<const std::byte> payload);
  // A token send in two halves: stage() returns a buffer of wire().bytes() to
  // fill (by wire().pack), send_staged() starts the send of the last staged buffer,
  // `count` units of wire().type() as pack returned.
  std::byte* stage_token();
  void send_staged(protocol::rank_t to, int count);
  wire_format& wire() noexcept { return wire_; }

  // Completes the sends that finished; with `wait`, blocks until all did.
  void reap_sends(bool wait);
  // True iff some send may be incomplete (false right after a reap found none).
  bool sends_active() const noexcept { return sends_active_; }
  bool sends_pending() const noexcept;
  // Send slots in use or idle; a reap is worth it when they pile up.
  std::size_t send_slots() const noexcept { return bcasts_.size() + token_sends_.size(); }

  // Cancels and completes the token receive (teardown, or a failed creation).
  void cancel_receives() noexcept;

  // Failures (docs/design.md, "Errors"). A rank whose MPI failed on this mutex tells
  // every other rank once, best effort: a FAULT message with its error text
  // (channel::notify_fault). test() throws errc::mpi naming the sender when one
  // arrives, and remote_fault() then stays true.
  void notify_fault(const std::string& what) noexcept;
  bool remote_fault() const noexcept { return remote_fault_; }
  // Teardown of a faulted mutex, without the protocol's drain: cancels the receive,
  // lets go of incomplete sends (MPI_Request_free), frees what MPI still accepts,
  // and retires the id (channel::detach).
  void abandon() noexcept;
  // Where REQUESTs sent and tokens sent and received are recorded (may be off).
  void set_trace(trace_log* t) noexcept { trace_ = t; }
  // Frees the datatype and gives the id back; nothing may be pending.
  void close();

 private:
  void post_token_recv();

  using words = std::array<std::uint64_t, 3>;  // a REQUEST: seq [, requester, copy_hop]

  shape shape_;
  int words_ = 1;  // per REQUEST
  std::shared_ptr<channel> channel_;
  std::uint32_t id_ = 0;
  bool attached_ = false;
  wire_format wire_;
  MPI_Request token_req_ = MPI_REQUEST_NULL;
  std::vector<std::byte> token_buf_;
  int token_count_ = 0;  // units of wire_.type() in the token test() reported
  std::vector<channel::raw_request> raw_;
  std::vector<request_arrival> arrived_;
  std::string fault_text_;

  struct bcast_slot {  // one broadcast: a send of the same words to every peer
    words msg{};
    std::vector<int> to;     // destination ranks, in sending order
    std::size_t posted = 0;  // to[0, posted) have been posted (reqs[k] for to[k])
    std::vector<MPI_Request> reqs;
    bool partial() const noexcept { return posted < to.size(); }
  };
  // Posts up to `count` more of b's sends.
  void post_window(bcast_slot& b, std::size_t count);
  std::vector<bcast_slot*> partial_;  // broadcasts not yet wholly posted, oldest first
  struct token_slot {                 // one token send
    std::vector<std::byte> buf;
    MPI_Request req = MPI_REQUEST_NULL;
    bool staged = false;  // filled by stage_token(), not yet sent
  };
  std::deque<bcast_slot> bcasts_;
  std::deque<token_slot> token_sends_;
  token_slot* staged_ = nullptr;
  bool sends_active_ = false;

  bool fault_sent_ = false;
  bool remote_fault_ = false;
  trace_log* trace_ = nullptr;
};

}  // namespace tally::detail
