// runtime/node_level.hpp — the node topology's shared memory (topology::node).
//
// Contract. One MPI shared-memory window per node (MPI_Comm_split_type with
// MPI_COMM_TYPE_SHARED, allocated by the node's leader, local rank 0) holds:
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
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/cohort.hpp"
#include "runtime/handles.hpp"

namespace tally::detail {

class node_level {
 public:
  // Waits for a nonblocking collective while the process keeps making progress.
  using waiter = std::function<void(MPI_Request&, const char*)>;

  node_level() = default;
  node_level(const node_level&) = delete;
  node_level& operator=(const node_level&) = delete;

  // Collective over `comm` (size n, this process rank `rank`): splits it by shared
  // memory, learns every rank's node, allocates and initializes the window (the
  // token idle on the node of `owner`, whose rank copies `initial_payload` in).
  // Every rank of comm either succeeds or throws the same tally::error (errc::mpi,
  // naming the step that failed on some rank). With `shared_only`, every rank
  // returns false, having allocated nothing, where no node holds two ranks.
  bool open(MPI_Comm comm, int rank, int n, std::uint32_t pass_bound, int owner, std::size_t payload_bytes,
            std::span<const std::byte> initial_payload, const waiter& wait, bool shared_only = false);
  // Collective over the node: frees the window and the node communicator.
  void close();

  bool is_open() const noexcept { return cohort_.has_value(); }
  protocol::cohort& cohort() noexcept { return *cohort_; }
  std::int32_t local() const noexcept { return local_; }
  std::int32_t locals() const noexcept { return static_cast<std::int32_t>(members_.size()); }
  std::int32_t node() const noexcept { return node_; }
  std::int32_t nodes() const noexcept { return static_cast<std::int32_t>(leaders_.size()); }
  bool leader() const noexcept { return local_ == 0; }
  // Leaders of the other nodes, starting after this node (REQUEST destinations).
  std::vector<int> other_leaders() const;
  // The position of node k (not this one) in other_leaders().
  std::size_t peer_index(std::int32_t k) const noexcept {
    return static_cast<std::size_t>((k - node_ - 1 + 2 * nodes()) % nodes());
  }
  // The leader (global rank) of every node; node k's ranks; each rank's node.
  const std::vector<int>& leaders() const noexcept { return leaders_; }
  const std::vector<std::int32_t>& node_of() const noexcept { return node_of_; }
  std::span<std::byte> payload() const noexcept { return payload_; }
  MPI_Comm comm() const noexcept { return node_comm_.get(); }

  void lock() noexcept;    // the spinlock; spins, then yields
  void unlock() noexcept;
  // Sets the grant flag of local rank i (spinlock held).
  void grant(std::int32_t i) noexcept;
  // True once: this rank's grant flag was set; it is cleared.
  bool take_grant() noexcept;

 private:
  comm_handle node_comm_;
  win_handle win_;
  std::byte* base_ = nullptr;
  std::size_t grants_at_ = 0;  // offset of local rank 0's grant line
  std::int32_t local_ = 0, node_ = 0;
  std::vector<std::int32_t> node_of_, members_;
  std::vector<int> leaders_;
  protocol::cohort_layout layout_{};
  std::optional<protocol::cohort> cohort_;
  std::span<std::byte> payload_;
};

}  // namespace tally::detail
