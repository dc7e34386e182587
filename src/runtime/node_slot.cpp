#include "runtime/node_slot.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

namespace tally::detail {

namespace {

constexpr std::size_t line = node_arena::line;
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

}  // namespace

void node_slot::open(std::shared_ptr<node_arena> arena, std::uint32_t id, MPI_Comm comm, int rank,
                     std::uint32_t pass_bound, int owner, std::size_t payload_bytes,
                     std::span<const std::byte> initial_payload, const node_arena::waiter& wait) {
  arena_ = std::move(arena);
  // The slot: the spinlock word with the cohort right after it (a local event then
  // finds the word and the fields it changes on one line), the gate's line, each
  // local rank's ticket and counters on lines of their own, the payload. (The
  // cohort's layout has room for the gate, the tickets and the counters too, unused
  // here.)
  layout_ = protocol::cohort_layout::of(nodes(), locals());
  const std::size_t cohort_at = sizeof(std::uint64_t);
  const std::size_t gate_at = round_up(cohort_at + layout_.bytes);
  const std::size_t ranks_at = gate_at + line;
  const std::size_t counters_in = sizeof(std::uint64_t);  // after the ticket
  const std::size_t per_rank = round_up(counters_in + sizeof(protocol::counters));
  const std::size_t payload_at = ranks_at + per_rank * static_cast<std::size_t>(locals());
  const std::size_t bytes = payload_at + round_up(std::max<std::size_t>(payload_bytes, 1));
  std::string why;
  base_ = arena_->slot(id, bytes, why);
  try {
    node_arena::agree(comm, base_ ? node_arena::ok : node_arena::window, why, wait);
  } catch (...) {
    arena_->settle(false);
    throw;
  }
  arena_->settle(true);
  payload_ = std::span<std::byte>(base_ + payload_at, payload_bytes);
  protocol::cohort_view view = protocol::cohort_view::at(base_ + cohort_at, layout_);
  view.gate = reinterpret_cast<std::uint64_t*>(base_ + gate_at);
  view.tickets = reinterpret_cast<std::uint32_t*>(base_ + ranks_at);
  view.ticket_stride = per_rank / sizeof(std::uint32_t);
  view.ctr = reinterpret_cast<protocol::counters*>(base_ + ranks_at + counters_in);
  view.ctr_stride = per_rank;
  build_core([&] {
    cohort_.emplace(protocol::cohort_shape{nodes(), node(), locals(), pass_bound}, view, arena_->node_of(),
                    arena_->members());
  });

  // The leader initializes; then the initial owner puts the payload in; each is
  // visible to the node after the barrier that follows it.
  if (local() == 0) {
    std::memset(base_, 0, bytes);
    cohort_->reset(node_of()[static_cast<std::size_t>(owner)]);
  }
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(arena_->comm(), &req), "MPI_Ibarrier(node)");
  wait(req, "MPI_Ibarrier(node)");
  if (rank == owner && !initial_payload.empty()) std::memcpy(payload_.data(), initial_payload.data(), payload_.size());
  check_mpi(MPI_Ibarrier(arena_->comm(), &req), "MPI_Ibarrier(node)");
  wait(req, "MPI_Ibarrier(node)");
}

void node_slot::close() noexcept {
  cohort_.reset();
  base_ = nullptr;
  arena_.reset();
}

std::vector<int> node_slot::other_leaders() const {
  std::vector<int> out;
  for (std::int32_t d = 1; d < nodes(); ++d) out.push_back(leaders()[static_cast<std::size_t>((node() + d) % nodes())]);
  return out;
}

void node_slot::lock() noexcept {
  std::atomic_ref<std::uint32_t> w = word_at(base_);
  // The first try takes the line for writing at once (a read first would fetch it
  // twice when it is free, the common case); then spin on reads.
  if (w.exchange(1, std::memory_order_acquire) == 0) return;
  for (int spin = 0;; ++spin) {
    if (w.load(std::memory_order_relaxed) == 0 && w.exchange(1, std::memory_order_acquire) == 0) return;
    pause(spin);
  }
}

void node_slot::pause(int spin) noexcept {
  if (spin < spins_before_yield)
    cpu_relax();
  else
    std::this_thread::yield();
}

void node_slot::unlock() noexcept { word_at(base_).store(0, std::memory_order_release); }

}  // namespace tally::detail
