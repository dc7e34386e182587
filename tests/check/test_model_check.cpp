// Exhaustive model check of the protocol core through check::world (the search
// itself is tests/check/explore.hpp).
//
// Breadth-first search over every interleaving of: a rank calls lock (at most
// `budget` times per rank), a rank withdraws its request (the "WithWithdraw" cases), any
// one pending REQUEST is delivered (channels are unordered), the in-flight token
// is delivered, an in-CS rank exits. A state is world::encode() plus each rank's
// remaining lock budget. On every reachable state it asserts
//   - world::violation() is empty (the invariants I1-I7 of docs/protocol.md),
//   - no RN or LN entry decreased across the step that reached it,
//   - deadlock freedom: a requesting or in-CS rank implies world::can_progress(),
//   - a state without successors is quiescent (all idle, network empty),
//   - every step strictly decreases a well-founded measure, so the state graph is
//     acyclic and every maximal run ends in one of those quiescent states: every
//     request is served (or, if withdrawn, its token routed onward) on every run.
// Refused steps that the search expects to be enabled are failures too.
// On failure the path from the initial state is printed as a `tally-sim replay`
// trace. State counts are printed and must reach the committed floors (see
// docs/protocol.md), so a search that silently explores nothing fails.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/world.hpp"
#include "explore.hpp"

namespace {

using tally::check::world;
using tally::protocol::mode;
using tally::protocol::rank_t;
namespace explore = tally::check::explore;

struct bounds {
  std::int32_t n;
  std::uint8_t budget;  // lock calls per rank
  bool withdraw;        // also explore withdraw steps
  std::int32_t owner = 0;
};

// One edge of the state graph; deliver: REQUEST from rank a to rank b.
using move = tally::check::explore::trace_move<std::uint8_t, std::uint32_t>;

// Lexicographic (lock budget left, requesting ranks, pending REQUESTs, ranks in
// CS, armed requesters). Every step decreases it: lock spends budget; a token
// delivery ends a request; a REQUEST delivery shrinks the network; exit empties
// a CS; withdraw disarms. Nothing else changes the earlier components upward.
using measure = std::array<std::uint64_t, 5>;

struct flat_model {
  struct state {
    world w;
    std::vector<std::uint8_t> budget;
  };
  using move = ::move;
  bounds b;

  state initial() const {
    return {world(b.n, rank_t(b.owner)), std::vector<std::uint8_t>(static_cast<std::size_t>(b.n), b.budget)};
  }
  std::string header() const { return "ranks " + std::to_string(b.n) + " owner " + std::to_string(b.owner); }

  static measure measure_of(const state& s) {
    measure m{};
    for (std::uint8_t x : s.budget) m[0] += x;
    m[2] = s.w.pending().size();
    for (const auto& nd : s.w.peers()) {
      if (nd.mode() == mode::requesting) ++m[1];
      if (nd.mode() == mode::in_cs) ++m[3];
      if (nd.mode() == mode::requesting && !nd.withdrawn()) ++m[4];
    }
    return m;
  }

  // world::encode() followed by the remaining budgets.
  void encode(const state& s, std::vector<std::uint64_t>& out) const {
    s.w.encode(out);
    out.insert(out.end(), s.budget.begin(), s.budget.end());
  }

  std::optional<std::string> check(const state& s) const {
    if (auto v = s.w.violation()) return "invariant broken: " + *v;
    const bool busy =
        std::any_of(s.w.peers().begin(), s.w.peers().end(), [](const auto& nd) { return nd.mode() != mode::idle; });
    if (busy && !s.w.can_progress()) return "deadlock: a rank waits but no step is enabled";
    return std::nullopt;
  }

  std::optional<std::string> check_step(const state& from, const state& to) const {
    if (auto r = to.w.regression_from(from.w)) return "monotonicity broken: " + *r;
    if (!(measure_of(to) < measure_of(from))) return "the step does not decrease the termination measure";
    return std::nullopt;
  }

  template <class Take>
  std::optional<std::string> expand(const state& s, Take&& take) const {
    for (std::int32_t i = 0; i < b.n; ++i) {
      const rank_t r(i);
      const auto& nd = s.w.peer(r);
      const auto a = static_cast<std::uint8_t>(i);
      const bool lockable = nd.mode() == mode::idle || (nd.mode() == mode::requesting && nd.withdrawn());
      if (lockable && s.budget[r.index()] > 0)
        if (auto f = take(move{move::kind::request, a}, false, [&](state& t) {
              --t.budget[r.index()];
              return t.w.request(r);
            }))
          return f;
      if (b.withdraw && nd.mode() == mode::requesting && !nd.withdrawn())
        if (auto f = take(move{move::kind::withdraw, a}, false, [&](state& t) { return t.w.withdraw(r); })) return f;
      if (nd.mode() == mode::in_cs)
        if (auto f = take(move{move::kind::exit, a}, true, [&](state& t) { return t.w.exit(r); })) return f;
    }
    for (const auto& m : s.w.pending()) {
      const move mv{move::kind::deliver, static_cast<std::uint8_t>(m.from.value()),
                    static_cast<std::uint8_t>(m.to.value()), static_cast<std::uint32_t>(m.seq.value())};
      if (auto f = take(mv, true, [&](state& t) { return t.w.deliver(m.from, m.to, m.seq); })) return f;
    }
    if (s.w.flight())
      if (auto f = take(move{move::kind::token}, true, [&](state& t) { return t.w.deliver_token(); })) return f;
    return std::nullopt;
  }

  std::optional<std::string> check_enabled(const state& s, bool progress) const {
    if (s.w.can_progress() != progress) return "can_progress() disagrees with the enabled steps";
    return std::nullopt;
  }
  std::optional<std::string> check_terminal(const state& s) const {
    if (!s.w.quiescent()) return "terminal state is not quiescent";
    return std::nullopt;
  }
};

void check(bounds b, std::uint64_t floor) {
  explore::check(flat_model{b},
                 "n=" + std::to_string(b.n) + " budget=" + std::to_string(int{b.budget}) +
                     " owner=" + std::to_string(b.owner) + (b.withdraw ? " +withdraw" : ""),
                 floor);
}
using explore::slow_build;
using explore::slow_reason;

// Floors are the counts measured at the commit that set them (docs/protocol.md).
TEST(ModelCheck, TwoRanksThreeRequestsEach) { check({2, 3, false}, 234); }
TEST(ModelCheck, TwoRanksSixRequestsEachWithWithdraw) { check({2, 6, true, 1}, 3'962); }
TEST(ModelCheck, ThreeRanksTwoRequestsEach) { check({3, 2, false}, 58'973); }
TEST(ModelCheck, ThreeRanksThreeRequestsEach) {
  if (slow_build) GTEST_SKIP() << slow_reason;
  check({3, 3, false}, 3'325'838);
}
TEST(ModelCheck, ThreeRanksTwoRequestsEachWithWithdraw) { check({3, 2, true, 1}, 222'245); }
TEST(ModelCheck, FourRanksOneRequestEach) { check({4, 1, false}, 123'445); }
TEST(ModelCheck, FourRanksOneRequestEachWithWithdraw) {
  if (slow_build) GTEST_SKIP() << slow_reason;
  check({4, 1, true, 3}, 551'179);
}

}  // namespace
