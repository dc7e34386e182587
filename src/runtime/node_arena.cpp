#include "runtime/node_arena.hpp"

#include <algorithm>
#include <string>

namespace tally::detail {

namespace {

// A slab holds this many bytes of slots (at least one slot).
constexpr std::size_t slab_target = std::size_t{256} * 1024;

std::string mpi_text(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(what) + ": " + std::string(text, static_cast<std::size_t>(len));
}

}  // namespace

void node_arena::agree(MPI_Comm comm, step failed, const std::string& why, const waiter& wait) {
  int mine = failed, worst = ok;
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm, &req), "MPI_Iallreduce(topology)");
  wait(req, "MPI_Iallreduce(topology)");
  if (worst == ok) return;
  const char* name = worst == split ? "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)" : "MPI_Win_allocate_shared";
  fail(errc::mpi, std::string("topology node: ") + name +
                      (failed != ok ? " failed on this rank: " + why : std::string(" failed on another rank")) +
                      "; use topology flat on this communicator");
}

node_arena::node_arena(MPI_Comm comm, int rank, int n, const waiter& wait) {
  const int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node_comm_.out());
  agree(comm, rc == MPI_SUCCESS ? ok : split, rc == MPI_SUCCESS ? std::string() : mpi_text(rc, "MPI_Comm_split_type"),
        wait);
  int local = 0, locals = 1;
  check_mpi(MPI_Comm_set_errhandler(node_comm_.get(), MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler(node)");
  check_mpi(MPI_Comm_rank(node_comm_.get(), &local), "MPI_Comm_rank(node)");
  check_mpi(MPI_Comm_size(node_comm_.get(), &locals), "MPI_Comm_size(node)");
  local_ = local;

  // Each rank's leader (the lowest rank of its node: the split is keyed by rank).
  int leader = rank;
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibcast(&leader, 1, MPI_INT, 0, node_comm_.get(), &req), "MPI_Ibcast(leader)");
  wait(req, "MPI_Ibcast(leader)");
  std::vector<int> leader_of(static_cast<std::size_t>(n));
  check_mpi(MPI_Iallgather(&leader, 1, MPI_INT, leader_of.data(), 1, MPI_INT, comm, &req), "MPI_Iallgather(leaders)");
  wait(req, "MPI_Iallgather(leaders)");
  leaders_ = leader_of;
  std::sort(leaders_.begin(), leaders_.end());
  leaders_.erase(std::unique(leaders_.begin(), leaders_.end()), leaders_.end());
  node_of_.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    node_of_[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(
        std::lower_bound(leaders_.begin(), leaders_.end(), leader_of[static_cast<std::size_t>(r)]) - leaders_.begin());
  node_ = node_of_[static_cast<std::size_t>(rank)];
  for (int r = 0; r < n; ++r)
    if (node_of_[static_cast<std::size_t>(r)] == node_) members_.push_back(r);
  if (static_cast<int>(members_.size()) != locals || members_[static_cast<std::size_t>(local_)] != rank)
    fail(errc::mpi, "topology node: the shared-memory split disagrees with the rank order");
}

node_arena::~node_arena() {
  for (auto& [key, s] : slabs_) s.win.reset();  // in key order: the same on every rank of the node
  node_comm_.reset();
}

std::byte* node_arena::slot(std::uint32_t id, std::size_t bytes, std::string& why) {
  const std::size_t per_slab = std::max<std::size_t>(1, slab_target / bytes);
  const std::pair<std::size_t, std::uint32_t> key{bytes, static_cast<std::uint32_t>(id / per_slab)};
  const std::size_t at = (id % per_slab) * bytes;
  if (const auto it = slabs_.find(key); it != slabs_.end()) return it->second.base + at;
  fresh_key_ = key;
  fresh_.emplace();
  void* mine = nullptr;
  const MPI_Aint size = local_ == 0 ? static_cast<MPI_Aint>(per_slab * bytes) : 0;
  const int rc = MPI_Win_allocate_shared(size, 1, MPI_INFO_NULL, node_comm_.get(), &mine, fresh_->win.out());
  if (rc != MPI_SUCCESS) {
    why = mpi_text(rc, "MPI_Win_allocate_shared");
    return nullptr;
  }
  MPI_Aint got = 0;
  int unit = 0;
  void* base = nullptr;
  const int q = MPI_Win_shared_query(fresh_->win.get(), 0, &got, &unit, &base);
  if (q != MPI_SUCCESS) {
    why = mpi_text(q, "MPI_Win_shared_query");
    return nullptr;
  }
  fresh_->base = static_cast<std::byte*>(base);
  return fresh_->base + at;
}

void node_arena::settle(bool keep) noexcept {
  if (!fresh_) return;
  if (keep) slabs_.emplace(fresh_key_, std::move(*fresh_));
  fresh_.reset();  // not kept: freed on every rank of the node that allocated it
}

}  // namespace tally::detail
