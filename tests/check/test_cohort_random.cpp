// Randomized schedules of the two-level lock (check::cohort_world) on shapes beyond
// the model check: up to 8 nodes of up to 8 ranks, uneven node sizes, B from 1 to
// 4, REQUESTs delivered in any order, withdrawals. Each run takes random steps,
// then drains fairly (no new locks, every message delivered, every CS left) until
// quiescent. Checked after every step: violation() (C1-C10), counter_mismatch()
// and regression_from(). At the end: every lock() that was not withdrawn entered;
// every node-level acquisition cost exactly K-1 REQUESTs and at most one token
// (sum of tokens received <= broadcasts); local handoffs sent = received. Runs are
// reproducible from their seed; a failure prints the seed and the run as a trace.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "check/cohort_world.hpp"
#include "seeds.hpp"

namespace {

using tally::check::cohort_world;
using tally::protocol::rank_t;
using phase = cohort_world::phase;

struct totals {
  std::uint64_t runs = 0, steps = 0, entries = 0, handoffs = 0, bound_releases = 0, tokens = 0;
};

class random_run {
 public:
  random_run(std::uint64_t seed, std::int32_t max_nodes, std::int32_t max_per_node)
      : rng_(seed), w_(make(max_nodes, max_per_node)) {
    trace_ << "cohort";
    for (std::size_t k = 0; k < sizes_.size(); ++k) trace_ << (k ? "," : " ") << sizes_[k];
    trace_ << " bound " << w_.pass_bound() << " owner " << owner_ << "\n";
    locks_.assign(static_cast<std::size_t>(w_.ranks()), 0);
    withdrawn_.assign(static_cast<std::size_t>(w_.ranks()), 0);
  }

  std::optional<std::string> run(totals& t) {
    const std::uint64_t length = 30 * static_cast<std::uint64_t>(w_.ranks()) + pick(300);
    for (std::uint64_t s = 0; s < length; ++s)
      if (auto f = step(false, t)) return f;
    for (std::uint64_t guard = 0; !w_.quiescent(); ++guard) {
      if (guard > 1'000'000) return "drain did not end";
      if (auto f = step(true, t)) return f;
    }
    std::uint64_t entries = 0, broadcasts = 0, tokens_received = 0;
    for (std::int32_t k = 0; k < w_.nodes(); ++k)
      for (std::int32_t i = 0; i < sizes_[static_cast<std::size_t>(k)]; ++i) {
        const auto& c = w_.node(k).counters_of(i);
        const auto r = static_cast<std::size_t>(w_.global(k, i).value());
        if (c.acquisitions + withdrawn_[r] != locks_[r])
          return "rank " + std::to_string(r) + ": " + std::to_string(locks_[r]) + " locks, " +
                 std::to_string(c.acquisitions) + " entries, " + std::to_string(withdrawn_[r]) + " withdrawn";
        entries += c.acquisitions;
        broadcasts += c.broadcasts;
        tokens_received += c.tokens_received;
        t.handoffs += c.local_handoffs_received;
        t.bound_releases += c.bound_releases;
      }
    if (tokens_received > broadcasts)
      return "more tokens received (" + std::to_string(tokens_received) + ") than node requests (" +
             std::to_string(broadcasts) + ")";
    t.entries += entries;
    t.tokens += tokens_received;
    ++t.runs;
    return std::nullopt;
  }

  std::string trace() const { return trace_.str(); }

 private:
  std::uint64_t pick(std::uint64_t k) { return rng_() % k; }

  cohort_world make(std::int32_t max_nodes, std::int32_t max_per_node) {
    const auto k = 1 + static_cast<std::int32_t>(pick(static_cast<std::uint64_t>(max_nodes)));
    for (std::int32_t i = 0; i < k; ++i)
      sizes_.push_back(1 + static_cast<std::int32_t>(pick(static_cast<std::uint64_t>(max_per_node))));
    owner_ = static_cast<std::int32_t>(pick(static_cast<std::uint64_t>(k)));
    return cohort_world(sizes_, owner_, 1 + static_cast<std::uint32_t>(pick(4)));
  }

  std::optional<std::string> step(bool draining, totals& t) {
    std::vector<std::int32_t> idle, waiting, in_cs;
    for (std::int32_t r = 0; r < w_.ranks(); ++r) {
      const phase p = w_.phase_of(rank_t(r));
      (p == phase::idle ? idle : p == phase::waiting ? waiting : in_cs).push_back(r);
    }
    const std::uint64_t weight[5] = {draining || idle.empty() ? 0u : 12u, draining || waiting.empty() ? 0u : 1u,
                                     w_.pending().empty() ? 0u : 10u, w_.token_in_flight() ? 6u : 0u,
                                     in_cs.empty() ? 0u : 8u};
    std::uint64_t sum = 0;
    for (std::uint64_t x : weight) sum += x;
    if (sum == 0) return std::nullopt;
    std::uint64_t roll = pick(sum);
    int kind = 0;
    while (roll >= weight[kind]) roll -= weight[kind++];
    const cohort_world before = w_;
    tally::check::verdict v;
    std::ostringstream line;
    switch (kind) {
      case 0: {
        const std::int32_t r = idle[pick(idle.size())];
        ++locks_[static_cast<std::size_t>(r)];
        line << "request " << r;
        v = w_.request(rank_t(r));
        break;
      }
      case 1: {
        const std::int32_t r = waiting[pick(waiting.size())];
        ++withdrawn_[static_cast<std::size_t>(r)];
        line << "withdraw " << r;
        v = w_.withdraw(rank_t(r));
        break;
      }
      case 2: {
        const auto m = w_.pending()[pick(w_.pending().size())];
        line << "deliver " << m.requester.value() << " " << m.to << " " << m.seq.value();
        v = w_.deliver(m.requester, m.to, m.seq);
        break;
      }
      case 3:
        line << "token";
        v = w_.deliver_token();
        break;
      default: {
        const std::int32_t r = in_cs.front();
        line << "exit " << r;
        v = w_.exit(rank_t(r));
      }
    }
    trace_ << line.str() << "\n";
    ++t.steps;
    if (!v) return "step refused: " + v.reason;
    if (auto f = w_.violation()) return "invariant broken: " + *f;
    if (auto f = w_.counter_mismatch()) return "counters: " + *f;
    if (auto f = w_.regression_from(before)) return "monotonicity broken: " + *f;
    return std::nullopt;
  }

  std::mt19937_64 rng_;
  std::vector<std::int32_t> sizes_;
  std::int32_t owner_ = 0;
  cohort_world w_;
  std::vector<std::uint64_t> locks_, withdrawn_;
  std::ostringstream trace_;
};

void run_seeds(std::uint64_t first, std::uint64_t count, std::int32_t max_nodes, std::int32_t max_per_node) {
  totals t;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    random_run r(seed, max_nodes, max_per_node);
    if (auto f = r.run(t)) FAIL() << "seed " << seed << ": " << *f << "\nthe run:\n" << r.trace();
  }
  std::cout << "cohort random schedules: " << t.runs << " runs, " << t.steps << " steps, " << t.entries << " entries, "
            << t.handoffs << " local handoffs, " << t.bound_releases << " bound releases, " << t.tokens << " tokens\n";
  // Nothing vacuous: every kind of outcome happened.
  EXPECT_EQ(t.runs, count);
  EXPECT_GT(t.handoffs, 0u);
  EXPECT_GT(t.bound_releases, 0u);
  EXPECT_GT(t.tokens, 0u);
}

TEST(CohortRandomSchedules, SmallShapes) { run_seeds(1, 2000 * tally::check::seed_scale(), 3, 3); }
TEST(CohortRandomSchedules, LargeShapes) { run_seeds(50'001, 1500 * tally::check::seed_scale(), 8, 8); }

}  // namespace
