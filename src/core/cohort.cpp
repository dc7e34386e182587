#include "core/cohort.hpp"

#include <algorithm>
#include <atomic>
#include <string>

namespace tally::protocol {

namespace {

constexpr std::size_t align8(std::size_t x) noexcept { return (x + 7) & ~std::size_t{7}; }
constexpr std::uint64_t slow_bit = gate{0, 0, false, true, false}.word();
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free &&
                  std::atomic_ref<std::uint32_t>::is_always_lock_free,
              "the gate and the tickets need lock-free atomics (shared memory between processes)");

}  // namespace

cohort_layout cohort_layout::of(std::int32_t nodes, std::int32_t locals) noexcept {
  const auto k = static_cast<std::size_t>(std::max(nodes, 1));
  const auto r = static_cast<std::size_t>(std::max(locals, 1));
  cohort_layout l;
  std::size_t off = 0;
  auto place = [&off](std::size_t& field, std::size_t size) {
    field = off;
    off = align8(off + size);
  };
  // What a local lock or unlock reads and writes comes first (the header, the gate and
  // the local FIFO), so that a runtime can keep it on few cache lines.
  place(l.header, sizeof(cohort_header));
  place(l.gate, sizeof(std::uint64_t));
  place(l.tickets, r * sizeof(std::uint32_t));
  place(l.rn, k * sizeof(seq_t));
  place(l.requester, k * sizeof(std::int32_t));
  place(l.ln, k * sizeof(ln_t));
  place(l.tq, k * sizeof(std::int32_t));
  place(l.scratch, k);
  place(l.hop, sizeof(std::uint64_t));
  place(l.route, node_token::route * sizeof(std::int32_t));
  place(l.since, k * sizeof(std::uint64_t));
  l.protocol_bytes = off;
  place(l.order_next, k * sizeof(std::int32_t));
  place(l.order_prev, k * sizeof(std::int32_t));
  place(l.counters, r * sizeof(protocol::counters));
  l.bytes = off;
  return l;
}

cohort::cohort(cohort_shape shape, cohort_view state, std::span<const std::int32_t> node_of,
               std::span<const std::int32_t> members)
    : shape_(shape), v_(state), node_of_(node_of), members_(members) {
  auto bad = [](const std::string& what) { throw bad_argument("cohort: " + what); };
  if (shape.nodes < 1 || shape.locals < 1) bad("node and rank counts must be at least 1");
  if (shape.pass_bound < 1) bad("the local pass bound must be at least 1");
  if (shape.node < 0 || shape.node >= shape.nodes) bad("node index out of range");
  if (members.size() != static_cast<std::size_t>(shape.locals)) bad("member list has the wrong size");
  if (static_cast<std::uint32_t>(shape.locals) >= gate::ticket_mask) bad("too many ranks on one node");
  for (std::int32_t g : members)
    if (g < 0 || static_cast<std::size_t>(g) >= node_of.size() || node_of[static_cast<std::size_t>(g)] != shape.node)
      bad("member rank " + std::to_string(g) + " is not on node " + std::to_string(shape.node));
  for (std::int32_t k : node_of)
    if (k < 0 || k >= shape.nodes) bad("node_of names a node out of range");
}

void cohort::reset(std::int32_t owner_node) noexcept {
  const auto k = static_cast<std::size_t>(shape_.nodes);
  *v_.h = cohort_header{};
  std::fill_n(v_.rn, k, seq_t{});
  std::fill_n(v_.requester, k, -1);
  std::fill_n(v_.ln, k, ln_t{0});
  std::fill_n(v_.tq, k, -1);
  for (std::int32_t i = 0; i < shape_.locals; ++i) ticket_ref(i) = gate::no_ticket;
  std::fill_n(v_.scratch, k, std::uint8_t{0});
  *v_.hop = 0;
  std::fill_n(v_.route, node_token::route, -1);
  std::fill_n(v_.since, k, std::uint64_t{0});
  for (std::int32_t i = 0; i < shape_.locals; ++i) ctr(i) = counters{};
  v_.h->has_token = owner_node == shape_.node ? 1 : 0;
  std::atomic_ref<std::uint64_t>(*v_.gate).store(gate{0, 0, v_.h->has_token != 0, false, false}.word(),
                                                 std::memory_order_release);
  // Every node starts the order at its successor, so that first sends spread: the
  // list runs j -> j + 1 (mod K) from this node round to it again.
  for (std::int32_t j = 0; j < shape_.nodes; ++j) {
    v_.order_next[static_cast<std::size_t>(j)] = (j + 1) % shape_.nodes;
    v_.order_prev[static_cast<std::size_t>(j)] = (j + shape_.nodes - 1) % shape_.nodes;
  }
  if (owner_node != shape_.node) heard_of(owner_node);
}

// --- the gate and the local FIFO -------------------------------------------------

gate cohort::gate_now() const noexcept {
  return gate::of(std::atomic_ref<std::uint64_t>(*v_.gate).load(std::memory_order_acquire));
}

std::uint32_t cohort::ticket_of(std::int32_t i) const noexcept {
  return std::atomic_ref<std::uint32_t>(ticket_ref(i)).load(std::memory_order_relaxed);
}

bool cohort::queued(std::int32_t i) const noexcept { return ticket_of(i) != gate::no_ticket; }

std::int32_t cohort::queued_count() const noexcept { return static_cast<std::int32_t>(gate_now().out()); }

std::int32_t cohort::holder_of(std::uint32_t ticket) const noexcept {
  for (std::int32_t i = 0; i < shape_.locals; ++i)
    if (ticket_of(i) == ticket) return i;
  return -1;
}

std::int32_t cohort::queued_at(std::int32_t q) const noexcept {
  return holder_of((gate_now().turn + static_cast<std::uint32_t>(q)) & gate::ticket_mask);
}

std::int32_t cohort::in_cs() const noexcept {
  const gate g = gate_now();
  return g.token && g.turn != g.next ? holder_of(g.turn) : -1;
}

bool cohort::settled() const noexcept {
  const gate g = gate_now();
  std::uint32_t held = 0;
  for (std::int32_t i = 0; i < shape_.locals; ++i) held += queued(i) && g.ahead(ticket_of(i)) < g.out() ? 1 : 0;
  return held == g.out();
}

gate cohort::freeze() noexcept {
  return gate::of(std::atomic_ref<std::uint64_t>(*v_.gate).fetch_or(slow_bit, std::memory_order_acq_rel));
}

void cohort::thaw(gate g) noexcept {
  g.token = v_.h->has_token != 0;
  g.slow = needs_slow();
  std::atomic_ref<std::uint64_t>(*v_.gate).store(g.word(), std::memory_order_release);
}

void cohort::set_ticket(std::int32_t i, std::uint32_t t) noexcept {
  std::atomic_ref<std::uint32_t>(ticket_ref(i)).store(t, std::memory_order_relaxed);
}

bool cohort::take_ticket(std::int32_t i, taking when, bool& at_once) noexcept {
  std::atomic_ref<std::uint64_t> word(*v_.gate);
  std::uint64_t was = word.load(std::memory_order_acquire);
  gate g;
  do {
    g = gate::of(was);
    if (when == taking::unlocked && (!g.token || g.slow)) return false;
    if (when == taking::idle && (!g.token || g.turn != g.next)) return false;
  } while (!word.compare_exchange_weak(was, gate{g.turn, gate::after(g.next), g.token, g.slow, g.via_token}.word(),
                                       std::memory_order_acq_rel, std::memory_order_acquire));
  set_ticket(i, g.next);
  at_once = g.token && g.turn == g.next;  // nobody was served or waiting
  if (at_once) {
    counters& c = ctr(i);
    ++c.acquisitions;
    ++c.local_acquisitions;
  }
  return true;
}

bool cohort::lock_unlocked(std::int32_t i, cohort_step& s) noexcept {
  if (!local(i) || queued(i)) return false;  // lock() says why
  bool at_once = false;
  if (!take_ticket(i, taking::unlocked, at_once)) return false;
  s = {};
  if (at_once) s.act.grant = i;
  return true;
}

bool cohort::leave_unlocked(std::int32_t i) noexcept {
  if (!local(i)) return false;
  const std::uint32_t mine = ticket_of(i);
  std::atomic_ref<std::uint64_t> word(*v_.gate);
  std::uint64_t was = word.load(std::memory_order_relaxed);
  for (;;) {
    const gate g = gate::of(was);
    if (g.slow || !g.serves(mine)) return false;  // no_ticket is never served
    gate n = g;
    n.turn = gate::after(mine);
    n.via_token = false;
    if (word.compare_exchange_weak(was, n.word(), std::memory_order_release, std::memory_order_relaxed)) {
      set_ticket(i, gate::no_ticket);
      if (g.next != n.turn) ++ctr(i).local_handoffs_sent;  // a ticket waited
      return true;
    }
  }
}

void cohort::note_entry(std::int32_t i) noexcept {
  counters& c = ctr(i);
  ++c.acquisitions;
  if (!gate_now().via_token) {
    ++c.local_acquisitions;
    ++c.local_handoffs_received;
  }
}

void cohort::request(std::int32_t by, cohort_action& act, const gate& g) noexcept {
  const auto self = static_cast<std::size_t>(shape_.node);
  v_.rn[self] = v_.rn[self].next();
  const std::int32_t head = holder_of(g.turn);  // the rank the token should reach
  v_.requester[self] = members_[static_cast<std::size_t>(head)];
  v_.h->requesting = 1;
  counters& c = ctr(by);
  ++c.broadcasts;
  c.requests_sent += static_cast<std::uint64_t>(shape_.nodes - 1);
  act.broadcast = true;
  act.seq = v_.rn[self];
  act.requester = rank_t(v_.requester[self]);
  act.copy_hop = *v_.hop;
}

void cohort::release(std::int32_t by, cohort_action& act, const gate& g) noexcept {
  cohort_header& h = *v_.h;
  const auto self = static_cast<std::size_t>(shape_.node);
  v_.ln[self] = low32(v_.rn[self]);
  for (std::int32_t q = 0; q < h.tq_len; ++q)
    v_.scratch[static_cast<std::size_t>(node_of_[static_cast<std::size_t>(v_.tq[q])])] = 1;
  find_fresh(v_.rn, v_.ln, static_cast<std::size_t>(shape_.nodes), [&](std::size_t j) {
    if (j != self && !v_.scratch[j]) v_.tq[h.tq_len++] = v_.requester[j];
    return false;
  });
  for (std::int32_t q = 0; q < h.tq_len; ++q)
    v_.scratch[static_cast<std::size_t>(node_of_[static_cast<std::size_t>(v_.tq[q])])] = 0;
  pass_on(by, act, g);
}

void cohort::pass_on(std::int32_t by, cohort_action& act, const gate& g) noexcept {
  cohort_header& h = *v_.h;
  h.passes = 0;
  h.remote_waiting = 0;
  if (h.tq_len == 0) return;  // idle holder: nobody waits anywhere
  act.token_to = rank_t(v_.tq[0]);
  heard_of(node_of(act.token_to));
  ++*v_.hop;  // this move's sender heads the route
  std::copy_backward(v_.route, v_.route + node_token::route - 1, v_.route + node_token::route);
  v_.route[0] = shape_.node;
  std::copy(v_.tq + 1, v_.tq + h.tq_len, v_.tq);
  v_.tq[--h.tq_len] = -1;
  // Not carried (core/token_layout.hpp): the token in memory reads as on the wire.
  for (std::int32_t q = 0; q < h.tq_len; ++q) v_.ln[static_cast<std::size_t>(node_of(rank_t(v_.tq[q])))] = 0;
  v_.ln[static_cast<std::size_t>(node_of(act.token_to))] = 0;
  h.has_token = 0;
  ++ctr(by).tokens_sent;
  if (g.out() > 0) {  // the pass bound sent it away from local waiters: ask again
    ++ctr(by).bound_releases;
    request(by, act, g);
  }
}

bool cohort::remote_waiter_known() const noexcept {
  if (!v_.h->has_token) return false;
  if (v_.h->tq_len > 0) return true;
  const auto self = static_cast<std::size_t>(shape_.node);
  return find_fresh(v_.rn, v_.ln, static_cast<std::size_t>(shape_.nodes), [&](std::size_t j) { return j != self; });
}

cohort_step cohort::lock(std::int32_t i) {
  if (!local(i)) return {status::bad_rank};
  if (queued(i)) return {in_cs() == i ? status::already_in_cs : status::already_requesting};
  bool at_once = false;
  (void)take_ticket(i, taking::always, at_once);
  cohort_step s;
  if (at_once) {
    s.act.grant = i;
    return s;
  }
  // Without the token, nobody leaves: the gate read now is the one the ticket joined.
  if (!v_.h->has_token && !v_.h->requesting) request(i, s.act, gate_now());
  return s;
}

cohort_step cohort::try_lock(std::int32_t i) {
  if (!local(i)) return {status::bad_rank};
  if (queued(i)) return {in_cs() == i ? status::already_in_cs : status::would_block};
  // Only while nobody is served or waits, in one compare-and-swap: ranks may take
  // tickets and leave without the lock meanwhile.
  bool at_once = false;
  if (!take_ticket(i, taking::idle, at_once)) return {status::would_block};
  cohort_step s;
  s.act.grant = i;
  return s;
}

cohort_step cohort::withdraw(std::int32_t i) {
  if (!local(i)) return {status::bad_rank};
  gate g = freeze();
  if (!settled()) return {status::unsettled};  // still slow: no ticket is taken meanwhile
  const std::uint32_t mine = ticket_of(i);
  status st = status::ok;
  if (mine == gate::no_ticket)
    st = status::not_requesting;
  else if (g.serves(mine))
    st = status::already_in_cs;
  if (st != status::ok) {
    thaw(g);
    return {st};
  }
  // Give the ticket back: each later one moves up to the ticket before it.
  for (std::int32_t j = 0; j < shape_.locals; ++j) {
    const std::uint32_t t = ticket_of(j);
    // Only tickets out: a rank that has just left without the lock may still show
    // its old ticket, before the turn, until it writes no_ticket.
    if (j != i && queued(j) && g.ahead(t) < g.out() && g.ahead(t) > g.ahead(mine))
      set_ticket(j, (t - 1) & gate::ticket_mask);
  }
  set_ticket(i, gate::no_ticket);
  g.next = (g.next - 1) & gate::ticket_mask;
  thaw(g);  // the moved tickets before the gate: a waiter reads its ticket after the gate
  return {};
}

cohort_step cohort::unlock(std::int32_t i) {
  if (!local(i)) return {status::bad_rank};
  gate g = freeze();
  if (!settled()) return {status::unsettled};  // still slow: no ticket is taken meanwhile
  if (!g.serves(ticket_of(i))) {
    thaw(g);
    return {status::not_in_cs};
  }
  cohort_header& h = *v_.h;
  cohort_step s;
  const bool waiters = g.out() > 1;
  if (waiters && h.remote_waiting == cohort_header::unsure) h.remote_waiting = remote_waiter_known() ? 1 : 0;
  g.turn = gate::after(g.turn);  // i leaves
  g.via_token = false;
  set_ticket(i, gate::no_ticket);
  if (waiters && (!h.remote_waiting || h.passes < shape_.pass_bound)) {
    if (h.remote_waiting) ++h.passes;
    ++ctr(i).local_handoffs_sent;
    s.act.grant = holder_of(g.turn);
  } else {
    release(i, s.act, g);
  }
  thaw(g);
  return s;
}

void cohort::heard_of(std::int32_t j) noexcept {
  if (j == shape_.node) return;  // not in the order
  std::int32_t* const next = v_.order_next;
  std::int32_t* const prev = v_.order_prev;
  const auto at = [](std::int32_t x) { return static_cast<std::size_t>(x); };
  next[at(prev[at(j)])] = next[at(j)];  // out of its place
  prev[at(next[at(j)])] = prev[at(j)];
  const std::int32_t self = shape_.node;  // in after this node's entry: first
  next[at(j)] = next[at(self)];
  prev[at(j)] = self;
  prev[at(next[at(self)])] = j;
  next[at(self)] = j;
}

cohort_step cohort::on_request(std::int32_t by, rank_t requester, seq_t seq, std::uint64_t copy_hop) {
  if (!local(by) || requester.value() < 0 || requester.index() >= node_of_.size()) return {status::bad_rank};
  const std::int32_t j = node_of(requester);
  if (j == shape_.node) return {status::self_request};
  ++ctr(by).requests_received;
  const auto k = static_cast<std::size_t>(j);
  if (seq > v_.rn[k]) {
    v_.rn[k] = seq;
    v_.requester[k] = requester.value();
    v_.since[k] = copy_hop;
    heard_of(j);
  }
  cohort_step s;
  cohort_header& h = *v_.h;
  // A held token with a queue has remote_waiting set already (and LN is not read for
  // a queued node).
  if (!h.has_token || h.tq_len > 0 || !fresh(v_.rn[k], v_.ln[k])) return s;
  const gate g = freeze();  // the turn stands still: the CS cannot empty meanwhile
  if (g.turn == g.next) {
    // Idle holder: hand off at once. Its queue and local FIFO are empty and no other
    // node waits (C4), so a release's scan would find node j alone: skip it.
    v_.ln[static_cast<std::size_t>(shape_.node)] = low32(v_.rn[static_cast<std::size_t>(shape_.node)]);
    v_.tq[h.tq_len++] = v_.requester[k];
    pass_on(by, s.act, g);
  } else {
    h.remote_waiting = 1;  // from now on every leave takes the lock (slow)
  }
  thaw(g);
  return s;
}

std::size_t cohort::encode_token(rank_t to, std::span<const std::byte> payload, std::span<std::byte> out,
                                 token_form form) const noexcept {
  const auto k = static_cast<std::size_t>(shape_.nodes);
  const auto node = static_cast<std::size_t>(node_of(to));
  return encode_node_token({k, node_of_}, {v_.ln, k}, {v_.tq, static_cast<std::size_t>(v_.h->tq_len)}, node, trail(),
                           v_.since[node], payload, out, form);
}

cohort_step cohort::on_token(std::int32_t by, std::span<const ln_t> ln, std::span<const rank_t> queue,
                             token_trail trail) {
  if (!local(by)) return {status::bad_rank};
  cohort_header& h = *v_.h;
  if (h.has_token || !h.requesting) return {status::not_requesting};
  // Well formed: K entries of LN; a queue shorter than K of ranks in range, from
  // distinct nodes, none of them this one.
  const auto k = static_cast<std::size_t>(shape_.nodes);
  bool ok = ln.size() == k && queue.size() < k && trail.hop > *v_.hop && trail.route.size() == node_token::route;
  for (std::size_t q = 0; ok && q < queue.size(); ++q) {
    const rank_t r = queue[q];
    ok = r.value() >= 0 && r.index() < node_of_.size() && node_of(r) != shape_.node &&
         !v_.scratch[static_cast<std::size_t>(node_of(r))];
    if (ok) v_.scratch[static_cast<std::size_t>(node_of(r))] = 1;
  }
  for (rank_t r : queue)
    if (r.value() >= 0 && r.index() < node_of_.size()) v_.scratch[static_cast<std::size_t>(node_of(r))] = 0;
  if (!ok) return {status::bad_token};

  ++ctr(by).tokens_received;
  if (ln.data() != v_.ln) std::copy(ln.begin(), ln.end(), v_.ln);
  *v_.hop = trail.hop;
  std::copy(trail.route.begin(), trail.route.end(), v_.route);
  h.tq_len = static_cast<std::int32_t>(queue.size());
  for (std::size_t q = 0; q < queue.size(); ++q) {
    v_.tq[q] = queue[q].value();
    v_.ln[static_cast<std::size_t>(node_of(queue[q]))] = 0;  // not carried: never read while queued
  }
  // Requesting: RN[node] is the request this token serves, LN[node] the one before.
  v_.ln[static_cast<std::size_t>(shape_.node)] = low32(v_.rn[static_cast<std::size_t>(shape_.node)]) - 1;
  h.has_token = 1;
  h.requesting = 0;
  h.passes = 0;
  // Whether another node waits is looked up when a local pass needs it (unlock).
  h.remote_waiting = queue.empty() ? cohort_header::unsure : 1;
  gate g = freeze();
  cohort_step s;
  if (g.out() > 0) {  // the head's ticket is the turn: it is served now
    g.via_token = true;
    s.act.grant = holder_of(g.turn);
  } else {
    release(by, s.act, g);  // every local waiter withdrew
  }
  thaw(g);
  return s;
}

}  // namespace tally::protocol
