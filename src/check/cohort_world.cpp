#include "check/cohort_world.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <sstream>

namespace tally::check {

namespace {

verdict refused(const char* what, rank_t at, protocol::status st) {
  return verdict::refuse(std::string(what) + " at rank " + std::to_string(at.value()) + ": " + protocol::describe(st));
}

}  // namespace

cohort_world::cohort_world(std::vector<std::int32_t> sizes, std::int32_t owner_node, std::uint32_t pass_bound) {
  auto sh = std::make_shared<shape>();
  shape_ = sh;
  sh->sizes = std::move(sizes);
  sh->bound = pass_bound;
  if (sh->sizes.empty()) throw protocol::bad_argument("need at least one node");
  for (std::int32_t s : sh->sizes)
    if (s < 1) throw protocol::bad_argument("every node needs at least one rank");
  if (owner_node < 0 || owner_node >= nodes())
    throw protocol::bad_argument("owner node " + std::to_string(owner_node) + " out of range");
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
  const protocol::cohort c = node(node_of(r));
  const std::uint32_t t = c.ticket_of(local_of(r));
  if (t == protocol::gate::no_ticket) return phase::idle;
  return c.gate_now().serves(t) ? phase::in_cs : phase::waiting;
}

verdict cohort_world::carry(std::int32_t k, const protocol::cohort_step& s, const char* what, rank_t at, bool noted) {
  if (!s.ok()) return refused(what, at, s.st);
  protocol::cohort c = node(k);
  // A grant other than lock's at once: the rank sees it on the gate and counts it
  // (the runtime does so when it looks, the world at once).
  if (s.act.grant >= 0 && !noted) c.note_entry(s.act.grant);
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
      if (j != k) pending_.push_back({s.act.requester, j, s.act.seq, s.act.copy_hop});
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
  // As the runtime locks: without the node's lock where the gate allows it.
  protocol::cohort c = node(k);
  protocol::cohort_step s;
  if (c.lock_unlocked(local_of(r), s)) return carry(k, s, "request", r, true);
  return carry(k, c.lock(local_of(r)), "request", r, true);
}

verdict cohort_world::withdraw(rank_t r) {
  if (r.value() < 0 || r.value() >= ranks()) return verdict::refuse("rank out of range");
  const std::int32_t k = node_of(r);
  return carry(k, node(k).withdraw(local_of(r)), "withdraw", r, true);
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
  // As the runtime leaves: without the node's lock where the gate allows it.
  if (c.leave_unlocked(local_of(r))) {
    if (known)
      return verdict::refuse("exit at rank " + std::to_string(r.value()) +
                             " left without the lock while another node was known to wait");
    if (const std::int32_t next = c.in_cs(); next >= 0) c.note_entry(next);
    return {};
  }
  const protocol::cohort_step s = c.unlock(local_of(r));
  if (s.ok() && s.act.grant >= 0 && known) ++streak_;
  return carry(k, s, "exit", r, false);
}

verdict cohort_world::deliver(rank_t requester, std::int32_t to, std::optional<seq_t> seq) {
  const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const node_request& m) {
    return m.requester == requester && m.to == to && (!seq || m.seq == *seq);
  });
  if (it == pending_.end())
    return verdict::refuse("no pending REQUEST of rank " + std::to_string(requester.value()) + " to node " +
                           std::to_string(to) +
                           (seq ? " with sequence " + std::to_string(seq->value()) : std::string()));
  const node_request m = *it;
  const protocol::cohort_step s = node(to).on_request(0, m.requester, m.seq, m.copy_hop);
  if (!s.ok()) return refused("deliver", global(to, 0), s.st);
  pending_.erase(pending_.begin() + (it - pending_.begin()));
  return carry(to, s, "deliver", global(to, 0), true);
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
  return carry(k, s, "token delivery", to, false);
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
    if (c.in_cs() >= 0 || c.queued_count() > 0 || c.requesting()) return false;
  }
  return true;
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
  // ticket order (not the ring, nor the tickets' numbers), the token's queue only where it is held, and an unsure
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
    // The local FIFO by ticket, whatever the tickets' numbers: one pass.
    const protocol::gate g = c.gate_now();
    const std::int32_t R = shape_->sizes[static_cast<std::size_t>(k)];
    std::array<std::int32_t, 64> by_place{};
    std::vector<std::int32_t> wide;
    std::int32_t* place = R <= 64 ? by_place.data() : (wide.resize(static_cast<std::size_t>(R)), wide.data());
    for (std::int32_t i = 0; i < R; ++i) {
      const std::uint32_t t = c.ticket_of(i);
      if (t != protocol::gate::no_ticket && g.ahead(t) < g.out()) place[g.ahead(t)] = i;
    }
    const auto queued = static_cast<std::int32_t>(g.out());
    p.put_signed(g.token && queued > 0 ? place[0] : -1);  // in the CS
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
    p.put(static_cast<std::uint64_t>(queued));
    for (std::int32_t q = 0; q < queued; ++q) p.put_signed(place[q]);
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
    if (trail) p.put(m.copy_hop);
  }
}

}  // namespace tally::check
