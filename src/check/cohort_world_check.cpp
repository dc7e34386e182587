// check/cohort_world_check.cpp — what cohort_world checks after every step: the
// invariants of the two-level lock (violation()), that no step undoes progress
// (regression_from()), that the counters add up (counter_mismatch()), and the token
// as the world sees it (token_ln(), carried()). The transitions are in
// check/cohort_world.cpp.
#include "check/cohort_world.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <sstream>

namespace tally::check {

namespace {

using report = detail::failure_text;

}  // namespace
const protocol::ln_t* cohort_world::token_ln() const {
  if (flight_) return flight_->ln.data();
  for (std::int32_t k = 0; k < nodes(); ++k)
    if (node(k).holds_token()) return node(k).state().ln;
  return nullptr;
}

std::vector<std::uint8_t> cohort_world::carried() const {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(nodes()), 1);
  const auto drop = [&](std::int32_t r) { out[static_cast<std::size_t>(node_of(rank_t(r)))] = 0; };
  if (flight_) {
    drop(flight_->to.value());
    for (rank_t r : flight_->queue) drop(r.value());
    return out;
  }
  const protocol::cohort_layout& l = shape_->layout;
  for (std::int32_t k = 0; k < nodes(); ++k) {
    const std::uint8_t* b = block(k);
    const auto* h = reinterpret_cast<const protocol::cohort_header*>(b + l.header);
    if (!h->has_token) continue;
    const auto* tq = reinterpret_cast<const std::int32_t*>(b + l.tq);
    for (std::int32_t q = 0; q < h->tq_len; ++q) drop(tq[q]);
    break;
  }
  return out;
}

std::optional<std::string> cohort_world::violation() const {
  const std::int32_t K = nodes();
  std::int32_t holders = 0, in_cs = 0, holder = -1;
  for (std::int32_t k = 0; k < K; ++k) {
    const protocol::cohort c = node(k);
    const protocol::cohort_header& h = *c.state().h;
    const std::int32_t R = shape_->sizes[static_cast<std::size_t>(k)];
    if (c.holds_token()) {
      ++holders;
      holder = k;
    }
    // C1 one rank in the CS, on the node that holds the token.
    const std::int32_t served = c.in_cs();
    if (served >= 0) {
      ++in_cs;
      if (served >= R) return report{}("node ", k, ": the CS is held by local rank ", served);
    }
    // C3 the gate and the tickets agree: the tickets out, [turn, next), are held by
    // one rank each (written to its line: every step of the world is atomic, as the
    // runtime's waiting for settled() makes it), and no other rank holds one.
    const protocol::gate g = c.gate_now();
    if (g.out() > static_cast<std::uint32_t>(R)) return report{}("node ", k, ": ", g.out(), " tickets out");
    if (g.token != (h.has_token != 0)) return report{}("node ", k, ": the gate's token bit disagrees");
    if (g.slow != (h.has_token && h.remote_waiting != 0))
      return report{}("node ", k, ": the gate's slow bit is ", g.slow, " between events");
    if (g.via_token && served < 0) return report{}("node ", k, ": via_token with nobody served");
    std::vector<int> seen(static_cast<std::size_t>(R), 0);
    for (std::int32_t i = 0; i < R; ++i) {
      const std::uint32_t t = c.ticket_of(i);
      if (t == protocol::gate::no_ticket) continue;
      if (g.ahead(t) >= g.out()) return report{}("node ", k, ": rank ", i, " holds ticket ", t, ", not out");
      if (seen[g.ahead(t)]++) return report{}("node ", k, ": ticket ", t, " held twice");
    }
    if (!c.settled()) return report{}("node ", k, ": a ticket out is held by nobody");
    if (h.has_token && h.requesting) return report{}("node ", k, " holds the token and requests it");
    {  // the broadcast order names every other node once (and so ends)
      std::vector<int> named(static_cast<std::size_t>(K), 0);
      std::int32_t count = 0;
      for (const std::int32_t j : c.broadcast_order()) {
        if (j < 0 || j >= K || j == k || named[static_cast<std::size_t>(j)]++)
          return report{}("node ", k, ": broadcast order names node ", j, " out of range, itself or twice");
        ++count;
      }
      if (count != K - 1) return report{}("node ", k, ": broadcast order names ", count, " of ", K - 1, " nodes");
    }
    if (h.has_token && served < 0) {  // C4 an idle holder has nothing to hand on
      if (c.queued_count() > 0) return report{}("idle holder node ", k, " has local waiters");
      if (c.remote_waiter_known())
        return report{}("idle holder node ", k, " keeps the token although another node waits");
    }
    if (!h.has_token && c.queued_count() > 0 && !h.requesting)  // C5
      return report{}("node ", k, " has local waiters but neither holds nor requests the token");
    if (h.has_token) {  // C9 the pass bound
      if (h.remote_waiting != protocol::cohort_header::unsure && (h.remote_waiting != 0) != c.remote_waiter_known())
        return report{}("node ", k, ": cached remote_waiting is stale");
      if (h.passes > shape_->bound) return report{}("node ", k, ": ", h.passes, " passes exceed B = ", shape_->bound);
    }
  }
  if (in_cs > 1) return report{}(in_cs, " ranks are in the critical section");  // C1
  if (holders + (flight_ ? 1 : 0) != 1)                                         // C2
    return report{}("token count is ", holders + (flight_ ? 1 : 0), ", expected 1");
  if (streak_ > shape_->bound)
    return report{}("the world counted ", streak_, " local passes in a row, B = ", shape_->bound);

  // C6 request numbers.
  const protocol::ln_t* ln = token_ln();
  const std::vector<std::uint8_t> carried_ln = carried();
  std::vector<const seq_t*> rn(static_cast<std::size_t>(K));
  for (std::int32_t i = 0; i < K; ++i) rn[static_cast<std::size_t>(i)] = node(i).state().rn;
  for (std::int32_t j = 0; j < K; ++j) {
    const protocol::cohort cj = node(j);
    const seq_t own = cj.state().rn[j];
    for (std::int32_t i = 0; i < K; ++i)
      if (rn[static_cast<std::size_t>(i)][j] > own)
        return report{}("RN_", i, "[", j, "] exceeds RN_", j, "[", j, "] = ", own.value());
    if (!carried_ln[static_cast<std::size_t>(j)]) {  // queued or the token's destination: 0, as on the wire
      if (ln[j] != 0) return report{}("LN[", j, "] = ", ln[j], " for a node the token does not carry it for");
      continue;
    }
    // Requesting: RN = LN + 1. Neither requesting nor holding: RN = LN. Holding: the
    // request it holds the token for (if any) is served at release.
    const bool served = protocol::low32(own) == ln[j];
    const bool ok = cj.requesting()    ? protocol::fresh(own, ln[j])
                    : cj.holds_token() ? (served || protocol::fresh(own, ln[j]))
                                       : served;
    if (!ok)
      return report{}("node ", j,
                      (cj.requesting()    ? " requests"
                       : cj.holds_token() ? " holds the token"
                                          : " is idle"),
                      " but RN_", j, "[", j, "] = ", own.value(), ", LN[", j, "] = ", ln[j]);
  }
  // C7 the token's queue; C8 the token in flight.
  const std::int32_t tq_len =
      flight_ ? static_cast<std::int32_t>(flight_->queue.size()) : node(holder).state().h->tq_len;
  std::vector<int> queued(static_cast<std::size_t>(K), 0);
  for (std::int32_t q = 0; q < tq_len; ++q) {
    const std::int32_t r = flight_ ? flight_->queue[static_cast<std::size_t>(q)].value() : node(holder).state().tq[q];
    if (r < 0 || r >= ranks()) return report{}("token queue holds rank ", r);
    const std::int32_t j = shape_->node_of[static_cast<std::size_t>(r)];
    if (queued[static_cast<std::size_t>(j)]++) return report{}("token queue holds node ", j, " twice");
    const protocol::cohort cj = node(j);
    if (!cj.requesting()) return report{}("queued node ", j, " is not requesting");
    if (cj.state().requester[j] != r)
      return report{}("queued rank ", r, " is not node ", j, "'s requester ", cj.state().requester[j]);
    if (j == holder || (flight_ && j == node_of(flight_->to)))
      return report{}("queued node ", j, " is where the token is or goes");
  }
  if (flight_) {
    const std::int32_t j = node_of(flight_->to);
    if (!node(j).requesting()) return report{}("token in flight to node ", j, ", which does not request");
    if (node(j).state().requester[j] != flight_->to.value())
      return report{}("token in flight to rank ", flight_->to.value(), ", not node ", j, "'s requester");
  }
  // C11 the trail: the token's move count is the largest, and only the node that
  // made the last move has a copy from it; each
  // route names one node per move since move 1 (-1 before it); a node's since[j]
  // is never after j's copy, nor a REQUEST's copy.
  const std::uint64_t token_hop = flight_ ? flight_->hop : holder >= 0 ? *node(holder).state().hop : 0;
  const std::int32_t last_sender = flight_ ? flight_->route[0] : holder >= 0 ? node(holder).state().route[0] : -1;
  for (std::int32_t k = 0; k < K; ++k) {
    const protocol::cohort ck = node(k);
    const protocol::cohort_view& v = ck.state();
    const bool may_equal = k == holder || token_hop == 0 || k == last_sender;
    if (*v.hop > token_hop || (*v.hop == token_hop && !may_equal))
      return report{}("node ", k, "'s copy is from move ", *v.hop, ", the token's is ", token_hop);
    for (std::size_t i = 0; i < protocol::node_token::route; ++i)
      if (i < *v.hop ? v.route[i] < 0 || v.route[i] >= K : v.route[i] != -1)
        return report{}("node ", k, "'s route[", i, "] is ", v.route[i], " at move ", *v.hop);
    for (std::int32_t j = 0; j < K; ++j)
      if (v.since[j] > *node(j).state().hop)
        return report{}("node ", k, " says node ", j, "'s copy is from move ", v.since[j], ", it is ",
                        *node(j).state().hop);
  }
  for (const node_request& m : pending_)
    if (m.copy_hop > *node(node_of(m.requester)).state().hop)
      return report{}("a REQUEST names a copy from move ", m.copy_hop, ", after its node's");
  // Pending REQUESTs were issued; C10 a requesting node's REQUEST reached every
  // other node or is pending to it.
  for (const node_request& m : pending_) {
    const std::int32_t j = node_of(m.requester);
    if (m.seq.value() == 0 || m.seq > node(j).state().rn[j])
      return report{}("pending REQUEST #", m.seq.value(), " of node ", j, " was never issued");
  }
  for (std::int32_t j = 0; j < K; ++j) {
    const protocol::cohort cj = node(j);
    if (!cj.requesting()) continue;
    const seq_t s = cj.state().rn[j];
    const rank_t who(cj.state().requester[j]);
    for (std::int32_t i = 0; i < K; ++i)
      if (i != j && rn[static_cast<std::size_t>(i)][j] != s &&
          !std::binary_search(pending_.begin(), pending_.end(), node_request{who, i, s, *cj.state().hop}))
        return report{}("node ", j, "'s REQUEST #", s.value(), " neither reached node ", i, " nor is pending");
  }
  return std::nullopt;
}

std::optional<std::string> cohort_world::regression_from(const cohort_world& before) const {
  for (std::int32_t i = 0; i < nodes(); ++i) {
    const seq_t* now = node(i).state().rn;
    const seq_t* was = before.node(i).state().rn;
    for (std::int32_t j = 0; j < nodes(); ++j)
      if (now[j] < was[j]) return report{}("RN_", i, "[", j, "] decreased");
  }
  const protocol::ln_t* a = before.token_ln();
  const protocol::ln_t* b = token_ln();
  const std::vector<std::uint8_t> was = before.carried(), is = carried();
  for (std::int32_t j = 0; j < nodes(); ++j) {
    const auto ju = static_cast<std::size_t>(j);
    if (was[ju] && is[ju] && b[j] < a[j]) return report{}("LN[", j, "] decreased");
  }
  return std::nullopt;
}

std::optional<std::string> cohort_world::counter_mismatch() const {
  protocol::counters sum{};
  for (std::int32_t k = 0; k < nodes(); ++k)
    for (std::int32_t i = 0; i < shape_->sizes[static_cast<std::size_t>(k)]; ++i) {
      const protocol::counters& c = node(k).counters_of(i);
      protocol::accumulate(sum, c);
    }
  const auto others = static_cast<std::uint64_t>(nodes() - 1);
  if (sum.requests_sent != others * sum.broadcasts)
    return report{}("REQUESTs sent ", sum.requests_sent, " != (K-1) x broadcasts ", sum.broadcasts);
  if (sum.requests_received + pending_.size() != sum.requests_sent)
    return report{}("REQUESTs received ", sum.requests_received, " + pending ", pending_.size(), " != sent ",
                    sum.requests_sent);
  if (sum.tokens_received + (flight_ ? 1 : 0) != sum.tokens_sent)
    return report{}("tokens received ", sum.tokens_received, " + in flight != sent ", sum.tokens_sent);
  if (sum.local_handoffs_sent != sum.local_handoffs_received)
    return report{}("local handoffs sent ", sum.local_handoffs_sent, " != received ", sum.local_handoffs_received);
  if (sum.requests_sent + sum.tokens_sent != messages_)
    return report{}("counters account for ", sum.requests_sent + sum.tokens_sent, " messages, the network carried ",
                    messages_);
  return std::nullopt;
}

}  // namespace tally::check
