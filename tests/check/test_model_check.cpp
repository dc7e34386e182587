// Exhaustive model check of the protocol core through check::world.
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

#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "check/world.hpp"

namespace {

using tally::protocol::mode;
using tally::protocol::rank_t;
using tally::check::world;

struct bounds {
  std::int32_t n;
  std::uint8_t budget;  // lock calls per rank
  bool withdraw;        // also explore withdraw steps
  std::int32_t owner = 0;
};

// One edge of the state graph, in replay-trace terms.
struct move {
  enum class kind : std::uint8_t { none, request, withdraw, deliver, token, exit };
  kind what = kind::none;
  std::uint8_t a = 0, b = 0;  // request/withdraw/exit: a; deliver: a -> b
  std::uint32_t seq = 0;      // deliver: the REQUEST's sequence

  std::string line() const {
    switch (what) {
      case kind::none: return "";
      case kind::request: return "request " + std::to_string(a);
      case kind::withdraw: return "withdraw " + std::to_string(a);
      case kind::deliver:
        return "deliver " + std::to_string(a) + " " + std::to_string(b) + " " + std::to_string(seq);
      case kind::token: return "token";
      case kind::exit: return "exit " + std::to_string(a);
    }
    return "";
  }
};

struct state {
  world w;
  std::vector<std::uint8_t> budget;
  std::uint32_t id;  // index into the parent/edge arrays
};

// Lexicographic (lock budget left, requesting ranks, pending REQUESTs, ranks in
// CS, armed requesters). Every step decreases it: lock spends budget; a token
// delivery ends a request; a REQUEST delivery shrinks the network; exit empties
// a CS; withdraw disarms. Nothing else changes the earlier components upward.
using measure = std::array<std::uint64_t, 5>;

measure measure_of(const world& w, const std::vector<std::uint8_t>& budget) {
  measure m{};
  for (std::uint8_t b : budget) m[0] += b;
  m[2] = w.pending().size();
  for (const auto& nd : w.peers()) {
    if (nd.mode() == mode::requesting) ++m[1];
    if (nd.mode() == mode::in_cs) ++m[3];
    if (nd.mode() == mode::requesting && !nd.withdrawn()) ++m[4];
  }
  return m;
}

// world::encode() as LEB128 varints (injective: the encoding is self-delimiting),
// followed by the remaining budgets.
void make_key(const world& w, const std::vector<std::uint8_t>& budget,
              std::vector<std::uint64_t>& scratch, std::string& key) {
  w.encode(scratch);
  key.clear();
  for (std::uint64_t v : scratch) {
    do {
      const auto low = static_cast<char>(v & 0x7f);
      v >>= 7;
      key.push_back(v ? static_cast<char>(low | 0x80) : low);
    } while (v);
  }
  key.append(budget.begin(), budget.end());
}

// The visited set: keys packed end to end in one buffer, open addressing over
// (hash tag, id) slots. Ids are dense, in insertion order.
class visited_set {
 public:
  // The id of `key`, inserting it (as id size()) if absent; second: inserted.
  std::pair<std::uint32_t, bool> insert(std::string_view key) {
    if (2 * (size() + 1) > slots_.size()) grow();
    const std::uint64_t h = std::hash<std::string_view>{}(key);
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t k = h & (slots_.size() - 1);; k = (k + 1) & (slots_.size() - 1)) {
      slot& s = slots_[k];
      if (s.id1 == 0) {
        const auto id = static_cast<std::uint32_t>(size());
        s = {tag, id + 1};
        bytes_.insert(bytes_.end(), key.begin(), key.end());
        ends_.push_back(bytes_.size());
        return {id, true};
      }
      if (s.tag == tag && this->key(s.id1 - 1) == key) return {s.id1 - 1, false};
    }
  }
  std::size_t size() const { return ends_.size() - 1; }

 private:
  struct slot {
    std::uint32_t tag = 0;
    std::uint32_t id1 = 0;  // id + 1; 0 marks an empty slot
  };
  std::string_view key(std::uint32_t id) const {
    return {bytes_.data() + ends_[id], ends_[id + 1] - ends_[id]};
  }
  void grow() {
    std::vector<slot> old(std::max<std::size_t>(1024, 2 * slots_.size()));
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.id1 == 0) continue;
      const std::uint64_t h = std::hash<std::string_view>{}(key(s.id1 - 1));
      std::size_t k = h & (slots_.size() - 1);
      while (slots_[k].id1 != 0) k = (k + 1) & (slots_.size() - 1);
      slots_[k] = s;
    }
  }

  std::vector<char> bytes_;
  std::vector<std::size_t> ends_{0};  // key id spans bytes_[ends_[id], ends_[id + 1])
  std::vector<slot> slots_;           // power-of-two size, at most half full
};

class explorer {
 public:
  explicit explorer(bounds b) : b_(b) {}

  // Runs the search; returns the first failure, described, or nullopt.
  std::optional<std::string> run() {
    // Two level pools whose slots are reused by assignment, so that a level's
    // worlds do not allocate once the pools have grown.
    std::vector<state> level, next;
    const auto n = static_cast<std::size_t>(b_.n);
    level.push_back({world(b_.n, rank_t(b_.owner)), std::vector<std::uint8_t>(n, b_.budget), 0});
    if (auto f = admit(level.front(), 0, {}, nullptr)) return f;
    std::size_t width = 1;
    while (width > 0) {
      ++depth_;
      next_width_ = 0;
      for (std::size_t k = 0; k < width; ++k)
        if (auto f = expand(level[k], next)) return f;
      std::swap(level, next);
      width = next_width_;
    }
    return std::nullopt;
  }

  std::uint64_t states() const { return parent_.size(); }
  std::uint64_t transitions() const { return transitions_; }
  std::uint64_t terminal() const { return terminal_; }
  std::uint64_t depth() const { return depth_; }

 private:
  // Records s if unseen. Returns a failure description, or nullopt.
  std::optional<std::string> admit(state& s, std::uint32_t parent, move m, bool* fresh) {
    make_key(s.w, s.budget, scratch_, key_);
    const auto [id, inserted] = seen_.insert(key_);
    if (fresh) *fresh = inserted;
    if (!inserted) return std::nullopt;
    s.id = id;
    parent_.push_back(parent);
    edge_.push_back(m);
    if (auto v = s.w.violation()) return fail(s.id, "invariant broken: " + *v);
    const bool busy = std::any_of(s.w.peers().begin(), s.w.peers().end(),
                                  [](const auto& nd) { return nd.mode() != mode::idle; });
    if (busy && !s.w.can_progress())
      return fail(s.id, "deadlock: a rank waits but no step is enabled");
    return std::nullopt;
  }

  // Generates and checks every successor of s, appending the new ones to next.
  std::optional<std::string> expand(const state& s, std::vector<state>& next) {
    const measure before = measure_of(s.w, s.budget);
    std::size_t successors = 0;
    std::size_t non_request = 0;
    auto take = [&](move m, auto&& apply) -> std::optional<std::string> {
      state& t = scratch_state_;
      t.w = s.w;  // assignment reuses t's buffers: no allocation per attempt
      t.budget = s.budget;
      if (const auto v = apply(t); !v) return fail(s.id, "step refused: " + v.reason, m);
      ++successors;
      ++transitions_;
      if (m.what != move::kind::request && m.what != move::kind::withdraw) ++non_request;
      if (auto r = t.w.regression_from(s.w)) return fail(s.id, "monotonicity broken: " + *r, m);
      if (!(measure_of(t.w, t.budget) < before))
        return fail(s.id, "the step does not decrease the termination measure", m);
      bool fresh = false;
      if (auto f = admit(t, s.id, m, &fresh)) return f;
      if (fresh) {
        if (next_width_ < next.size())
          next[next_width_] = t;
        else
          next.push_back(t);
        ++next_width_;
      }
      return std::nullopt;
    };

    for (std::int32_t i = 0; i < b_.n; ++i) {
      const rank_t r(i);
      const auto& nd = s.w.peer(r);
      const auto a = static_cast<std::uint8_t>(i);
      const bool lockable =
          nd.mode() == mode::idle || (nd.mode() == mode::requesting && nd.withdrawn());
      if (lockable && s.budget[r.index()] > 0)
        if (auto f = take({move::kind::request, a}, [&](state& t) {
              --t.budget[r.index()];
              return t.w.request(r);
            }))
          return f;
      if (b_.withdraw && nd.mode() == mode::requesting && !nd.withdrawn())
        if (auto f = take({move::kind::withdraw, a}, [&](state& t) { return t.w.withdraw(r); }))
          return f;
      if (nd.mode() == mode::in_cs)
        if (auto f = take({move::kind::exit, a}, [&](state& t) { return t.w.exit(r); })) return f;
    }
    for (const auto& m : s.w.pending()) {
      const move mv{move::kind::deliver, static_cast<std::uint8_t>(m.from.value()),
                    static_cast<std::uint8_t>(m.to.value()),
                    static_cast<std::uint32_t>(m.seq.value())};
      if (auto f = take(mv, [&](state& t) { return t.w.deliver(m.from, m.to, m.seq); })) return f;
    }
    if (s.w.flight())
      if (auto f = take({move::kind::token}, [&](state& t) { return t.w.deliver_token(); }))
        return f;

    if (s.w.can_progress() != (non_request > 0))
      return fail(s.id, "can_progress() disagrees with the enabled steps");
    if (successors == 0) {
      ++terminal_;
      if (!s.w.quiescent()) return fail(s.id, "terminal state is not quiescent");
    }
    return std::nullopt;
  }

  // The failure, with the path from the initial state to state `id` (then `last`)
  // as a replay trace.
  std::string fail(std::uint32_t id, const std::string& what, move last = {}) const {
    std::vector<std::string> lines;
    if (last.what != move::kind::none) lines.push_back(last.line());
    for (std::uint32_t k = id; k != 0; k = parent_[k]) lines.push_back(edge_[k].line());
    std::ostringstream os;
    os << what << "\nreached by this trace (tally-sim replay):\nranks " << b_.n << " owner "
       << b_.owner << "\n";
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) os << *it << "\n";
    return os.str();
  }

  bounds b_;
  visited_set seen_;
  std::vector<std::uint32_t> parent_;  // by state id; the initial state is its own parent
  std::vector<move> edge_;             // the step that first reached each state
  std::uint64_t transitions_ = 0, terminal_ = 0, depth_ = 0;
  std::size_t next_width_ = 0;
  std::vector<std::uint64_t> scratch_;
  std::string key_;
  state scratch_state_{world(1, rank_t(0)), {}, 0};
};

// Explores one configuration and checks the state count against its floor.
void check(bounds b, std::uint64_t floor) {
  explorer e(b);
  const std::optional<std::string> failure = e.run();
  std::ostringstream summary;
  summary << "model check n=" << b.n << " budget=" << int{b.budget} << " owner=" << b.owner
          << (b.withdraw ? " +withdraw" : "") << ": " << e.states() << " states, "
          << e.transitions() << " transitions, " << e.terminal() << " terminal, depth "
          << e.depth();
  std::cout << summary.str() << std::endl;
  testing::Test::RecordProperty("states", std::to_string(e.states()));
  testing::Test::RecordProperty("transitions", std::to_string(e.transitions()));
  ASSERT_FALSE(failure) << *failure;
  EXPECT_GE(e.states(), floor) << "fewer states than the committed floor: coverage was lost";
  EXPECT_GT(e.terminal(), 0u);
}

// The largest configurations take ~30x longer without optimization or under
// sanitizers (minutes): such builds skip them; the default RelWithDebInfo build
// runs them all.
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
constexpr bool slow_build = false;
#else
constexpr bool slow_build = true;
#endif
constexpr const char* slow_reason = "too slow in an unoptimized or sanitized build";

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
