// Randomized schedules of check::world: thousands of seeded interleavings with up to
// 16 ranks, reordered deliveries, REQUESTs held back until long after they were
// served, withdraw and re-arm. Each run takes random steps, then drains the network
// fairly (every enabled step eventually taken) until quiescent. Checked:
//   - every step: world::violation(), regression_from(), and the message ledger:
//     the ranks' counters match each other and world::messages() (REQUESTs sent =
//     (n-1) * broadcasts = received + pending; tokens sent = received + in flight),
//     and no rank receives more tokens than it broadcast requests;
//   - every retained-token entry: enters at once and sends nothing;
//   - at the end: every lock() that was not withdrawn was served (entered), and
//     every broadcast got exactly one token, so a remote entry costs exactly n
//     messages (n-1 REQUESTs + 1 token); withdrawn requests are counted apart.
// Runs are reproducible from their seed (std::mt19937_64, no library
// distributions); a failure prints the seed and the run as a replay trace.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "check/replay.hpp"
#include "check/world.hpp"
#include "seeds.hpp"

namespace {

using tally::check::request_msg;
using tally::check::world;
using tally::protocol::mode;
using tally::protocol::rank_t;
using tally::protocol::seq_t;

// What the runs exercised, summed over runs; the test fails if any stays zero.
struct coverage {
  std::uint64_t runs = 0, steps = 0;
  std::uint64_t remote_entries = 0, local_entries = 0;
  std::uint64_t withdraws = 0, rearms = 0, withdrawn_served = 0;
  std::uint64_t held_back = 0;  // REQUESTs delivered after being held back
  std::uint64_t stale = 0;      // REQUESTs delivered after their request was served
  std::uint64_t overtaken = 0;  // REQUESTs delivered after a newer one from the sender

  void add(const coverage& o) {
    runs += o.runs, steps += o.steps, remote_entries += o.remote_entries;
    local_entries += o.local_entries, withdraws += o.withdraws, rearms += o.rearms;
    withdrawn_served += o.withdrawn_served, held_back += o.held_back, stale += o.stale;
    overtaken += o.overtaken;
  }
};

class random_run {
 public:
  random_run(std::uint64_t seed, std::int32_t min_n, std::int32_t max_n, bool record)
      : rng_(seed),
        n_(min_n + static_cast<std::int32_t>(pick(static_cast<std::uint64_t>(max_n - min_n + 1)))),
        owner_(static_cast<std::int32_t>(pick(static_cast<std::uint64_t>(n_)))),
        w_(n_, rank_t(owner_)),
        locks_(static_cast<std::size_t>(n_)),
        withdrawn_served_(static_cast<std::size_t>(n_)),
        record_(record) {
    if (record_) trace_ << "ranks " << n_ << " owner " << owner_ << "\n";
  }

  // Random phase, then a fair drain. Returns the first failure, or nullopt.
  std::optional<std::string> run() {
    const std::uint64_t length = 40 * static_cast<std::uint64_t>(n_) + pick(400);
    for (now_ = 0; now_ < length; ++now_) {
      const outcome o = random_step(false);
      if (o.failure) return o.failure;
      if (!o.taken) break;  // nothing enabled until held-back REQUESTs are released
    }
    return drain();
  }

  std::int32_t n() const { return n_; }
  std::string trace() const { return trace_.str(); }
  const coverage& cov() const { return cov_; }

 private:
  struct outcome {
    bool taken = true;                   // false: no step was enabled
    std::optional<std::string> failure;  // set: a check failed
  };

  std::uint64_t pick(std::uint64_t k) { return rng_() % k; }
  bool chance(std::uint64_t num, std::uint64_t den) { return pick(den) < num; }
  static std::uint64_t key(const request_msg& m) {
    return (static_cast<std::uint64_t>(m.from.value()) << 48) | (static_cast<std::uint64_t>(m.to.value()) << 32) |
           m.seq.value();
  }

  // A held-back REQUEST becomes deliverable when its time is up, or once a later
  // request of its sender has been served (it is then doubly stale).
  bool deliverable(const request_msg& m) const {
    const auto it = held_.find(key(m));
    return it == held_.end() || now_ >= it->second || seq_t(w_.token().ln[m.from.index()]) > m.seq;  // far below 2^32
  }

  // Takes one random enabled step and checks the result. While draining: no lock
  // or withdraw, and held-back REQUESTs are deliverable.
  outcome random_step(bool draining) {
    std::vector<std::int32_t> lockable, withdrawable, in_cs;
    for (const auto& nd : w_.peers()) {
      const bool armed = nd.mode() == mode::requesting && !nd.withdrawn();
      if (nd.mode() == mode::idle || (nd.mode() == mode::requesting && nd.withdrawn()))
        lockable.push_back(nd.self().value());
      if (armed) withdrawable.push_back(nd.self().value());
      if (nd.mode() == mode::in_cs) in_cs.push_back(nd.self().value());
    }
    std::vector<const request_msg*> deliverable_msgs;
    for (const request_msg& m : w_.pending())
      if (draining || deliverable(m)) deliverable_msgs.push_back(&m);
    if (draining) lockable.clear(), withdrawable.clear();

    // Weights per kind of step (lock, withdraw, REQUEST, token, exit), zero where
    // none is enabled.
    const std::uint64_t weight[5] = {lockable.empty() ? 0u : 16u, withdrawable.empty() ? 0u : 1u,
                                     deliverable_msgs.empty() ? 0u : 32u, w_.flight() ? 16u : 0u,
                                     in_cs.empty() ? 0u : 16u};
    std::uint64_t total = 0;
    for (std::uint64_t x : weight) total += x;
    if (total == 0) return {false, std::nullopt};
    std::uint64_t r = pick(total);
    int kind = 0;
    while (r >= weight[kind]) r -= weight[kind++];

    const world before = w_;
    std::string line;
    switch (kind) {
      case 0: {
        const rank_t i(lockable[pick(lockable.size())]);
        line = "request " + std::to_string(i.value());
        const auto& nd = w_.peer(i);
        const bool local = nd.holds_token(), rearm = nd.mode() == mode::requesting;
        if (auto v = w_.request(i); !v) return {true, v.reason};
        ++locks_[i.index()];
        if (rearm) ++cov_.rearms;
        if (local) {
          ++cov_.local_entries;
          if (w_.messages() != before.messages() || w_.peer(i).mode() != mode::in_cs)
            return {true, "retained-token entry sent messages or did not enter"};
        } else if (!rearm) {
          // A new broadcast: hold back some of its REQUESTs for a long time.
          const seq_t s = w_.peer(i).rn(i);
          for (std::int32_t j = 0; j < n_; ++j)
            if (j != i.value() && chance(1, 6)) held_[key({i, rank_t(j), s})] = now_ + 50 + pick(1000);
        }
        break;
      }
      case 1: {
        const rank_t i(withdrawable[pick(withdrawable.size())]);
        line = "withdraw " + std::to_string(i.value());
        if (auto v = w_.withdraw(i); !v) return {true, v.reason};
        ++cov_.withdraws;
        --locks_[i.index()];  // this lock() no longer owes an entry, unless re-armed
        break;
      }
      case 2: {
        const request_msg m = *deliverable_msgs[pick(deliverable_msgs.size())];
        line = "deliver " + std::to_string(m.from.value()) + " " + std::to_string(m.to.value()) + " " +
               std::to_string(m.seq.value());
        if (held_.erase(key(m))) ++cov_.held_back;
        if (m.seq <= seq_t(w_.token().ln[m.from.index()])) ++cov_.stale;
        if (w_.peer(m.to).rn(m.from) > m.seq) ++cov_.overtaken;
        if (auto v = w_.deliver(m.from, m.to, m.seq); !v) return {true, v.reason};
        break;
      }
      case 3: {
        const rank_t to = w_.flight()->to;
        line = "token";
        const bool withdrawn = w_.peer(to).withdrawn();
        if (auto v = w_.deliver_token(); !v) return {true, v.reason};
        if (withdrawn) {
          ++cov_.withdrawn_served;
          ++withdrawn_served_[to.index()];
        } else {
          ++cov_.remote_entries;
        }
        break;
      }
      case 4: {
        const rank_t i(in_cs[pick(in_cs.size())]);
        line = "exit " + std::to_string(i.value());
        const bool known = w_.peer(i).waiter_known();
        if (auto v = w_.exit(i); !v) return {true, v.reason};
        // The runtime's unlock() skips its poll when waiter_known(): it must
        // predict exactly whether the exit hands the token on.
        if (known != w_.flight().has_value())
          return {true, "waiter_known() was " + std::string(known ? "true" : "false") + " before `" + line +
                            "`, which " + (w_.flight() ? "sent" : "kept") + " the token"};
        break;
      }
    }
    ++cov_.steps;
    if (record_) trace_ << line << "\n";
    if (auto v = w_.violation()) return {true, "invariant broken after `" + line + "`: " + *v};
    if (auto v = w_.regression_from(before)) return {true, "after `" + line + "`: " + *v};
    return {true, ledger(line)};
  }

  // The ranks' counters agree with each other and with the network.
  std::optional<std::string> ledger(const std::string& line) const {
    std::uint64_t broadcasts = 0, req_sent = 0, req_received = 0, tok_sent = 0, tok_received = 0;
    for (const auto& nd : w_.peers()) {
      const auto& c = nd.counters();
      broadcasts += c.broadcasts;
      req_sent += c.requests_sent;
      req_received += c.requests_received;
      tok_sent += c.tokens_sent;
      tok_received += c.tokens_received;
      if (c.tokens_received > c.broadcasts)
        return "after `" + line + "`: rank " + std::to_string(nd.self().value()) +
               " received more tokens than it requested";
    }
    const auto n1 = static_cast<std::uint64_t>(n_ - 1);
    if (req_sent != n1 * broadcasts || req_received + w_.pending().size() != req_sent ||
        tok_received + (w_.flight() ? 1u : 0u) != tok_sent || w_.messages() != req_sent + tok_sent)
      return "after `" + line + "`: the message counters disagree (REQUESTs " + std::to_string(req_sent) + " sent, " +
             std::to_string(req_received) + " received; tokens " + std::to_string(tok_sent) + " sent, " +
             std::to_string(tok_received) + " received; " + std::to_string(broadcasts) + " broadcasts; " +
             std::to_string(w_.messages()) + " on the network)";
    return std::nullopt;
  }

  // Fair drain: random non-request steps until none is enabled; then every request
  // must have been served.
  std::optional<std::string> drain() {
    const std::uint64_t limit = now_ + 100'000;
    for (; now_ < limit; ++now_) {
      const outcome o = random_step(true);
      if (o.failure) return o.failure;
      if (!o.taken) break;
    }
    if (!w_.quiescent()) return "drain did not reach a quiescent state";
    std::uint64_t broadcasts = 0;
    for (const auto& nd : w_.peers()) {
      const auto& c = nd.counters();
      const std::size_t i = nd.self().index();
      broadcasts += c.broadcasts;
      if (c.acquisitions != locks_[i])
        return "rank " + std::to_string(i) + " entered " + std::to_string(c.acquisitions) + " times for " +
               std::to_string(locks_[i]) + " unwithdrawn lock() calls";
      if (c.tokens_received != c.broadcasts ||
          c.acquisitions - c.local_acquisitions + withdrawn_served_[i] != c.broadcasts)
        return "rank " + std::to_string(i) + ": broadcasts, tokens and entries disagree";
    }
    // Every broadcast cost n-1 REQUESTs and brought exactly one token: n messages per
    // remote entry (or per withdrawn request), none for retained-token entries.
    if (w_.messages() != static_cast<std::uint64_t>(n_) * broadcasts)
      return "messages " + std::to_string(w_.messages()) + " != n * broadcasts " +
             std::to_string(static_cast<std::uint64_t>(n_) * broadcasts);
    ++cov_.runs;
    return std::nullopt;
  }

  std::mt19937_64 rng_;
  std::int32_t n_;
  std::int32_t owner_;
  world w_;
  std::uint64_t now_ = 0;                                  // steps taken
  std::unordered_map<std::uint64_t, std::uint64_t> held_;  // REQUEST key -> release step
  std::vector<std::uint64_t> locks_;                       // lock() calls owed an entry
  std::vector<std::uint64_t> withdrawn_served_;            // tokens that arrived withdrawn
  coverage cov_;
  bool record_;
  std::ostringstream trace_;
};

// Runs seeds [first, first + count) and checks that the runs covered every case.
void run_seeds(std::uint64_t first, std::uint64_t count, std::int32_t min_n, std::int32_t max_n) {
  coverage total;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    random_run r(seed, min_n, max_n, false);
    if (const auto f = r.run()) {
      random_run again(seed, min_n, max_n, true);
      again.run();
      FAIL() << "seed " << seed << " (n = " << r.n() << "): " << *f << "\nthe run as a trace (tally-sim replay):\n"
             << again.trace();
    }
    total.add(r.cov());
  }
  std::cout << "random schedules, seeds " << first << ".." << first + count - 1 << ", n in [" << min_n << ", " << max_n
            << "]: " << total.runs << " runs, " << total.steps << " steps, " << total.remote_entries << " remote and "
            << total.local_entries << " retained-token entries, " << total.withdraws << " withdraws, " << total.rearms
            << " re-arms, " << total.withdrawn_served << " tokens routed by withdrawn ranks, " << total.held_back
            << " held-back, " << total.stale << " stale and " << total.overtaken << " overtaken REQUEST deliveries"
            << std::endl;
  EXPECT_EQ(total.runs, count);
  EXPECT_GT(total.remote_entries, 0u);
  EXPECT_GT(total.local_entries, 0u);
  EXPECT_GT(total.withdraws, 0u);
  EXPECT_GT(total.rearms, 0u);
  EXPECT_GT(total.withdrawn_served, 0u);
  EXPECT_GT(total.held_back, 0u);
  EXPECT_GT(total.stale, 0u);
  EXPECT_GT(total.overtaken, 0u);
}

// Unoptimized or sanitized builds run a tenth of the seeds (the full set takes
// minutes there); the default RelWithDebInfo build runs them all.
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t seed_divisor = 1;
#else
constexpr std::uint64_t seed_divisor = 10;
#endif

TEST(RandomSchedules, SmallGroups) { run_seeds(1, 3000 / seed_divisor * tally::check::seed_scale(), 2, 5); }
TEST(RandomSchedules, LargeGroups) { run_seeds(100'001, 1000 / seed_divisor * tally::check::seed_scale(), 6, 16); }

// A recorded run is a valid trace: the replayer takes every step and every
// invariant holds, which cross-checks the recorder and the replayer.
TEST(RandomSchedules, RecordedRunsReplay) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    random_run r(seed, 2, 8, true);
    ASSERT_FALSE(r.run()) << "seed " << seed;
    std::istringstream in(r.trace());
    auto parsed = tally::check::replay::parse(in);
    ASSERT_TRUE(std::holds_alternative<tally::check::replay::script>(parsed)) << "seed " << seed;
    const auto rep = tally::check::replay::execute(std::get<tally::check::replay::script>(parsed));
    EXPECT_EQ(rep.code, tally::check::replay::outcome::pass) << "seed " << seed << ": " << rep.message;
    EXPECT_EQ(rep.steps, r.cov().steps) << "seed " << seed;
  }
}

}  // namespace
