// runtime/node_slot.hpp — one mutex's shared memory in the node topology.
//
// Contract. One slot per mutex in its channel's node arena (runtime/node_arena.hpp),
// shared by the ranks of a node, holds:
//   - a spinlock that serializes the transitions of the node's protocol::cohort
//     (all but lock_unlocked and leave_unlocked), whichever rank of the node
//     carries them out, followed at once by the cohort's state (core/cohort.hpp);
//   - the cohort's gate, on a cache line of its own: the turn, the next ticket and
//     the token bit, which waiting ranks watch and a locking or leaving rank
//     changes with one compare-and-swap;
//   - each local rank's ticket and counters, on cache lines of their own (the
//     ticket is written when the rank takes one and when a withdrawal ahead of it
//     moves it up, and read by the rank as it waits; the counters are the rank's
//     own, written by it alone);
//   - the payload. It and the cohort's state belong to the rank in the critical
//     section, else to the spinlock's holder.
// Nothing under the spinlock calls MPI or blocks: a transition, the token packed
// into a send buffer. Across processes the atomics are C++ atomics on the shared
// mapping (lock-free, address-free), so no MPI synchronization is involved.
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
  // One step of a spin, the spin-th: a pause, or past a few hundred the core given
  // away (more ranks than cores: the rank awaited may need it).
  static void pause(int spin) noexcept;

 private:
  std::shared_ptr<node_arena> arena_;
  std::byte* base_ = nullptr;
  protocol::cohort_layout layout_{};
  std::optional<protocol::cohort> cohort_;
  std::span<std::byte> payload_;
};

}  // namespace tally::detail
