#include "check/cohort_world.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <sstream>

namespace tally::check {

namespace {

using report = detail::failure_text;

verdict refused(const char* what, rank_t at, protocol::status st) {
  return verdict::refuse(std::string(what) + " at rank " + std::to_string(at.value()) + ": " +
                         protocol::describe(st));
}

}  // namespace

cohort_world::cohort_world(std::vector<std::int32_t> sizes, std::int32_t owner_node,
                           std::uint32_t pass_bound) {
  auto sh = std::make_shared<shape>();
  shape_ = sh;
  sh->sizes = std::move(sizes);
  sh->bound = pass_bound;
  if (sh->sizes.empty()) throw error(errc::arg, "need at least one node");
  for (std::int32_t s : sh->sizes)
    if (s < 1) throw error(errc::arg, "every node needs at least one rank");
  if (owner_node < 0 || owner_node >= nodes())
    throw error(errc::arg, "owner node " + std::to_string(owner_node) + " out of range");
  for (std::int32_t k = 0; k < nodes(); ++k) {
    sh->first.push_back(static_cast<std::int32_t>(sh->node_of.size()));
    sh->node_of.insert(sh->node_of.end(), static_cast<std::size_t>(sh->sizes[static_cast<std::size_t>(k)]), k);
  }
  sh->ranks.resize(sh->node_of.size());
  std::iota(sh->ranks.begin(), sh->ranks.end(), 0);
  const std::int32_t widest = *std::max_element(sh->sizes.begin(), sh->sizes.end());
  sh->layout = protocol::cohort_layout::of(nodes(), widest);
  sh->stride = sh->layout.bytes;
  mem_.assign(sh->stride / 8 * static_cast<std::size_t>(nodes()), 0);
  for (std::int32_t k = 0; k < nodes(); ++k) {
    const auto ku = static_cast<std::size_t>(k);
    protocol::cohort({nodes(), k, sh->sizes[ku], sh->bound}, protocol::cohort_view::at(block(k), sh->layout),
                     sh->node_of,
                     std::span<const std::int32_t>(sh->ranks).subspan(static_cast<std::size_t>(sh->first[ku]),
                                                                      static_cast<std::size_t>(sh->sizes[ku])))
        .reset(owner_node);
  }
}

cohort_world::phase cohort_world::phase_of(rank_t r) const {
  const std::int32_t k = node_of(r);
  const std::int32_t i = local_of(r);
  const std::uint8_t* b = block(k);
  if (reinterpret_cast<const protocol::cohort_header*>(b + shape_->layout.header)->in_cs == i) return phase::in_cs;
  return b[shape_->layout.waiting + static_cast<std::size_t>(i)] ? phase::waiting : phase::idle;
}

verdict cohort_world::carry(std::int32_t k, const protocol::cohort_step& s, const char* what, rank_t at) {
  if (!s.ok()) return refused(what, at, s.st);
  const protocol::cohort c = node(k);
  if (s.act.token_to.value() >= 0) {
    const protocol::cohort_view& v = c.state();
    in_flight f{s.act.token_to, std::vector<protocol::ln_t>(v.ln, v.ln + nodes()), {}, *v.hop, {}, 0};
    for (std::int32_t q = 0; q < v.h->tq_len; ++q) f.queue.push_back(rank_t(v.tq[q]));
    std::copy_n(v.route, protocol::node_token::route, f.route.begin());
    if (auto bad = wire_check(k, f, c)) return verdict::refuse(*bad);
    flight_ = std::move(f);
    ++messages_;
    streak_ = 0;
  }
  if (s.act.broadcast) {
    for (std::int32_t j = 0; j < nodes(); ++j)
      if (j != k) pending_.push_back({s.act.requester, j, s.act.seq, s.act.copy});
    std::sort(pending_.begin(), pending_.end());
    messages_ += static_cast<std::uint64_t>(nodes() - 1);
  }
  return {};
}

std::optional<std::string> cohort_world::wire_check(std::int32_t from, in_flight& f, const protocol::cohort& c) const {
  // The message as the runtime sends it, and as the receiver takes it in: decoded
  // into (a copy of) its node's LN copy, against the move of that copy.
  thread_local std::vector<std::byte> wire;
  thread_local std::vector<protocol::ln_t> ln;
  thread_local std::vector<rank_t> queue;
  thread_local std::vector<std::uint8_t> marks;
  const std::int32_t j = node_of(f.to);
  const protocol::cohort receiver = node(j);
  const protocol::token_frame frame{static_cast<std::size_t>(nodes()), shape_->node_of};
  wire.resize(protocol::node_token::bytes(frame.n));
  // Every third move the full body, else a delta wherever it is exact: both bodies,
  // and each after the other, on the runs the checks explore.
  const protocol::token_form form = f.hop % 3 == 0 ? protocol::token_form::full : protocol::token_form::delta;
  wire.resize(c.encode_token(f.to, {}, wire, form));
  f.form = protocol::node_token_form(wire);
  ln.assign(receiver.state().ln, receiver.state().ln + nodes());
  marks.assign(frame.n, 0);
  std::uint64_t hop = 0;
  std::array<std::int32_t, protocol::node_token::route> route{};
  const auto what = [&] {
    return "the token node " + std::to_string(from) + " sends to node " + std::to_string(j) + " (" +
           (f.form == protocol::node_token::full ? "full" : "delta") + ")";
  };
  if (!protocol::decode_node_token(wire, frame, static_cast<std::size_t>(j), *receiver.state().hop, ln, queue, hop,
                                   route, {}, marks))
    return what() + " does not decode";
  if (ln != f.ln || queue != f.queue || hop != f.hop || route != f.route)
    return what() + " decodes to another LN, queue or trail than it carries";
  return std::nullopt;
}

verdict cohort_world::request(rank_t r) {
  if (r.value() < 0 || r.value() >= ranks()) return verdict::refuse("rank out of range");
  const std::int32_t k = node_of(r);
  return carry(k, node(k).lock(local_of(r)), "request", r);
}

verdict cohort_world::withdraw(rank_t r) {
  if (r.value() < 0 || r.value() >= ranks()) return verdict::refuse("rank out of range");
  const std::int32_t k = node_of(r);
  return carry(k, node(k).withdraw(local_of(r)), "withdraw", r);
}

verdict cohort_world::exit(rank_t r) {
  if (r.value() < 0 || r.value() >= ranks()) return verdict::refuse("rank out of range");
  const std::int32_t k = node_of(r);
  protocol::cohort c = node(k);
  // The world's own view of "another node is known to wait", before the step.
  const protocol::cohort_view& v = c.state();
  bool known = v.h->has_token && v.h->tq_len > 0;
  for (std::int32_t j = 0; j < nodes() && v.h->has_token && !known; ++j)
    known = j != k && protocol::fresh(v.rn[j], v.ln[j]);
  const protocol::cohort_step s = c.unlock(local_of(r));
  if (s.ok() && s.act.grant >= 0 && known) ++streak_;
  return carry(k, s, "exit", r);
}

verdict cohort_world::deliver(rank_t requester, std::int32_t to, std::optional<seq_t> seq) {
  const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const node_request& m) {
    return m.requester == requester && m.to == to && (!seq || m.seq == *seq);
  });
  if (it == pending_.end())
    return verdict::refuse("no pending REQUEST of rank " + std::to_string(requester.value()) +
                           " to node " + std::to_string(to) +
                           (seq ? " with sequence " + std::to_string(seq->value()) : std::string()));
  const node_request m = *it;
  const protocol::cohort_step s = node(to).on_request(0, m.requester, m.seq, m.copy);
  if (!s.ok()) return refused("deliver", global(to, 0), s.st);
  pending_.erase(pending_.begin() + (it - pending_.begin()));
  return carry(to, s, "deliver", global(to, 0));
}

verdict cohort_world::deliver_token() {
  if (!flight_) return verdict::refuse("no token in flight");
  const rank_t to = flight_->to;
  const std::int32_t k = node_of(to);
  // What the receiver decoded at the send (wire_check): the same LN, queue, trail.
  const protocol::cohort_step s =
      node(k).on_token(local_of(to), flight_->ln, flight_->queue, {flight_->hop, flight_->route});
  if (!s.ok()) return refused("token delivery", to, s.st);
  flight_.reset();
  streak_ = 0;
  return carry(k, s, "token delivery", to);
}

bool cohort_world::can_progress() const noexcept {
  if (!pending_.empty() || flight_) return true;
  for (std::int32_t k = 0; k < nodes(); ++k)
    if (node(k).in_cs() >= 0) return true;
  return false;
}

bool cohort_world::quiescent() const noexcept {
  if (!pending_.empty() || flight_) return false;
  for (std::int32_t k = 0; k < nodes(); ++k) {
    const protocol::cohort c = node(k);
    if (c.in_cs() >= 0 || c.state().h->lq_len > 0 || c.requesting()) return false;
  }
  return true;
}

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
    if (h.in_cs >= 0) {
      ++in_cs;
      if (h.in_cs >= R) return report{}("node ", k, ": in_cs names local rank ", h.in_cs);
      if (!h.has_token) return report{}("node ", k, ": rank ", h.in_cs, " is in the CS without the token");
    }
    // C3 the local FIFO and the waiting flags agree; no rank waits twice or in the CS.
    if (h.lq_len < 0 || h.lq_len > R || h.lq_head < 0 || h.lq_head >= R)
      return report{}("node ", k, ": local FIFO out of bounds");
    std::vector<int> seen(static_cast<std::size_t>(R), 0);
    for (std::int32_t q = 0; q < h.lq_len; ++q) {
      const std::int32_t x = c.state().lq[(h.lq_head + q) % R];
      if (x < 0 || x >= R || seen[static_cast<std::size_t>(x)]++)
        return report{}("node ", k, ": local FIFO holds ", x, " out of range or twice");
      if (x == h.in_cs) return report{}("node ", k, ": rank ", x, " waits while in the CS");
    }
    for (std::int32_t i = 0; i < R; ++i)
      if ((seen[static_cast<std::size_t>(i)] != 0) != c.is_waiting(i))
        return report{}("node ", k, ": waiting flag of local rank ", i, " disagrees with the FIFO");
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
    if (h.has_token && h.in_cs < 0) {  // C4 an idle holder has nothing to hand on
      if (h.lq_len > 0) return report{}("idle holder node ", k, " has local waiters");
      if (c.remote_waiter_known())
        return report{}("idle holder node ", k, " keeps the token although another node waits");
    }
    if (!h.has_token && h.lq_len > 0 && !h.requesting)  // C5
      return report{}("node ", k, " has local waiters but neither holds nor requests the token");
    if (h.has_token) {  // C9 the pass bound
      if (h.remote_waiting != protocol::cohort_header::unsure && (h.remote_waiting != 0) != c.remote_waiter_known())
        return report{}("node ", k, ": cached remote_waiting is stale");
      if (h.passes > shape_->bound) return report{}("node ", k, ": ", h.passes, " passes exceed B = ", shape_->bound);
    }
  }
  if (in_cs > 1) return report{}(in_cs, " ranks are in the critical section");  // C1
  if (holders + (flight_ ? 1 : 0) != 1)                                           // C2
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
    const bool ok = cj.requesting() ? protocol::fresh(own, ln[j])
                    : cj.holds_token() ? (served || protocol::fresh(own, ln[j]))
                                       : served;
    if (!ok)
      return report{}("node ", j, (cj.requesting() ? " requests" : cj.holds_token() ? " holds the token" : " is idle"),
                      " but RN_", j, "[", j, "] = ", own.value(), ", LN[", j, "] = ", ln[j]);
  }
  // C7 the token's queue; C8 the token in flight.
  const std::int32_t tq_len = flight_ ? static_cast<std::int32_t>(flight_->queue.size())
                                      : node(holder).state().h->tq_len;
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
    if (m.copy > *node(node_of(m.requester)).state().hop)
      return report{}("a REQUEST names a copy from move ", m.copy, ", after its node's");
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

namespace {
// Packs values four to a word, 16 bits each; a value of 0xffff or more takes an
// escape lane and a whole word of its own, so the packing stays one-to-one.
class packer {
 public:
  explicit packer(std::vector<std::uint64_t>& out) noexcept : out_(out) {}
  ~packer() { flush(); }
  packer(const packer&) = delete;
  packer& operator=(const packer&) = delete;
  [[gnu::always_inline]] void put(std::uint64_t v) {
    if (v < 0xffff) return lane(v);
    lane(0xffff);
    flush();
    out_.push_back(v);
  }
  void put_signed(std::int64_t v) { put(static_cast<std::uint64_t>(v + 1)); }  // -1 and up

 private:
  [[gnu::always_inline]] void lane(std::uint64_t v) {
    acc_ |= v << (16 * lanes_);
    if (++lanes_ == 4) flush();
  }
  void flush() {
    if (lanes_ == 0) return;
    out_.push_back(acc_);
    acc_ = 0;
    lanes_ = 0;
  }
  std::vector<std::uint64_t>& out_;
  std::uint64_t acc_ = 0;
  int lanes_ = 0;
};
}  // namespace

void cohort_world::encode(std::vector<std::uint64_t>& out, bool trail) const {
  // Field by field, so that equal protocol states encode equally: the local FIFO in
  // order (not the ring), the token's queue only where it is held, and an unsure
  // remote_waiting as what unlock would find (violation() checks that a settled one
  // always equals that, so the two states behave alike). The trail and the LN copies
  // decide what a token carries (its form and its pairs) but no step's effect on the
  // lock: with `trail` false they are left out (the LN of a node without the token,
  // since[], the hop, the route, the copy a REQUEST names).
  out.clear();
  packer p(out);
  const auto K = static_cast<std::size_t>(nodes());
  for (std::int32_t k = 0; k < nodes(); ++k) {
    const protocol::cohort c = node(k);
    const protocol::cohort_view& v = c.state();
    const protocol::cohort_header& h = *v.h;
    const std::uint64_t waiting =
        h.remote_waiting == protocol::cohort_header::unsure ? (c.remote_waiter_known() ? 1 : 0) : h.remote_waiting;
    p.put_signed(h.in_cs);
    p.put(h.passes);
    p.put(h.has_token | h.requesting << 1 | waiting << 2);
    for (std::size_t j = 0; j < K; ++j) {
      p.put(v.rn[j].value());
      p.put_signed(v.requester[j]);
      if (trail) p.put(v.since[j]);
      if (trail || h.has_token) p.put(v.ln[j]);  // the token's, or the node's copy
    }
    if (trail) {
      p.put(*v.hop);  // the route past the first move reads -1 (C11)
      for (std::size_t i = 0; i < std::min<std::uint64_t>(*v.hop, protocol::node_token::route); ++i)
        p.put_signed(v.route[i]);
    }
    p.put(static_cast<std::uint64_t>(h.lq_len));
    const std::int32_t R = shape_->sizes[static_cast<std::size_t>(k)];
    for (std::int32_t q = 0; q < h.lq_len; ++q) p.put_signed(v.lq[(h.lq_head + q) % R]);
    if (!h.has_token) continue;
    p.put(static_cast<std::uint64_t>(h.tq_len));
    for (std::int32_t q = 0; q < h.tq_len; ++q) p.put_signed(v.tq[q]);
  }
  p.put(streak_);
  if (flight_) {
    p.put_signed(flight_->to.value());
    for (protocol::ln_t s : flight_->ln) p.put(s);
    p.put(flight_->queue.size());
    for (rank_t q : flight_->queue) p.put_signed(q.value());
    if (trail) {
      p.put(flight_->hop);
      p.put_signed(flight_->form);
    }
  } else {
    p.put_signed(-1);
  }
  for (const node_request& m : pending_) {
    p.put_signed(m.requester.value());
    p.put_signed(m.to);
    p.put(m.seq.value());
    if (trail) p.put(m.copy);
  }
}

}  // namespace tally::check
