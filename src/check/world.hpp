// check/world.hpp — n protocol peers and the network between them, as one value.
//
// The network holds the pending REQUESTs (unordered, exactly-once: any pending one
// may be delivered next) and at most one token in flight. Every step goes through
// the protocol core; the world only moves messages. The trace replayer, the model
// checker and the randomized tests step it; the invariant checks here are the ones
// docs/protocol.md lists (I1-I7). No MPI.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/protocol.hpp"

namespace tally::check {

namespace detail {
// A check's failure text from its parts: failure_text{}("node ", k, " ...").
struct failure_text {
  std::ostringstream os;
  template <class... A>
  std::optional<std::string> operator()(const A&... parts) {
    (os << ... << parts);
    return os.str();
  }
};
}  // namespace detail

using protocol::rank_t;
using protocol::seq_t;

struct request_msg {
  rank_t from;
  rank_t to;
  seq_t seq;
  friend auto operator<=>(const request_msg&, const request_msg&) = default;
};

struct in_flight {
  rank_t to;
  protocol::token token;
};

// Outcome of a step: taken, or refused with a reason (the world is then unchanged).
struct verdict {
  bool taken = true;
  std::string reason;
  explicit operator bool() const noexcept { return taken; }
  static verdict refuse(std::string why) { return {false, std::move(why)}; }
};

class world {
 public:
  // n ranks, token idle at `owner`. Throws protocol::bad_argument on bad n or owner.
  world(std::int32_t n, rank_t owner);

  // A world from arbitrary parts, to test the checks below on states no step
  // reaches. Only what keeps the checks in bounds is verified: throws
  // protocol::bad_argument unless peers[i] is rank i of peers.size(), every message
  // and the flight name ranks in range, and a token in flight has n LN entries.
  static world assemble(std::vector<protocol::peer> peers, std::vector<request_msg> pending,
                        std::optional<in_flight> flight = std::nullopt);

  // --- steps -------------------------------------------------------------------
  // Rank i calls lock(); a broadcast becomes n-1 pending REQUESTs.
  verdict request(rank_t i);
  // Rank i gives up waiting (protocol::peer::withdraw).
  verdict withdraw(rank_t i);
  // Deliver the pending REQUEST from j to i with sequence `seq`, or the oldest
  // (lowest sequence) pending one from j to i when seq is empty.
  verdict deliver(rank_t j, rank_t i, std::optional<seq_t> seq = std::nullopt);
  // Deliver the token in flight to its destination.
  verdict deliver_token();
  // Rank i leaves its critical section.
  verdict exit(rank_t i);

  // --- state -------------------------------------------------------------------
  std::int32_t size() const noexcept { return static_cast<std::int32_t>(peers_.size()); }
  const protocol::peer& peer(rank_t i) const { return peers_.at(i.index()); }
  const std::vector<protocol::peer>& peers() const noexcept { return peers_; }
  // Pending REQUESTs in ascending (from, to, seq) order.
  const std::vector<request_msg>& pending() const noexcept { return pending_; }
  std::size_t pending_count(rank_t from, rank_t to) const;
  const std::optional<in_flight>& flight() const noexcept { return flight_; }
  // The rank holding the token (idle or in CS), if it is not in flight.
  std::optional<rank_t> holder() const;
  // The token wherever it is: at the holder or in flight.
  const protocol::token& token() const;
  // Whether the token carries LN[j]: j is neither queued nor the token's destination
  // (core/token_layout.hpp). LN[j] reads 0 where it is not.
  bool carried(std::size_t j) const;
  // Messages put on the network so far (REQUESTs + tokens).
  std::uint64_t messages() const noexcept { return messages_; }

  // True iff some step other than a new request is enabled: a pending REQUEST, a
  // token in flight, or a rank in its critical section.
  bool can_progress() const noexcept;
  // True iff every rank is idle and the network is empty.
  bool quiescent() const noexcept;

  // --- checks ------------------------------------------------------------------
  // The first broken invariant of docs/protocol.md (I1-I7), described, or nullopt.
  std::optional<std::string> violation() const;
  // The first RN or LN entry that decreased from `before` to this state, or nullopt.
  std::optional<std::string> regression_from(const world& before) const;

  // Canonical encoding of the protocol state (counters excluded): equal encodings
  // mean equal states. For visited-set hashing in the model checker.
  void encode(std::vector<std::uint64_t>& out) const;

 private:
  // Puts the token a rank just sent on the network.
  void carry(protocol::peer& sender, const protocol::step& s);
  verdict refused(rank_t i, const char* what, protocol::status st) const;

  std::vector<protocol::peer> peers_;
  std::vector<request_msg> pending_;  // sorted
  std::optional<in_flight> flight_;
  std::uint64_t messages_ = 0;
};

std::string to_string(protocol::mode m);

}  // namespace tally::check
