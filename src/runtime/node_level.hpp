// runtime/node_level.hpp — topology::node: shared memory inside a node,
// Suzuki–Kasami between nodes.
//
// Contract. The level (runtime/level.hpp) of a mutex whose ranks share their
// node's protocol::cohort, in the mutex's slot of shared memory
// (runtime/node_slot.hpp). Every transition of the cohort runs under the slot's
// spinlock, by whichever rank of the node carries the event: its own lock,
// try_lock, withdraw or unlock, a REQUEST it received as the node's leader, the
// token it received as the rank the node asked it for. Under the spinlock the rank
// also packs an outgoing token (LN, queue, payload: all in shared memory) into a
// send buffer; the MPI sends follow after the spinlock is released. While the node
// holds the token and no other node is known to wait, taking a ticket and leaving
// the critical section need no spinlock (protocol::cohort::lock_unlocked and
// leave_unlocked: a compare-and-swap on the cohort's gate each). A waiting rank
// watches the gate until it serves its ticket.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/cohort.hpp"
#include "core/token_layout.hpp"
#include "runtime/level.hpp"
#include "runtime/node_slot.hpp"

namespace tally::detail {

class node_level final : public level {
 public:
  node_level(transport& t, int rank) : t_(t), rank_(rank) {}
  // Collective: takes and initializes the mutex's slot (node_slot::open).
  void open(std::shared_ptr<node_arena> arena, std::uint32_t id, MPI_Comm comm, std::uint32_t pass_bound, int owner,
            std::size_t payload_bytes, std::span<const std::byte> initial_payload, const node_arena::waiter& wait) {
    slot_.open(std::move(arena), id, comm, rank_, pass_bound, owner, payload_bytes, initial_payload, wait);
  }
  // The transport's shape for this topology: a token between nodes, node leaders
  // as peers (open() first).
  void describe(transport::shape& sh) const;

  bool start(const char* call) override;
  bool entered() override;
  bool waiting() const override;
  bool withdraw(const char* call) override;
  bool try_enter(const char* call) override;
  void leave(const char* call) override;
  void abandon() noexcept override;
  void before_test() override;
  void deliver(const transport::arrivals& a) override;
  bool needs_progress(bool after_event) const noexcept override;
  // Only the leader receives REQUESTs, and only from other nodes.
  bool receives() const noexcept override { return slot_.leader() && slot_.nodes() > 1; }
  bool waiter_known() const noexcept override { return false; }
  bool listens() const noexcept override { return receives(); }
  std::uint32_t looks_per_step() const noexcept override { return slot_.nodes() > 1 ? 8 : 128; }
  bool drained(std::uint64_t total) const override;
  void close() noexcept override;
  std::span<std::byte> payload() noexcept override { return slot_.payload(); }
  tally::stats stats() const override;

 private:
  // Runs one cohort event under the spinlock: grants and the token packed there,
  // sends after it. A non-ok status throws unless it is `allowed`.
  template <class Event>
  protocol::cohort_step event(Event&& e, const char* call, protocol::status allowed = protocol::status::ok);
  // Only a progress step of this rank can answer: the node's pending request named
  // it (the token comes here, on the mutex's own receive). The leader's REQUESTs
  // need no watching of the mutex: the channel listens for them. Spinlock held.
  bool needed_here() const noexcept { return named(); }
  // The node's pending request names this rank: the token will come here. Spinlock held.
  bool named() const noexcept;

  transport& t_;
  int rank_;
  // node_slot's methods are const where they only look, but the spinlock is taken
  // by looks too: mutable.
  mutable node_slot slot_;
  bool in_cs_ = false;                         // this rank entered and has not left
  bool waiting_ = false;                       // this rank holds a ticket not yet served
  bool needed_ = false;                        // needed_here() at this rank's last cohort event
  std::vector<std::int32_t> bcast_order_;      // the next broadcast's peers, in order
  std::vector<protocol::rank_t> spare_queue_;  // a received token's queue
  std::array<std::int32_t, protocol::node_token::route> spare_route_{};  // a received token's trail
  tally::stats final_{};  // the counters, kept when the slot is let go of
};

}  // namespace tally::detail
