// tests/check/explore.hpp — breadth-first exhaustive exploration of a protocol model.
//
// explorer<Model> visits every state reachable from Model::initial() and checks
// each one and each step. A Model provides
//   using state = ...;                       copyable; assignment reuses buffers
//   using move = ...;                        with std::string line() (a replay line)
//   state initial() const;
//   void encode(const state&, std::vector<std::uint64_t>&) const;   canonical
//   std::optional<std::string> check(const state&) const;          invariants
//   std::optional<std::string> check_step(const state& from, const state& to) const;
//   template <class Take> std::optional<std::string> expand(const state&, Take&& take) const;
//       calls take(move, bool progress, apply) for every enabled step, where
//       apply(state&) returns a check::verdict and progress says the step is not a
//       new request or a withdrawal;
//   std::optional<std::string> check_enabled(const state&, bool progress_enabled) const;
//   std::optional<std::string> check_terminal(const state&) const;
//   std::string header() const;              the replay trace's first line(s)
// A state is identified by its encoding (as LEB128 varints). A failure names what
// broke and the path from the initial state as a replay trace.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace tally::check::explore {

// One edge of the state graph as its replay line (check/replay.hpp). Id: a rank's
// or node's integer type; Seq: a REQUEST sequence's (a model picks the narrowest).
template <class Id, class Seq>
struct trace_move {
  enum class kind : std::uint8_t {
    none,
    request,
    withdraw,
    deliver,
    token,
    exit
  };
  kind what = kind::none;
  Id a = 0, b = 0;  // request/withdraw/exit: rank a; deliver: a's REQUEST to b
  Seq seq = 0;      // deliver: the REQUEST's sequence

  std::string line() const {
    switch (what) {
      case kind::none: return "";
      case kind::request: return "request " + std::to_string(a);
      case kind::withdraw: return "withdraw " + std::to_string(a);
      case kind::deliver: return "deliver " + std::to_string(a) + " " + std::to_string(b) + " " + std::to_string(seq);
      case kind::token: return "token";
      case kind::exit: return "exit " + std::to_string(a);
    }
    return "";
  }
};

// Keys packed end to end in one buffer, open addressing over (hash tag, id) slots.
// Ids are dense, in insertion order.
class visited_set {
 public:
  // The id of `key`, inserting it (as id size()) if absent; second: inserted.
  std::pair<std::uint32_t, bool> insert(std::string_view key) {
    if (2 * (size() + 1) > slots_.size()) rehash(std::max<std::size_t>(1024, 2 * slots_.size()));
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
  // Room for n keys of about key_bytes each without regrowing.
  void reserve(std::size_t n, std::size_t key_bytes) {
    bytes_.reserve(n * key_bytes);
    ends_.reserve(n + 1);
    std::size_t slots = 1024;
    while (slots < 2 * n) slots *= 2;
    if (slots > slots_.size()) rehash(slots);
  }

 private:
  struct slot {
    std::uint32_t tag = 0;
    std::uint32_t id1 = 0;  // id + 1; 0 marks an empty slot
  };
  std::string_view key(std::uint32_t id) const { return {bytes_.data() + ends_[id], ends_[id + 1] - ends_[id]}; }
  void rehash(std::size_t slots) {  // slots: a power of two
    std::vector<slot> old(slots);
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

template <class Model>
class explorer {
 public:
  using state = typename Model::state;
  using move = typename Model::move;

  explicit explorer(Model m) : m_(std::move(m)), scratch_state_{m_.initial(), 0} {}

  // Sizes the visited set and the search's records for about `states` states (the
  // committed floor): growing them by doubling copies hundreds of megabytes.
  void reserve(std::size_t states) {
    make_key(scratch_state_.s);
    seen_.reserve(states, key_.size() + key_.size() / 2);
    parent_.reserve(states);
    edge_.reserve(states);
  }

  // Runs the search; returns the first failure, described, or nullopt.
  std::optional<std::string> run() {
    // Two level pools whose slots are reused by assignment, so that a level's
    // states do not allocate once the pools have grown.
    std::vector<node> level, next;
    level.push_back({m_.initial(), 0});
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
  struct node {
    state s;
    std::uint32_t id;  // index into the parent/edge arrays
  };

  void make_key(const state& s) {
    m_.encode(s, scratch_);
    key_.clear();
    for (std::uint64_t v : scratch_) {
      do {
        const auto low = static_cast<char>(v & 0x7f);
        v >>= 7;
        key_.push_back(v ? static_cast<char>(low | 0x80) : low);
      } while (v);
    }
  }

  // Records n if unseen. Returns a failure description, or nullopt.
  std::optional<std::string> admit(node& n, std::uint32_t parent, move mv, bool* fresh) {
    make_key(n.s);
    const auto [id, inserted] = seen_.insert(key_);
    if (fresh) *fresh = inserted;
    if (!inserted) return std::nullopt;
    n.id = id;
    parent_.push_back(parent);
    edge_.push_back(mv);
    if (auto v = m_.check(n.s)) return fail(n.id, *v);
    return std::nullopt;
  }

  // Generates and checks every successor of n, appending the new ones to next.
  std::optional<std::string> expand(const node& n, std::vector<node>& next) {
    std::size_t successors = 0;
    bool progress = false;
    auto take = [&](move mv, bool progress_step, auto&& apply) -> std::optional<std::string> {
      node& t = scratch_state_;
      t.s = n.s;  // assignment reuses t's buffers: no allocation per attempt
      if (const auto v = apply(t.s); !v) return fail(n.id, "step refused: " + v.reason, mv);
      ++successors;
      ++transitions_;
      progress = progress || progress_step;
      if (auto r = m_.check_step(n.s, t.s)) return fail(n.id, *r, mv);
      bool fresh = false;
      if (auto f = admit(t, n.id, mv, &fresh)) return f;
      if (fresh) {
        if (next_width_ < next.size())
          next[next_width_] = t;
        else
          next.push_back(t);
        ++next_width_;
      }
      return std::nullopt;
    };
    if (auto f = m_.expand(n.s, take)) return f;
    if (auto f = m_.check_enabled(n.s, progress)) return fail(n.id, *f);
    if (successors == 0) {
      ++terminal_;
      if (auto f = m_.check_terminal(n.s)) return fail(n.id, *f);
    }
    return std::nullopt;
  }

  // The failure, with the path from the initial state to state `id` (then `last`)
  // as a replay trace.
  std::string fail(std::uint32_t id, const std::string& what, move last = {}) const {
    std::vector<std::string> lines;
    if (const std::string l = last.line(); !l.empty()) lines.push_back(l);
    for (std::uint32_t k = id; k != 0; k = parent_[k]) lines.push_back(edge_[k].line());
    std::ostringstream os;
    os << what << "\nreached by this trace (tally-sim replay):\n" << m_.header() << "\n";
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) os << *it << "\n";
    return os.str();
  }

  Model m_;
  visited_set seen_;
  std::vector<std::uint32_t> parent_;  // by state id; the initial state is its own parent
  std::vector<move> edge_;             // the step that first reached each state
  std::uint64_t transitions_ = 0, terminal_ = 0, depth_ = 0;
  std::size_t next_width_ = 0;
  std::vector<std::uint64_t> scratch_;
  std::string key_;
  node scratch_state_;
};

// Explores the model, prints "model check <what>: N states, ..." and checks the
// state count against the committed floor (a search that silently explores
// nothing fails).
template <class Model>
void check(Model m, const std::string& what, std::uint64_t floor) {
  explorer<Model> e(std::move(m));
  e.reserve(floor + floor / 8);
  const std::optional<std::string> failure = e.run();
  std::ostringstream summary;
  summary << "model check " << what << ": " << e.states() << " states, " << e.transitions() << " transitions, "
          << e.terminal() << " terminal, depth " << e.depth();
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
inline constexpr bool slow_build = false;
#else
inline constexpr bool slow_build = true;
#endif
inline constexpr const char* slow_reason = "too slow in an unoptimized or sanitized build";

}  // namespace tally::check::explore
