// runtime/node_arena.hpp — the node topology's shared memory for every mutex of a
// channel (runtime/channel.hpp).
//
// Contract. Built once per channel, collectively over its communicator: the split
// by shared memory (MPI_COMM_TYPE_SHARED, keyed by rank, so the lowest rank of a
// node is its leader, local rank 0) and every rank's node. Each mutex in the node
// topology takes a slot: `bytes` of shared memory (a multiple of 128) at a place
// fixed by its id, in a slab (an MPI_Win_allocate_shared window, allocated by the
// leader) shared by the mutexes whose slots have the same size. A slab is allocated
// by the first creation that needs it, collectively over the node, and kept until
// the arena dies with its channel (MPI_Win_free, collective over the node), so the
// k-th mutex allocates no window and no communicator. An id is taken only once its
// previous mutex is freed on every rank (channel.hpp), so a slot is never in two
// mutexes' use. Not thread-safe: creations on one communicator are ordered (MPI's
// rule for collectives), and only creation calls slot().
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/handles.hpp"

namespace tally::detail {

class node_arena {
 public:
  using waiter = std::function<void(MPI_Request&, const char*)>;
  static constexpr std::size_t line = 128;  // slots and their grant lines are multiples of it

  // Collective over comm (this process rank `rank` of n). Every rank succeeds or
  // throws the same tally::error (errc::mpi, naming the step that failed).
  node_arena(MPI_Comm comm, int rank, int n, const waiter& wait);
  ~node_arena();
  node_arena(const node_arena&) = delete;
  node_arena& operator=(const node_arena&) = delete;

  // The slot of mutex `id`, `bytes` long (a multiple of line), or null with `why`
  // filled if its slab was new and its allocation (collective over the node) failed.
  // settle() follows, after the creation agreed.
  std::byte* slot(std::uint32_t id, std::size_t bytes, std::string& why);
  // Keeps the slab slot() allocated (`ok`: every rank's slot() succeeded), or frees
  // it (collective over the node).
  void settle(bool keep) noexcept;
  // The steps that can fail on some ranks only.
  enum step : int {
    ok = 0,
    split = 1,
    window = 2
  };
  // Throws errc::mpi on every rank of comm if `failed` (a step, `why` its MPI error
  // here) is not ok on some rank: naming the worst step, here or on another rank.
  static void agree(MPI_Comm comm, step failed, const std::string& why, const waiter& wait);

  MPI_Comm comm() const noexcept { return node_comm_.get(); }
  std::int32_t local() const noexcept { return local_; }
  std::int32_t locals() const noexcept { return static_cast<std::int32_t>(members_.size()); }
  std::int32_t node() const noexcept { return node_; }
  std::int32_t nodes() const noexcept { return static_cast<std::int32_t>(leaders_.size()); }
  const std::vector<int>& leaders() const noexcept { return leaders_; }
  const std::vector<std::int32_t>& node_of() const noexcept { return node_of_; }
  const std::vector<std::int32_t>& members() const noexcept { return members_; }

 private:
  comm_handle node_comm_;
  std::int32_t local_ = 0, node_ = 0;
  std::vector<std::int32_t> node_of_, members_;
  std::vector<int> leaders_;
  struct slab {
    win_handle win;
    std::byte* base = nullptr;
    slab() noexcept {}
  };
  std::map<std::pair<std::size_t, std::uint32_t>, slab> slabs_;  // (slot bytes, slab number)
  std::pair<std::size_t, std::uint32_t> fresh_key_{};
  std::optional<slab> fresh_;  // allocated by slot(), not settled yet
};

}  // namespace tally::detail
