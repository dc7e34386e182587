// check/cohort_world.hpp — the two-level lock's nodes and the network between them.
//
// K nodes of protocol::cohort, each over its own block of state (as the runtime
// keeps it in shared memory), global ranks numbered node by node. The network holds
// the pending REQUESTs (unordered; each goes to a node and is received there by its
// local rank 0) and at most one token in flight (to a rank). Every step goes through
// the core; the world only moves messages. The invariant checks are those of
// docs/design.md ("Two-level lock", C1-C11). Each token sent is encoded by the codec
// as the runtime sends it (every third move the full body, else a delta wherever
// one is exact: token_form::delta) and
// decoded against the receiver's LN copy, which nothing changes while the token is
// in flight to it; a send whose decoded LN, queue or trail differs from the
// sender's is refused. No MPI.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check/world.hpp"
#include "core/cohort.hpp"

namespace tally::check {

struct node_request {
  rank_t requester;  // global rank the token should reach
  std::int32_t to;   // destination node
  seq_t seq;
  std::uint64_t copy_hop = 0;  // the move of the asking node's LN copy
  friend auto operator<=>(const node_request&, const node_request&) = default;
};

class cohort_world {
 public:
  // sizes[k]: ranks on node k (each >= 1); the token idle on node `owner_node`;
  // pass bound B. Throws protocol::bad_argument on a bad shape.
  cohort_world(std::vector<std::int32_t> sizes, std::int32_t owner_node, std::uint32_t pass_bound);
  cohort_world(const cohort_world&) = default;
  cohort_world& operator=(const cohort_world&) = default;
  cohort_world(cohort_world&&) noexcept = default;  // a model check's level pools move states
  cohort_world& operator=(cohort_world&&) noexcept = default;

  // --- steps (global ranks) ------------------------------------------------------
  verdict request(rank_t r);   // lock()
  verdict withdraw(rank_t r);  // a waiting rank gives up
  verdict exit(rank_t r);      // unlock(): without the node's lock where the gate allows
  // Deliver the pending REQUEST of `requester` to node `to` with sequence `seq`, or
  // the oldest such one when seq is empty.
  verdict deliver(rank_t requester, std::int32_t to, std::optional<seq_t> seq = std::nullopt);
  verdict deliver_token();

  // --- state ---------------------------------------------------------------------
  std::int32_t nodes() const noexcept { return static_cast<std::int32_t>(shape_->sizes.size()); }
  std::int32_t ranks() const noexcept { return static_cast<std::int32_t>(shape_->node_of.size()); }
  std::uint32_t pass_bound() const noexcept { return shape_->bound; }
  std::int32_t node_of(rank_t r) const { return shape_->node_of.at(r.index()); }
  std::int32_t local_of(rank_t r) const { return r.value() - shape_->first.at(static_cast<std::size_t>(node_of(r))); }
  rank_t global(std::int32_t node, std::int32_t local) const {
    return rank_t(shape_->first.at(static_cast<std::size_t>(node)) + local);
  }
  // A view of node k (valid until this world changes or moves).
  protocol::cohort node(std::int32_t k) const;
  enum class phase : std::uint8_t {
    idle,
    waiting,
    in_cs
  };
  phase phase_of(rank_t r) const;
  const std::vector<node_request>& pending() const noexcept { return pending_; }
  bool token_in_flight() const noexcept { return flight_.has_value(); }
  rank_t flight_to() const { return flight_.value().to; }
  // The token in flight: its LN and queue (asking ranks). Throws if none is.
  std::vector<std::uint64_t> flight_ln() const {
    std::vector<std::uint64_t> out;
    for (protocol::ln_t s : flight_.value().ln) out.push_back(s);
    return out;
  }
  std::vector<std::int32_t> flight_queue() const {
    std::vector<std::int32_t> out;
    for (rank_t r : flight_.value().queue) out.push_back(r.value());
    return out;
  }
  std::uint64_t messages() const noexcept { return messages_; }
  // Local grants in a row at the holding node while another node was known to wait,
  // counted by the world (not read from the core).
  std::uint32_t streak() const noexcept { return streak_; }

  // True iff a step other than request/withdraw is enabled.
  bool can_progress() const noexcept;
  // True iff no rank waits or is in the CS and the network is empty.
  bool quiescent() const noexcept;

  // --- checks --------------------------------------------------------------------
  std::optional<std::string> violation() const;
  // The first RN or LN entry that decreased from `before`, or nullopt.
  std::optional<std::string> regression_from(const cohort_world& before) const;
  // Per-rank counters against the messages on the network, or nullopt.
  std::optional<std::string> counter_mismatch() const;
  // Canonical encoding of the protocol state (counters excluded). `trail`: with the
  // token's trail and the nodes' LN copies, which decide the token's encoding only.
  void encode(std::vector<std::uint64_t>& out, bool trail = true) const;

 private:
  struct in_flight {
    rank_t to;
    std::vector<protocol::ln_t> ln;  // the sender's (as the receiver decoded it)
    std::vector<rank_t> queue;
    std::uint64_t hop = 0;  // the trail
    std::array<std::int32_t, protocol::node_token::route> route{};
    std::int32_t form = 0;  // the body sent (protocol::node_token_form)
  };
  std::uint8_t* block(std::int32_t k) const {
    return reinterpret_cast<std::uint8_t*>(mem_.data()) + shape_->stride * static_cast<std::size_t>(k);
  }
  // `noted`: a grant in s was counted by the event (lock's at once), else the world
  // counts it for its rank (cohort::note_entry).
  verdict carry(std::int32_t k, const protocol::cohort_step& s, const char* what, rank_t at, bool noted);
  // Encodes the token node `from` (view c) sends and decodes it as its receiver
  // would; the first difference from what f carries, or nullopt. Sets f.form.
  std::optional<std::string> wire_check(std::int32_t from, in_flight& f, const protocol::cohort& c) const;
  // The token's LN wherever the token is (the checks' values stay far below 2^32).
  const protocol::ln_t* token_ln() const;
  // Per node j, 1 where the token carries LN[j]: j is neither queued nor the token's
  // destination (core/token_layout.hpp). LN[j] reads 0 where it is not.
  std::vector<std::uint8_t> carried() const;

  // What construction fixes, shared by copies (a model check holds millions).
  struct shape {
    std::vector<std::int32_t> sizes, first, node_of, ranks;  // ranks: 0..n-1
    std::uint32_t bound = 1;
    protocol::cohort_layout layout{};
    std::size_t stride = 0;  // bytes per node block, a multiple of 8
  };
  std::shared_ptr<const shape> shape_;
  mutable std::vector<std::uint64_t> mem_;  // K blocks; mutable: views are non-const
  std::vector<node_request> pending_;       // sorted
  std::optional<in_flight> flight_;
  std::uint64_t messages_ = 0;
  std::uint32_t streak_ = 0;
};

inline protocol::cohort cohort_world::node(std::int32_t k) const {
  // Every block is laid out for the widest node; node k uses its first sizes[k]
  // local entries. The constructor checked every node's shape once (trusted from
  // then on).
  const shape& sh = *shape_;
  const auto ku = static_cast<std::size_t>(k);
  return protocol::cohort({nodes(), k, sh.sizes[ku], sh.bound}, protocol::cohort_view::at(block(k), sh.layout),
                          sh.node_of,
                          std::span<const std::int32_t>(sh.ranks).subspan(static_cast<std::size_t>(sh.first[ku]),
                                                                          static_cast<std::size_t>(sh.sizes[ku])),
                          protocol::cohort::trusted{});
}

}  // namespace tally::check
