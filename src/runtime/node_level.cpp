#include "runtime/node_level.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

namespace tally::detail {

namespace {

// One cache line per contended word (128: adjacent-line prefetchers pair lines).
constexpr std::size_t line = 128;
constexpr std::size_t round_up(std::size_t x) noexcept { return (x + line - 1) / line * line; }

// Spins this often before yielding the core (more ranks than cores).
constexpr int spins_before_yield = 256;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

std::atomic_ref<std::uint32_t> word_at(std::byte* p) noexcept {
  return std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(p));
}
static_assert(std::atomic_ref<std::uint32_t>::is_always_lock_free,
              "the shared-memory spinlock needs lock-free 32-bit atomics");

// The steps of open() that can fail, agreed across the communicator.
enum step : int { ok = 0, split = 1, window = 2 };
const char* step_name(int s) {
  return s == split ? "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)" : "MPI_Win_allocate_shared";
}

}  // namespace

bool node_level::open(MPI_Comm comm, int rank, int n, std::uint32_t pass_bound, int owner,
                      std::size_t payload_bytes, std::span<const std::byte> initial_payload,
                      const waiter& wait, bool shared_only) {
  // Every step that can fail on some ranks only is followed by an agreement, so that
  // no rank is left waiting in a collective the others abandoned.
  std::string why;
  auto agree = [&](int failed_step) {
    int worst = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(&failed_step, &worst, 1, MPI_INT, MPI_MAX, comm, &req), "MPI_Iallreduce(topology)");
    wait(req, "MPI_Iallreduce(topology)");
    if (worst == ok) return;
    fail(errc::mpi, std::string("topology node: ") + step_name(worst) +
                        (failed_step ? " failed on this rank: " + why : " failed on another rank") +
                        "; use topology flat on this communicator");
  };
  auto attempt = [&](int rc, const char* what) {
    if (rc == MPI_SUCCESS) return true;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    why = std::string(what) + ": " + std::string(text, static_cast<std::size_t>(len));
    return false;
  };

  const bool split_ok = attempt(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node_comm_.out()), step_name(split));
  agree(split_ok ? ok : split);
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
  if (shared_only && nodes() == n) {  // every rank has its own node: nothing to share
    node_comm_.free("MPI_Comm_free(node)");
    leaders_.clear();
    node_of_.clear();
    members_.clear();
    return false;
  }

  // The window: the spinlock word with the cohort right after it (a local event
  // then finds the word and the fields it changes on one line), a grant line per
  // local rank, the payload.
  layout_ = protocol::cohort_layout::of(nodes(), locals);
  const std::size_t cohort_at = sizeof(std::uint64_t);
  grants_at_ = round_up(cohort_at + layout_.bytes);
  const std::size_t payload_at = grants_at_ + line * static_cast<std::size_t>(locals);
  const std::size_t bytes = payload_at + round_up(std::max<std::size_t>(payload_bytes, 1));
  void* mine = nullptr;
  const bool win_ok = attempt(MPI_Win_allocate_shared(static_cast<MPI_Aint>(local_ == 0 ? bytes : 0), 1, MPI_INFO_NULL,
                                                      node_comm_.get(), &mine, win_.out()),
                              step_name(window));
  agree(win_ok ? ok : window);
  MPI_Aint size = 0;
  int unit = 0;
  void* base = nullptr;
  check_mpi(MPI_Win_shared_query(win_.get(), 0, &size, &unit, &base), "MPI_Win_shared_query");
  base_ = static_cast<std::byte*>(base);
  payload_ = std::span<std::byte>(base_ + payload_at, payload_bytes);
  cohort_.emplace(protocol::cohort_shape{nodes(), node_, locals, pass_bound},
                  protocol::cohort_view::at(base_ + cohort_at, layout_), node_of_, members_);

  // The leader initializes; then the initial owner puts the payload in; each is
  // visible to the node after the barrier that follows it.
  if (local_ == 0) {
    std::memset(base_, 0, bytes);
    cohort_->reset(node_of_[static_cast<std::size_t>(owner)]);
  }
  check_mpi(MPI_Ibarrier(node_comm_.get(), &req), "MPI_Ibarrier(node)");
  wait(req, "MPI_Ibarrier(node)");
  if (rank == owner && !initial_payload.empty())
    std::memcpy(payload_.data(), initial_payload.data(), payload_.size());
  check_mpi(MPI_Ibarrier(node_comm_.get(), &req), "MPI_Ibarrier(node)");
  wait(req, "MPI_Ibarrier(node)");
  return true;
}

void node_level::close() {
  cohort_.reset();
  base_ = nullptr;
  win_.free("MPI_Win_free(node)");
  node_comm_.free("MPI_Comm_free(node)");
}

std::vector<int> node_level::other_leaders() const {
  std::vector<int> out;
  for (std::int32_t d = 1; d < nodes(); ++d) out.push_back(leaders_[static_cast<std::size_t>((node_ + d) % nodes())]);
  return out;
}

void node_level::lock() noexcept {
  std::atomic_ref<std::uint32_t> w = word_at(base_);
  // The first try takes the line for writing at once (a read first would fetch it
  // twice when it is free, the common case); then spin on reads.
  if (w.exchange(1, std::memory_order_acquire) == 0) return;
  for (int spin = 0;; ++spin) {
    if (w.load(std::memory_order_relaxed) == 0 && w.exchange(1, std::memory_order_acquire) == 0) return;
    if (spin < spins_before_yield)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void node_level::unlock() noexcept { word_at(base_).store(0, std::memory_order_release); }

void node_level::grant(std::int32_t i) noexcept {
  word_at(base_ + grants_at_ + line * static_cast<std::size_t>(i)).store(1, std::memory_order_release);
}

bool node_level::take_grant() noexcept {
  std::atomic_ref<std::uint32_t> w = word_at(base_ + grants_at_ + line * static_cast<std::size_t>(local_));
  if (w.load(std::memory_order_acquire) == 0) return false;
  w.store(0, std::memory_order_relaxed);
  return true;
}

}  // namespace tally::detail
