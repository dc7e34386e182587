// sim/models/two_level.hpp — the two-level (topology-aware) Suzuki–Kasami lock in
// tally-sim.
//
// Ranks [kR, (k+1)R) form node k. Each node's state is a real tally::protocol::cohort
// over its own block of memory, the same transition function the MPI runtime runs
// in its shared-memory window; this model only carries the actions it returns:
//   - a grant to another rank of the node: no message, the waiter enters
//     `local_grant` later (the shared-memory store it spins on; calibrated from the
//     runtime's measured intra-node handoff, docs/simulator.md);
//   - the token to one rank: a message, encoded by the runtime's codec (a delta
//     where the receiver's LN copy is recent, else LN and queue over K nodes, 4K
//     bytes, plus the trail: core/token_layout.hpp) and decoded into the receiver's
//     copy; each end pays node_entry_time per 4-byte word;
//   - REQUEST(seq, requester, copy_hop), 24 bytes, to the leader (local rank 0) of each of the
//     other K-1 nodes: a multicast, in the cohort's broadcast order, as the runtime
//     sends it.
// Costs the runtime has and this model leaves out: the node spinlock's cache-line
// traffic (two short critical sections per entry), and the leader's delay in
// noticing a REQUEST while it computes (tally's progress thread answers it).
// The token starts idle on node 0.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cohort.hpp"
#include "core/token_codec.hpp"
#include "core/token_layout.hpp"
#include "sim/des.hpp"
#include "sim/run.hpp"

namespace tally::sim {

class two_level {
 public:
  static constexpr const char* name = "two-level";
  static constexpr msg_kind kinds[] = {msg_kind::request, msg_kind::token};
  static constexpr bool node_token = true;  // its CPU: node_entry_time, node_scan_time

  // Throws protocol::bad_argument unless R divides n and B >= 1.
  two_level(std::int32_t n, const std::vector<std::int32_t>& active, const run_config& cfg);

  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t, std::int32_t) const noexcept {}
  std::int64_t token_entries() const noexcept { return k_; }
  std::int64_t token_words() const noexcept {
    return flight_to_ >= 0 ? static_cast<std::int64_t>(wire_.size() / protocol::token_layout::unit) : 0;
  }
  // Tokens sent as a delta so far, and their bytes.
  std::uint64_t delta_tokens() const noexcept { return deltas_; }
  std::uint64_t delta_bytes() const noexcept { return delta_bytes_; }
  // Entries that cost no message: re-entries of an idle holder and local grants.
  std::uint64_t local_entries(const raw_results&) const noexcept;

  template <class E>
  void lock(E& e, std::int32_t i) {
    const std::int32_t k = i / r_, l = i % r_;
    const protocol::cohort_step s = nodes_[static_cast<std::size_t>(k)].lock(l);
    check(s, i, "lock");
    carry(e, k, l, s, true, true);
  }

  template <class E>
  void unlock(E& e, std::int32_t i) {
    const std::int32_t k = i / r_, l = i % r_;
    const protocol::cohort_step s = nodes_[static_cast<std::size_t>(k)].unlock(l);
    check(s, i, "unlock");
    carry(e, k, l, s, true);
  }

  template <class E>
  void deliver(E& e, const message& m) {
    const std::int32_t k = m.to / r_, l = m.to % r_;
    protocol::cohort& c = nodes_[static_cast<std::size_t>(k)];
    if (m.kind == msg_kind::grant) {  // a local grant became visible to its waiter
      if (c.in_cs() != l) fail("rank " + std::to_string(m.to) + " woken but not granted");
      c.note_entry(l);
      e.enter(m.to);
      return;
    }
    if (m.kind == msg_kind::request) {
      const auto requester = static_cast<std::int32_t>(m.val & requester_mask);
      const protocol::seq_t seq(m.val >> requester_bits);
      const request_news& news = news_[static_cast<std::size_t>(requester / r_)];
      const std::uint64_t copy_hop = news.seq == seq ? news.copy_hop : 0;  // 0: always safe
      const protocol::cohort_step s = c.on_request(l, protocol::rank_t(requester), seq, copy_hop);
      check(s, m.to, "REQUEST");
      carry(e, k, l, s, false);  // an idle holder's handoff: no scan (cohort::on_request)
      return;
    }
    if (flight_to_ != m.to) fail("token delivered to rank " + std::to_string(m.to) + " but it is not in flight there");
    const std::span<protocol::ln_t> ln = c.ln_inbox();
    std::uint64_t hop = 0;
    if (!protocol::decode_node_token(wire_, frame(), static_cast<std::size_t>(k), *c.state().hop, ln, queue_, hop,
                                     route_, {}, marks_))
      fail("the token to rank " + std::to_string(m.to) + " does not decode");
    flight_to_ = -1;  // taken in: wire_ is free for the next token
    const protocol::cohort_step s = c.on_token(l, ln, queue_, {hop, route_});
    check(s, m.to, "token");
    carry(e, k, l, s, true);
  }

  // Token conservation, idle nodes and message accounting at the end of a run.
  template <class E>
  void finish(const E& e) const {
    finish_checks(e.sent(msg_kind::request), e.sent(msg_kind::token), e.entries());
  }

 private:
  static constexpr int requester_bits = 24;  // n <= 2^24 (tally-sim's limit)
  static constexpr std::uint64_t requester_mask = (std::uint64_t{1} << requester_bits) - 1;

  // A node's latest REQUEST: the move of its LN copy, which the message value has no
  // room for (an older REQUEST of the node, arriving late, says 0).
  struct request_news {
    protocol::seq_t seq{};
    std::uint64_t copy_hop = 0;
  };
  protocol::token_frame frame() const noexcept { return {static_cast<std::size_t>(k_), node_of_}; }

  template <class E>
  // `scanned`: a token s sends comes from a release, after its scan of K entries.
  // `at_once`: s is lock's, whose grant the core counted.
  void carry(E& e, std::int32_t k, std::int32_t by, const protocol::cohort_step& s, bool scanned,
             bool at_once = false) {
    const protocol::cohort& c = nodes_[static_cast<std::size_t>(k)];
    const std::int32_t self = k * r_ + by;
    if (s.act.grant >= 0) {
      const std::int32_t g = k * r_ + s.act.grant;
      if (g == self) {
        if (!at_once) nodes_[static_cast<std::size_t>(k)].note_entry(s.act.grant);  // the token came to it
        e.enter(g);
      } else
        e.wake(self, g, msg_kind::grant, local_grant_);
    }
    if (s.act.token_to.value() >= 0) {
      if (flight_to_ >= 0) fail("node " + std::to_string(k) + " sends a second token");
      wire_.resize(protocol::node_token::bytes(static_cast<std::size_t>(k_)));
      const std::size_t len = c.encode_token(s.act.token_to, {}, wire_, form_);
      wire_.resize(len);
      if (protocol::node_token_form(wire_) != protocol::node_token::full) {
        ++deltas_;
        delta_bytes_ += len;
      }
      flight_to_ = s.act.token_to.value();
      e.send_ahead(self, flight_to_, msg_kind::token, len, scanned);
    }
    if (s.act.broadcast) {
      std::vector<std::int32_t> to = e.borrow_list();
      // The other leaders, in the cohort's order (as the runtime sends them).
      for (const std::int32_t j : c.broadcast_order()) to.push_back(j * r_);
      news_[static_cast<std::size_t>(k)] = {s.act.seq, s.act.copy_hop};
      const auto val = s.act.seq.value() << requester_bits | static_cast<std::uint64_t>(s.act.requester.value());
      e.multicast(self, msg_kind::request, protocol::node_request_bytes, std::move(to), val);
    }
  }
  void check(const protocol::cohort_step& s, std::int32_t rank, const char* what) const;
  [[noreturn]] static void fail(const std::string& why);
  void finish_checks(std::uint64_t requests, std::uint64_t tokens, std::uint64_t entries) const;

  std::int32_t r_, k_;
  ps_t local_grant_;
  std::vector<std::int32_t> node_of_;               // rank -> node
  std::vector<std::int32_t> ranks_;                 // 0..n-1: node k's members are [kR, (k+1)R)
  std::vector<std::vector<std::uint64_t>> blocks_;  // each node's state
  std::vector<protocol::cohort> nodes_;
  std::int32_t flight_to_ = -1;          // the rank the token is in flight to; -1: none
  std::vector<std::byte> wire_;          // its bytes while in flight
  std::vector<request_news> news_;       // per node
  std::vector<protocol::rank_t> queue_;  // the token being taken in
  std::array<std::int32_t, protocol::node_token::route> route_{};
  std::vector<std::uint8_t> marks_;  // the codec's scratch, K zero bytes
  std::uint64_t deltas_ = 0, delta_bytes_ = 0;
  protocol::token_form form_;
};

}  // namespace tally::sim
