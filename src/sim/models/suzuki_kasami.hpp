// sim/models/suzuki_kasami.hpp — Suzuki–Kasami in tally-sim.
//
// Every requesting rank is a real tally::protocol::peer, the same object the MPI
// runtime drives; this model only carries the actions it returns (a broadcast of
// REQUEST(i, seq), or the token to one rank) over the simulated network. No protocol
// decision is made here. The token starts idle at rank 0.
//
// Ranks that never request (workload::active excludes them) are not instantiated:
// such a rank never holds the token (it is only ever sent to a requesting rank), so
// it never sends, and the REQUESTs it receives cannot influence any other rank. They
// are still sent, counted and timed at the sender; they are dropped at the receiver.
// This keeps memory at 9 bytes x active x n instead of 9 n^2 (RN row + scratch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/des.hpp"
#include "core/protocol.hpp"
#include "core/token_layout.hpp"

namespace tally::sim {

class suzuki_kasami {
 public:
  static constexpr const char* name = "suzuki-kasami";
  static constexpr msg_kind kinds[] = {msg_kind::request, msg_kind::token};

  suzuki_kasami(std::int32_t n, const std::vector<std::int32_t>& active);

  bool sink(std::int32_t j) const noexcept { return slot_[static_cast<std::size_t>(j)] < 0; }
  void prefetch(std::int32_t to, std::int32_t from) const noexcept {
    const auto k = static_cast<std::size_t>(to);
    const auto* p = reinterpret_cast<const char*>(peer_of_[k]);
    for (std::size_t off = 0; off < sizeof(protocol::peer); off += 64) sim::prefetch(p + off);
    sim::prefetch(rn_of_[k] + from);
  }

  template <class E>
  void lock(E& e, std::int32_t i) {
    protocol::peer& nd = at(i);
    const protocol::step s = nd.lock();
    check(s, nd, "lock");
    if (s.act.what == protocol::action::kind::broadcast_request)
      e.broadcast(i, msg_kind::request, request_bytes, s.act.seq.value());
    else if (nd.mode() == protocol::mode::in_cs)
      e.enter(i);  // an idle holder re-enters: no message, no new sequence
    else
      fail("lock at rank " + std::to_string(i) + " neither entered nor requested");
  }

  template <class E>
  void unlock(E& e, std::int32_t i) {
    protocol::peer& nd = at(i);
    const protocol::step s = nd.unlock();
    check(s, nd, "unlock");
    carry(e, nd, s, true);
  }

  template <class E>
  void deliver(E& e, const message& m) {
    protocol::peer& nd = at(m.to);
    if (m.kind == msg_kind::request) {
      const protocol::step s = nd.on_request(protocol::rank_t(m.from), protocol::seq_t(m.val));
      check(s, nd, "REQUEST");
      carry(e, nd, s, false);  // an idle holder's handoff: no scan
      return;
    }
    if (!flight_ || holder_ != m.to)
      fail("token delivered to rank " + std::to_string(m.to) + " but it is not in flight there");
    const protocol::step s = nd.on_token(std::move(*flight_));
    flight_.reset();
    check(s, nd, "token");
    if (nd.mode() != protocol::mode::in_cs)
      fail("rank " + std::to_string(m.to) + " received the token but did not enter");
    e.enter(m.to);
    carry(e, nd, s, false);
  }

  // Token conservation, idle ranks and message accounting at the end of a run.
  template <class E>
  void finish(const E& e) const {
    finish_checks(e.sent(msg_kind::request), e.sent(msg_kind::token), e.entries());
  }

  const std::vector<protocol::peer>& peers() const noexcept { return peers_; }
  std::int64_t token_entries() const noexcept { return n_; }
  // Entries that cost no message (the holder re-entered).
  std::uint64_t local_entries(const raw_results&) const noexcept;

 private:
  protocol::peer& at(std::int32_t i) {
    const std::int32_t s = slot_[static_cast<std::size_t>(i)];
    if (s < 0) fail("rank " + std::to_string(i) + " is not an active rank");
    return peers_[static_cast<std::size_t>(s)];
  }
  template <class E>
  // `released`: s came from a release (unlock), whose scan of n entries the token waits for.
  void carry(E& e, protocol::peer& nd, const protocol::step& s, bool released) {
    if (s.act.what != protocol::action::kind::send_token) return;
    const std::int32_t from = nd.self().value(), to = s.act.to.value();
    if (flight_ || holder_ != from) fail("rank " + std::to_string(from) + " sends a token it does not own");
    flight_ = nd.take_token();
    if (!flight_ || nd.holds_token()) fail("rank " + std::to_string(from) + " kept a sent token");
    if (to < 0 || to >= n_ || sink(to)) fail("token sent to rank " + std::to_string(to) + ", which never requested");
    holder_ = to;
    e.send_ahead(from, to, msg_kind::token, token_bytes(n_), released);
  }
  static void check(const protocol::step& s, const protocol::peer& nd, const char* what);
  [[noreturn]] static void fail(const std::string& why);
  void finish_checks(std::uint64_t requests, std::uint64_t tokens, std::uint64_t entries) const;

  std::int32_t n_;
  std::vector<protocol::peer> peers_;
  std::vector<std::int32_t> slot_;  // rank -> index in peers_, or -1
  // Per rank, for prefetch hints only: its rank and RN row (rank 0's for a sink).
  std::vector<const protocol::peer*> peer_of_;
  std::vector<const protocol::seq_t*> rn_of_;
  std::optional<protocol::token> flight_;
  std::int32_t holder_ = 0;  // the token's owner, or where it is in flight to
};

}  // namespace tally::sim
