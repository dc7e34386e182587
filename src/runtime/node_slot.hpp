// runtime/node_slot.hpp — one mutex's shared memory in the node topology.
//
// Contract. One slot per mutex in its channel's node arena (runtime/node_arena.hpp),
// shared by the ranks of a node, holds:
//   - a spinlock that serializes every transition of the node's protocol::cohort,
//     whichever rank of the node carries it out, followed at once by the cohort's
//     state (core/cohort.hpp), so that a local lock or unlock finds both on one line;
//   - one grant flag per local rank (each on its own cache line): set, under the
//     spinlock, by the rank that hands the critical section to it; cleared by the
//     rank itself when it sees it. A waiting rank spins on its own line only;
//   - the payload. It and the cohort's state belong to the rank in the critical
//     section, else to the spinlock's holder.
// Nothing under the spinlock calls MPI or blocks: a transition, a grant, the token
// packed into a send buffer. Across processes the atomics are C++ atomics on the
// shared mapping (lock-free, address-free), so no MPI synchronization is involved.
// The node's leader receives its REQUESTs; the token goes to the rank that asked.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/cohort.hpp"
#include "runtime/handles.hpp"
#include "runtime/node_arena.hpp"

namespace tally::detail {

class node_slot {
 public:
  node_slot() = default;
  node_slot(const node_slot&) = delete;
  node_slot& operator=(const node_slot&) = delete;

  // Collective over `comm` (the arena's communicator; this process is rank `rank`):
  // takes the slot of mutex `id` in `arena` and initializes it (the token idle on
  // the node of `owner`, whose rank copies `initial_payload` in). Every rank of comm
  // either succeeds or throws the same tally::error (errc::mpi).
  void open(std::shared_ptr<node_arena> arena, std::uint32_t id, MPI_Comm comm, int rank, std::uint32_t pass_bound,
            int owner, std::size_t payload_bytes, std::span<const std::byte> initial_payload,
            const node_arena::waiter& wait);
  // Lets go of the slot (local: the arena keeps the memory for the id's next mutex).
  void close() noexcept;

  bool is_open() const noexcept { return cohort_.has_value(); }
  protocol::cohort& cohort() noexcept { return *cohort_; }
  std::int32_t local() const noexcept { return arena_->local(); }
  std::int32_t locals() const noexcept { return arena_->locals(); }
  std::int32_t node() const noexcept { return arena_->node(); }
  std::int32_t nodes() const noexcept { return arena_->nodes(); }
  bool leader() const noexcept { return local() == 0; }
  // Leaders of the other nodes, starting after this node (REQUEST destinations).
  std::vector<int> other_leaders() const;
  // The position of node k (not this one) in other_leaders().
  std::size_t peer_index(std::int32_t k) const noexcept {
    return static_cast<std::size_t>((k - node() - 1 + 2 * nodes()) % nodes());
  }
  // The leader (global rank) of every node; each rank's node.
  const std::vector<int>& leaders() const noexcept { return arena_->leaders(); }
  const std::vector<std::int32_t>& node_of() const noexcept { return arena_->node_of(); }
  std::span<std::byte> payload() const noexcept { return payload_; }

  void lock() noexcept;  // the spinlock; spins, then yields
  void unlock() noexcept;
  // Sets the grant flag of local rank i (spinlock held).
  void grant(std::int32_t i) noexcept;
  // True once: this rank's grant flag was set; it is cleared.
  bool take_grant() noexcept;

 private:
  std::shared_ptr<node_arena> arena_;
  std::byte* base_ = nullptr;
  std::size_t grants_at_ = 0;  // offset of local rank 0's grant line
  protocol::cohort_layout layout_{};
  std::optional<protocol::cohort> cohort_;
  std::span<std::byte> payload_;
};

}  // namespace tally::detail
