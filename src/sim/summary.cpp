// sim/summary.cpp — raw measurements to the report's figures (sim/run.hpp).
#include <algorithm>
#include <cmath>

#include "sim/run.hpp"

namespace tally::sim {

ps_t percentile(std::vector<ps_t>& v, double p) {
  if (v.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const auto k = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::uint64_t max_bypass(const std::vector<ps_t>& issued) {
  // Inversions per element, with a Fenwick tree over the ranks of the issue times.
  std::vector<ps_t> times(issued);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::vector<std::uint64_t> tree(times.size() + 1, 0);
  std::uint64_t best = 0, seen = 0;
  for (ps_t t : issued) {
    const auto rank = static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin()) + 1;
    std::uint64_t at_or_before = 0;  // earlier entries issued at or before t
    for (std::size_t i = rank; i > 0; i -= i & (~i + 1)) at_or_before += tree[i];
    best = std::max(best, seen - at_or_before);
    for (std::size_t i = rank; i < tree.size(); i += i & (~i + 1)) ++tree[i];
    ++seen;
  }
  return best;
}

double jain(const std::vector<double>& x) {
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  if (x.empty() || sq == 0) return 1.0;
  return sum * sum / (static_cast<double>(x.size()) * sq);
}

namespace {
double mean(const std::vector<ps_t>& v) {
  if (v.empty()) return 0;
  long double s = 0;
  for (ps_t x : v) s += static_cast<long double>(x);
  return static_cast<double>(s / static_cast<long double>(v.size()));
}
}  // namespace

summary summarize(raw_results r, const workload& w) {
  summary s;
  s.entries = r.entries;
  s.end_time = r.end_time;
  const ps_t span = r.end_time - r.first_entry;
  s.cs_per_second = span > 0 ? static_cast<double>(r.entries) * 1e12 / static_cast<double>(span) : 0;
  s.messages = r.messages;
  s.bytes = r.bytes;
  for (std::size_t k = 0; k < msg_kinds; ++k) {
    s.total_messages += r.messages[k];
    s.total_bytes += r.bytes[k];
  }
  s.max_bypass = max_bypass(r.issue_times);
  s.wait_mean = mean(r.waits);
  s.wait_max = r.waits.empty() ? 0 : *std::max_element(r.waits.begin(), r.waits.end());
  s.wait_p50 = percentile(r.waits, 50);
  s.wait_p99 = percentile(r.waits, 99);
  s.handoffs = r.handoffs.size();
  s.handoff_mean = mean(r.handoffs);
  s.handoff_p50 = percentile(r.handoffs, 50);
  s.handoff_p99 = percentile(r.handoffs, 99);
  std::vector<double> entries, waits;
  for (std::int32_t i : w.active) {
    const auto k = static_cast<std::size_t>(i);
    entries.push_back(static_cast<double>(r.entries_per_rank[k]));
    if (r.entries_per_rank[k] > 0)
      waits.push_back(static_cast<double>(r.wait_sum_per_rank[k]) / static_cast<double>(r.entries_per_rank[k]));
  }
  s.jain_entries = jain(entries);
  s.jain_wait = jain(waits);
  s.events = r.events;
  return s;
}

}  // namespace tally::sim
