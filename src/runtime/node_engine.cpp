// runtime/node_engine.cpp — the engine's events for topology::node.
//
// Contract. Every transition of the node's protocol::cohort runs under the node's
// spinlock (runtime/node_level.hpp), by whichever rank of the node carries the
// event: its own lock/try_lock/withdraw/unlock, a REQUEST it received as the node's
// leader, the token it received as the rank the node asked it for. Under the
// spinlock the rank also sets the grant flag of the rank it hands the critical
// section to and packs an outgoing token (LN, queue, payload: all in the window)
// into a send buffer; the MPI sends follow after the spinlock is released.
#include "runtime/engine.hpp"

#include "core/token_codec.hpp"
#include "runtime/registry.hpp"

namespace tally::detail {

bool engine::node_progress_locked(bool repost) {
  if (node_->nodes() > 1 && !transport_.token_posted()) {  // while the node's request names this rank
    node_->lock();
    const bool named = node_named();
    node_->unlock();
    transport_.want_token(named);
  }
  const transport::arrivals a = transport_.test(repost);
  const std::int32_t me = node_->local();
  for (const transport::request_arrival& r : a.requests)
    node_event([&](protocol::cohort& c) { return c.on_request(me, r.from, r.seq, r.copy); }, "REQUEST received");
  if (a.token) {
    // The node does not hold the token, so nobody reads its LN, trail or payload but
    // this rank: the token goes straight into the window, without the spinlock
    // (cohort::ln_inbox), patching the node's LN copy where it is a delta.
    protocol::cohort& c = node_->cohort();
    const std::span<protocol::ln_t> ln = c.ln_inbox();
    std::uint64_t hop = 0;
    transport_.read_token(*c.state().hop, ln, spare_.queue, hop, spare_route_, node_->payload());
    // Runs inside node_event, mu_ still held.
    node_event([&](protocol::cohort& n) TALLY_REQUIRES(mu_) { return n.on_token(me, ln, spare_.queue, {hop, spare_route_}); },
               "token received");
  }
  // A local handoff is no message: an asynchronous acquisition looks at the flag.
  if (async_ && async_->st == acquisition::state::pending && entered_locked()) async_acquired_locked();
  transport_.pump();  // after any token send: the token overtakes the rest
  if (transport_.sends_active() && (!a.any() || transport_.send_slots() > 8)) transport_.reap_sends(false);
  return a.any();
}

bool engine::node_attention_locked() const noexcept {
  node_->lock();
  const bool needed = node_needs_me();
  node_->unlock();
  return needed;
}

bool engine::node_needs_me() const noexcept {
  // Only this rank can answer: as the leader while the node holds the token (a
  // REQUEST must move it), or as the rank a pending node request named (the token
  // comes here) when no thread of this rank waits in lock().
  return (node_->leader() && node_->cohort().holds_token()) || node_named();
}

bool engine::node_named() const noexcept {
  const protocol::cohort& c = node_->cohort();
  return c.requesting() && c.state().requester[node_->node()] == rank_;
}

void engine::node_drain_locked(std::uint64_t total_broadcasts) {
  // REQUESTs for this node: one per broadcast from another node. The node's own
  // broadcasts are summed over its ranks' counters (nobody broadcasts any more:
  // every rank of the job has left the critical section or withdrawn).
  std::uint64_t own = 0;
  node_->lock();
  for (std::int32_t i = 0; i < node_->locals(); ++i) own += node_->cohort().counters_of(i).broadcasts;
  node_->unlock();
  const std::uint64_t expected = node_->leader() ? total_broadcasts - own : 0;
  for (patience wait;; wait()) {
    node_->lock();
    const bool requesting = node_->cohort().requesting();
    const std::uint64_t received = node_->cohort().counters_of(node_->local()).requests_received;
    node_->unlock();
    if (received >= expected && !requesting && !transport_.sends_pending()) return;
    progress_locked();
    registry::poll_others(this);
  }
}

}  // namespace tally::detail
