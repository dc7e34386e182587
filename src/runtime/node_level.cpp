#include "runtime/node_level.hpp"

#include <string>

#include "core/token_codec.hpp"
#include "runtime/handles.hpp"
#include "runtime/settings.hpp"

namespace tally::detail {

template <class Event>
protocol::cohort_step node_level::event(Event&& e, const char* call, protocol::status allowed) {
  protocol::cohort& c = slot_.cohort();
  int token_count = 0;  // units of the token staged below
  slot_.lock();
  // unsettled: a rank between taking a ticket without the spinlock and writing it to
  // its line, a few instructions from done (protocol::cohort::lock_unlocked).
  protocol::cohort_step s;
  for (int spin = 0; (s = e(c)).st == protocol::status::unsettled; ++spin) node_slot::pause(spin);
  needed_ = needed_here();
  if (s.ok()) {
    if (s.act.broadcast) {  // the order is shared state: read it under the spinlock
      bcast_order_.clear();
      for (const std::int32_t j : c.broadcast_order())
        bcast_order_.push_back(static_cast<std::int32_t>(slot_.peer_index(j)));
    }
    if (s.act.token_to.value() >= 0) token_count = t_.wire().pack(c, s.act.token_to, slot_.payload(), t_.stage_token());
  }
  slot_.unlock();
  if (!s.ok()) {
    if (s.st == allowed) return s;
    refuse(s.st, call);
  }
  if (s.act.token_to.value() >= 0) t_.send_staged(s.act.token_to, token_count);
  if (s.act.broadcast) t_.broadcast(s.act.seq, s.act.requester, s.act.copy_hop, bcast_order_);
  return s;
}

void node_level::describe(transport::shape& sh) const {
  sh.token_entries = slot_.nodes();
  sh.node_of = slot_.node_of();
  sh.token_self = slot_.node();
  sh.with_requester = true;
  sh.form = node_token_form();
  sh.peers = slot_.other_leaders();
}

// --- an acquisition ------------------------------------------------------------------

bool node_level::start(const char* call) {
  const std::int32_t me = slot_.local();
  // The token here and no other node known to wait: a ticket without the spinlock.
  protocol::cohort_step s;
  if (!slot_.cohort().lock_unlocked(me, s)) s = event([me](protocol::cohort& c) { return c.lock(me); }, call);
  in_cs_ = s.act.grant == me;  // at once (counted by the event)
  waiting_ = !in_cs_;
  return entered();
}

bool node_level::entered() {
  if (in_cs_ || !waiting_) return in_cs_;
  protocol::cohort& c = slot_.cohort();
  const std::int32_t me = slot_.local();
  // The gate first (acquire), then the ticket: a withdrawal ahead moves the ticket
  // before it publishes the gate.
  const protocol::gate g = c.gate_now();
  if (!g.serves(c.ticket_of(me))) return false;
  c.note_entry(me);
  waiting_ = false;
  in_cs_ = true;
  return true;
}

bool node_level::waiting() const {
  slot_.lock();
  const bool w = slot_.cohort().is_waiting(slot_.local());
  slot_.unlock();
  return w;
}

bool node_level::withdraw(const char* call) {
  const std::int32_t me = slot_.local();
  const protocol::cohort_step s =
      event([me](protocol::cohort& c) { return c.withdraw(me); }, call, protocol::status::already_in_cs);
  if (s.ok()) {
    waiting_ = false;
    return true;
  }
  (void)entered();  // served meanwhile: the gate says so
  return false;
}

bool node_level::try_enter(const char* call) {
  const std::int32_t me = slot_.local();
  const protocol::cohort_step s =
      event([me](protocol::cohort& c) { return c.try_lock(me); }, call, protocol::status::would_block);
  in_cs_ = s.ok();  // entered at once
  return in_cs_;
}

void node_level::leave(const char* call) {
  const std::int32_t me = slot_.local();
  in_cs_ = false;
  // No other node known to wait: serve the next ticket, whoever holds it, without
  // the spinlock and without reading who waits (docs/design.md, "Two-level lock").
  if (slot_.cohort().leave_unlocked(me)) return;
  event([me](protocol::cohort& c) { return c.unlock(me); }, call);
}

void node_level::abandon() noexcept {
  try {
    if (!in_cs_ && !withdraw("lock")) leave("lock");
  } catch (...) {  // not waiting: nothing to undo
  }
}

// --- progress ------------------------------------------------------------------------

void node_level::before_test() {
  if (slot_.nodes() > 1 && !t_.token_posted()) {  // while the node's request names this rank
    slot_.lock();
    const bool here = named();
    slot_.unlock();
    t_.want_token(here);
  }
}

void node_level::deliver(const transport::arrivals& a) {
  const std::int32_t me = slot_.local();
  for (const transport::request_arrival& r : a.requests)
    event([&](protocol::cohort& c) { return c.on_request(me, r.from, r.seq, r.copy_hop); }, "REQUEST received");
  if (a.token) {
    // The node does not hold the token, so nobody reads its LN, trail or payload but
    // this rank: the token goes straight into shared memory, without the spinlock
    // (cohort::ln_inbox), patching the node's LN copy where it is a delta.
    protocol::cohort& c = slot_.cohort();
    const std::span<protocol::ln_t> ln = c.ln_inbox();
    std::uint64_t hop = 0;
    t_.read_token(*c.state().hop, ln, spare_queue_, hop, spare_route_, slot_.payload());
    event([&](protocol::cohort& n) { return n.on_token(me, ln, spare_queue_, {hop, spare_route_}); }, "token received");
  }
}

bool node_level::needs_progress(bool after_event) const noexcept {
  if (after_event) return needed_;
  slot_.lock();
  const bool needed = needed_here();
  slot_.unlock();
  return needed;
}

bool node_level::named() const noexcept {
  const protocol::cohort& c = slot_.cohort();
  return c.requesting() && c.state().requester[slot_.node()] == rank_;
}

// --- teardown and counters -----------------------------------------------------------

bool node_level::drained(std::uint64_t total) const {
  // REQUESTs for this node: one per broadcast from another node. The node's own
  // broadcasts are summed over its ranks' counters (nobody broadcasts any more:
  // every rank of the job has left the critical section or withdrawn).
  slot_.lock();
  const protocol::cohort& c = slot_.cohort();
  std::uint64_t own = 0;
  for (std::int32_t i = 0; i < slot_.locals(); ++i) own += c.counters_of(i).broadcasts;
  const bool requesting = c.requesting();
  const std::uint64_t received = c.counters_of(slot_.local()).requests_received;
  slot_.unlock();
  const std::uint64_t expected = slot_.leader() ? total - own : 0;
  return received >= expected && !requesting && !t_.sends_pending();
}

void node_level::close() noexcept {
  if (!slot_.is_open()) return;
  final_ = stats();
  slot_.close();
}

tally::stats node_level::stats() const {
  if (!slot_.is_open()) return final_;
  slot_.lock();
  const tally::stats s = to_stats(slot_.cohort().counters_of(slot_.local()));
  slot_.unlock();
  return s;
}

}  // namespace tally::detail
