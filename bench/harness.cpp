#include "harness.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <cstddef>
#include <set>
#include <thread>
#include <string>
#include <utility>
#include <vector>

namespace bench {
namespace {

world_info g_world;
floor_value g_floor;

// Nearest-rank percentile of sorted values; NaN if empty.
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const auto n = static_cast<double>(sorted.size());
  const auto k = static_cast<std::size_t>(std::max(1.0, std::ceil(q * n)));
  return sorted[std::min(k, sorted.size()) - 1];
}

}  // namespace

const world_info& world() noexcept { return g_world; }

void init_world() {
  // The harness's communicator keeps MPI_ERRORS_ARE_FATAL: a failure of the
  // harness itself aborts the job, so its calls need no return-code checks.
  MPI_Comm_dup(MPI_COMM_WORLD, &g_world.comm);
  MPI_Comm_rank(g_world.comm, &g_world.rank);
  MPI_Comm_size(g_world.comm, &g_world.size);
  MPI_Comm node;
  MPI_Comm_split_type(g_world.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  // Probe a shared window with errors returned, then agree: a transport without
  // shared windows (osc/ucx or osc/pt2pt alone) fails on some or all ranks.
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  MPI_Win win = MPI_WIN_NULL;
  void* base = nullptr;
  int works = MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &base, &win) == MPI_SUCCESS;
  if (win != MPI_WIN_NULL) MPI_Win_free(&win);
  int all = 0;
  MPI_Allreduce(&works, &all, 1, MPI_INT, MPI_LAND, g_world.comm);
  g_world.shared_windows = all != 0;
  MPI_Comm_free(&node);
  std::vector<char> names(static_cast<std::size_t>(g_world.size) * MPI_MAX_PROCESSOR_NAME, '\0');
  int len = 0;
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Get_processor_name(mine, &len);
  MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, g_world.comm);
  std::set<std::string> hosts;
  for (int r = 0; r < g_world.size; ++r)
    hosts.emplace(names.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  g_world.nodes = static_cast<int>(hosts.size());
  traffic::exclude(g_world.comm);
}

void finalize_world() noexcept {
  if (g_world.comm != MPI_COMM_NULL) MPI_Comm_free(&g_world.comm);
}

double clock_read_ns() noexcept {
  constexpr int reads = 100000;
  const ns_t t0 = now_ns();
  for (int i = 0; i < reads; ++i) benchmark::DoNotOptimize(now_ns());
  return static_cast<double>(now_ns() - t0) / reads;
}

void spin_for(ns_t ns) noexcept {
  if (ns <= 0) return;
  const ns_t until = now_ns() + ns;
  while (now_ns() < until) {
  }
}

void send_signal(int to, int tag) { MPI_Send(nullptr, 0, MPI_BYTE, to, tag, world().comm); }

std::int64_t batch_iterations(const benchmark::State& state, std::int64_t unit, std::int64_t cap) {
  const auto want = static_cast<std::int64_t>(state.max_iterations);
  const std::int64_t rounded = (want + unit - 1) / unit * unit;
  return std::clamp(rounded, unit, std::max(unit, cap / unit * unit));
}

floor_value& measured_floor() noexcept { return g_floor; }

namespace {

constexpr MPI_Aint cache_line = 64;

// Runs `body(lines, rank)` on ranks 0 and 1, over `lines` cache lines of an
// MPI_Win_allocate_shared window (zeroed, each rank's first access after a barrier),
// and returns rank 0's result on every rank of world().comm (collective). NaN
// where line_floor_ns says.
template <class Body>
double on_shared_pair(int lines, Body body) {
  const world_info& w = world();
  double out = NAN;
  if (!w.shared_windows || w.size < 2) return out;
  MPI_Comm local = MPI_COMM_NULL;  // this rank's node, to count its ranks
  MPI_Comm_split_type(w.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int on_node = 0;
  MPI_Comm_size(local, &on_node);
  MPI_Comm_free(&local);
  MPI_Comm pair = MPI_COMM_NULL, node = MPI_COMM_NULL;
  MPI_Comm_split(w.comm, w.rank < 2 ? 0 : MPI_UNDEFINED, w.rank, &pair);
  if (pair == MPI_COMM_NULL) {
    MPI_Bcast(&out, 1, MPI_DOUBLE, 0, w.comm);
    return out;
  }
  MPI_Comm_split_type(pair, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int together = 0;
  MPI_Comm_size(node, &together);
  // Only where each rank of the node can have a core (two spinning ranks that share
  // one would measure the scheduler's time slice, not the cache).
  const unsigned cores = std::thread::hardware_concurrency();
  int fits = together == 2 && (cores == 0 || static_cast<unsigned>(on_node) <= cores) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, pair);
  if (fits) {
    const MPI_Aint bytes = cache_line * lines;
    MPI_Win win = MPI_WIN_NULL;
    void* mine = nullptr;
    MPI_Win_allocate_shared(w.rank == 0 ? bytes : 0, 1, MPI_INFO_NULL, node, &mine, &win);
    MPI_Aint size = 0;
    int unit = 0;
    void* base = nullptr;
    MPI_Win_shared_query(win, 0, &size, &unit, &base);
    auto* at = static_cast<std::byte*>(base);
    if (w.rank == 0) std::memset(at, 0, static_cast<std::size_t>(bytes));
    MPI_Barrier(node);
    out = body(at, w.rank);
    MPI_Barrier(node);
    MPI_Win_free(&win);
  }
  MPI_Comm_free(&node);
  MPI_Comm_free(&pair);
  MPI_Bcast(&out, 1, MPI_DOUBLE, 0, w.comm);
  return out;
}

std::atomic_ref<int> word_at(std::byte* p) noexcept { return std::atomic_ref<int>(*reinterpret_cast<int*>(p)); }

// Spins until `flag` holds `value`, yielding after many spins (a core taken away
// meanwhile must not stall it).
void await(std::atomic_ref<int> flag, int value) noexcept {
  for (unsigned spin = 0; flag.load(std::memory_order_acquire) != value; ++spin)
    if (spin > (1u << 16)) std::this_thread::yield();
}

}  // namespace

double line_floor_ns(int round_trips) {
  return on_shared_pair(2, [round_trips](std::byte* lines, int rank) {
    // Each line written by one rank only: its own flag, read by the other.
    const std::atomic_ref<int> ping = word_at(lines), pong = word_at(lines + cache_line);
    const ns_t t0 = now_ns();
    for (int i = 1; i <= round_trips; ++i) {
      if (rank == 0) {
        ping.store(i, std::memory_order_release);
        await(pong, i);
      } else {
        await(ping, i);
        pong.store(i, std::memory_order_release);
      }
    }
    return static_cast<double>(now_ns() - t0) / (2.0 * round_trips);
  });
}

double ticket_floor_ns(int entries) {
  return on_shared_pair(2, [entries](std::byte* lines, int) {
    // The next ticket on one line, the turn on another: unlock() stores the turn
    // without reading what a waiter wrote.
    const std::atomic_ref<int> next = word_at(lines), turn = word_at(lines + cache_line);
    auto entry = [&] {
      const int mine = next.fetch_add(1, std::memory_order_relaxed);
      await(turn, mine);
      turn.store(mine + 1, std::memory_order_release);
    };
    for (int i = 0; i < entries / 10; ++i) entry();
    const ns_t t0 = now_ns();
    for (int i = 0; i < entries; ++i) entry();
    return static_cast<double>(now_ns() - t0) / (2.0 * entries);
  });
}

void measurement::begin() noexcept {
  before_ = traffic::snapshot();
  traffic::reset_max();
  // No rank may start (and make another rank answer) before every rank has taken
  // its snapshot. Nothing is in flight here, so this barrier needs no polling.
  MPI_Barrier(world().comm);
}

void measurement::end() noexcept { after_ = traffic::snapshot(); }

double measurement::mean_ns(const benchmark::State& state) const noexcept {
  const auto it = static_cast<double>(state.iterations());
  return it > 0 ? static_cast<double>(time_ns_) / it : NAN;
}

measurement::gathered measurement::gather(std::int64_t per_rank_batch) const {
  const world_info& w = world();
  const bool stamps = per_rank_batch > 0;
  const int mine = static_cast<int>(stamps ? stamps_.size() : samples_.size());
  std::vector<int> counts(static_cast<std::size_t>(w.size)), displs(counts.size());
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, w.comm);
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  gathered out;
  if (!stamps) {
    if (w.rank == 0) out.samples.resize(static_cast<std::size_t>(total));
    MPI_Gatherv(samples_.data(), mine, MPI_DOUBLE, out.samples.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
                w.comm);
    return out;
  }
  std::vector<ns_t> all(w.rank == 0 ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(stamps_.data(), mine, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, 0, w.comm);
  if (w.rank != 0) return out;

  // Every rank took the same batches of per_rank_batch entries; batch b of rank r
  // is all[displs[r] + b * per_rank_batch, ... + per_rank_batch).
  const auto e = static_cast<std::size_t>(per_rank_batch);
  const auto shortest = *std::min_element(counts.begin(), counts.end());
  const std::size_t batches = static_cast<std::size_t>(shortest) / e;
  std::vector<std::pair<ns_t, std::size_t>> batch;  // (entry time, rank)
  for (std::size_t b = 0; b < batches; ++b) {
    if (w.nodes == 1) {
      // One steady clock for all ranks: merge the batch's entries of every rank
      // and take the gaps between consecutive entries anywhere.
      batch.clear();
      for (std::size_t r = 0; r < counts.size(); ++r)
        for (std::size_t k = 0; k < e; ++k) batch.emplace_back(all[static_cast<std::size_t>(displs[r]) + b * e + k], r);
      std::sort(batch.begin(), batch.end());
      for (std::size_t k = 1; k < batch.size(); ++k) {
        const auto gap = static_cast<double>(batch[k].first - batch[k - 1].first);
        out.samples.push_back(gap);
        if (batch[k].second != batch[k - 1].second) out.handoffs.push_back(gap);
      }
    } else {
      // Clocks of different nodes are not comparable: a rank's own entry-to-entry
      // interval spans one entry of every rank under fair contention; divide by n.
      for (std::size_t r = 0; r < counts.size(); ++r) {
        const auto first = static_cast<std::size_t>(displs[r]) + b * e;
        for (std::size_t k = 1; k < e; ++k)
          out.samples.push_back(static_cast<double>(all[first + k] - all[first + k - 1]) / w.size);
      }
    }
  }
  return out;
}

double measurement::publish(benchmark::State& state, compare_to ref, std::int64_t per_rank_batch) {
  const world_info& w = world();
  const traffic::counts d = after_ - before_;
  const std::uint64_t local[] = {entries_,
                                 d.messages(),
                                 d.bytes(),
                                 d.p2p,
                                 d.rma,
                                 d.rma_fetch,
                                 d.rma_sync,
                                 static_cast<std::uint64_t>(extra_ns_[release]),
                                 extra_n_[release],
                                 static_cast<std::uint64_t>(extra_ns_[away]),
                                 extra_n_[away]};
  constexpr int k = sizeof local / sizeof local[0];
  std::uint64_t sum[k];
  MPI_Allreduce(local, sum, k, MPI_UINT64_T, MPI_SUM, w.comm);
  std::uint64_t max_msg = traffic::max_p2p_bytes(), max_msg_all = 0;
  MPI_Allreduce(&max_msg, &max_msg_all, 1, MPI_UINT64_T, MPI_MAX, w.comm);
  gathered g = gather(per_rank_batch);
  if (w.rank != 0) return NAN;  // only rank 0 reports

  auto& c = state.counters;
  const auto entries = static_cast<double>(sum[0]);
  auto per_entry = [&](std::uint64_t v) { return entries > 0 ? static_cast<double>(v) / entries : NAN; };
  auto mean_of = [](std::uint64_t total, std::uint64_t n) {
    return static_cast<double>(total) / static_cast<double>(n);
  };
  c["ranks"] = w.size;
  c["entries"] = entries;
  c["msgs_per_entry"] = per_entry(sum[1]);
  c["bytes_per_entry"] = per_entry(sum[2]);
  c["p2p_per_entry"] = per_entry(sum[3]);
  c["rma_per_entry"] = per_entry(sum[4]);
  c["rma_fetch_per_entry"] = per_entry(sum[5]);
  c["rma_sync_per_entry"] = per_entry(sum[6]);
  c["max_msg_bytes"] = static_cast<double>(max_msg_all);
  if (sum[8] > 0) c["release_ns"] = mean_of(sum[7], sum[8]);
  if (sum[10] > 0) c["away_ns"] = mean_of(sum[9], sum[10]);

  const double mean = mean_ns(state);
  double sample_total = 0;
  for (double v : g.samples) sample_total += v;
  std::sort(g.samples.begin(), g.samples.end());
  const double p50 = percentile(g.samples, 0.50);
  c["mean_ns"] = mean;
  c["p50_ns"] = p50;
  c["p99_ns"] = percentile(g.samples, 0.99);
  c["samples"] = static_cast<double>(g.samples.size());
  // The mean of the very samples p50 and p99 come from (mean_ns is the rate:
  // Google Benchmark's time per iteration, batch boundaries included).
  if (!g.samples.empty()) c["sample_mean_ns"] = sample_total / static_cast<double>(g.samples.size());

  const floor_value& f = measured_floor();
  const bool have_floor = f.ranks == w.size && std::isfinite(f.one_way_ns);
  const double base = ref == compare_to::round_trip ? 2 * f.one_way_ns : f.one_way_ns;
  if (ref != compare_to::nothing && have_floor) {
    c["floor_ns"] = base;
    c["ratio_floor"] = mean / base;
  }
  if (per_rank_batch > 0) {
    c["clock_global"] = w.nodes == 1 ? 1 : 0;
    if (w.nodes == 1 && !g.samples.empty()) {
      double total = 0;
      for (double h : g.handoffs) total += h;
      std::sort(g.handoffs.begin(), g.handoffs.end());
      c["handoff_share"] = static_cast<double>(g.handoffs.size()) / static_cast<double>(g.samples.size());
      if (!g.handoffs.empty()) {
        const double hmean = total / static_cast<double>(g.handoffs.size());
        c["handoff_ns"] = hmean;
        c["handoff_p50_ns"] = percentile(g.handoffs, 0.50);
        c["handoff_p99_ns"] = percentile(g.handoffs, 0.99);
        if (have_floor) c["ratio_handoff"] = hmean / f.one_way_ns;
      }
    }
  }
  return p50;
}

}  // namespace bench
