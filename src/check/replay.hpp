// check/replay.hpp — scripted traces run on check::world (`tally-sim replay FILE`).
//
// A trace is text, one statement per line; `#` starts a comment, blank lines are
// ignored, tokens are separated by blanks (`=` may touch its neighbours):
//
//   ranks N [owner I]        first statement (N in [1, 4096], owner default 0;
//                            `nodes N`, the old spelling, is still accepted);
//                            `owner I` may also stand alone as the second one
//   request I                rank I calls lock
//   withdraw I               rank I gives up waiting (timed-lock extension)
//   deliver J I [SEQ]        deliver the pending REQUEST J -> I with sequence SEQ,
//                            or the oldest pending one from J to I
//   token                    deliver the token in flight
//   exit I                   rank I leaves its critical section
//   expect holder I|none     token held (idle or in CS) by I / in flight
//   expect incs I | idle I | requesting I | withdrawn I
//   expect rn I J = V        RN_I[J] == V
//   expect ln J = V          the token's LN[J] == V, wherever the token is
//   expect queue [A B ...]   the token's Q, head first (nothing: Q empty)
//   expect inflight I|none   token in flight to I / not in flight
//   expect pending J I = C   C REQUESTs from J to I are pending
//   expect messages = M      M messages (REQUESTs + tokens) sent so far
//
// A two-level trace (topology::node, check::cohort_world) starts instead with
//   cohort KxR | cohort S0,S1,... [bound B] [owner K0]
//                            K nodes of R ranks, or node k of Sk ranks; ranks are
//                            numbered node by node; pass bound B (default 1); the
//                            token idle on node K0 (default 0)
// and uses the same steps, where `deliver I K [SEQ]` delivers rank I's pending
// REQUEST to node K (its leader receives it) and `token` the token in flight to
// the asking rank. Its expectations name nodes where the lock's state is a node's:
//   expect holder K|none     expect requesting K      expect rn K J = V
//   expect incs I | idle I | waiting I                expect ln J = V
//   expect queue [I ...]     (the token's queue: asking ranks, head first)
//   expect local K [I ...]   (node K's local FIFO, head first)
//   expect passes K = V      (local grants in a row while another node waits)
//   expect inflight I|none   expect pending I K = C   expect messages = M
// After every step the invariants C1-C10 of docs/design.md ("Two-level lock"),
// monotonic RN and LN, and the counters against the network are checked.
//
// The whole file is parsed before anything runs. After every step every invariant
// of world::violation() and world::regression_from() is checked. Execution stops
// at the first failure. Outcomes (the tool's exit status):
//   pass     (0) every step taken, every expect and invariant held;
//   failed   (1) an expect or an invariant did not hold;
//   rejected (2) a step could not be taken (fabricated or duplicate delivery, exit
//                outside the CS, ...), or the file is missing or malformed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "check/world.hpp"

namespace tally::check::replay {

inline constexpr std::int32_t max_ranks = 4096;

enum class outcome : int {
  pass = 0,
  failed = 1,
  rejected = 2
};

// One statement of a trace, after parsing. Rank ids are range-checked against N.
struct statement {
  // Steps first (is_step() relies on the order), then expectations.
  // clang-format off
  enum class op : std::uint8_t {
    request, withdraw, deliver, token, exit,
    holder, incs, idle, requesting, withdrawn, rn, ln, queue, inflight, pending, messages,
    waiting, local, passes  // two-level only
  };
  // clang-format on

  op what = op::token;
  std::size_t line = 0;                // 1-based line in the source
  std::string text;                    // the statement, words joined by single blanks
  std::optional<std::int32_t> a, b;    // rank ids; holder/inflight: empty means none
  std::optional<std::uint64_t> value;  // deliver: SEQ; rn/ln/pending/messages: expected
  std::vector<std::int32_t> list;      // queue: expected Q, head first

  bool is_step() const noexcept { return what <= op::exit; }
};

struct script {
  std::int32_t ranks = 0;
  std::int32_t owner = 0;  // flat: a rank; two-level: a node
  std::vector<statement> body;
  // Two-level traces: ranks per node (empty for a flat trace) and the pass bound.
  std::vector<std::int32_t> node_sizes;
  std::uint32_t pass_bound = 1;
  bool two_level() const noexcept { return !node_sizes.empty(); }
};

// How a trace ended.
struct report {
  outcome code = outcome::pass;
  std::size_t line = 0;     // line of the failing statement; 0 when none applies
  std::string message;      // why, for failed and rejected
  std::string state;        // the world at the failure (describe()), if one existed
  std::size_t steps = 0;    // steps taken
  std::size_t expects = 0;  // expects that held
};

// Parses a trace. A syntax error yields a rejected report naming the line.
std::variant<script, report> parse(std::istream& in);
// Runs a parsed script on a fresh world (a check::cohort_world for two-level).
report execute(const script& s);
report execute_two_level(const script& s);
// Reads, parses and runs the file at `path`; an unreadable file is rejected.
report run_file(const std::string& path);

// The report as the tool prints it: "FILE:LINE: ..." for failures, a summary line
// for a pass, the world's state after a failure.
std::string format(const report& r, std::string_view file);

// The world's state, several lines: modes, RN rows, the token, pending REQUESTs.
std::string describe(const world& w);

// `tally-sim replay FILE`: `args` are the words after "replay". Returns the exit
// status (outcome, or 2 for a usage error).
int main(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace tally::check::replay
