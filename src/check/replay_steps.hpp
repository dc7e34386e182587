// check/replay_steps.hpp — the statement loop that flat and two-level traces share
// (check/replay.hpp): expects checked in order, steps taken one by one, the world's
// own checks after every step; the first failure stops the run with the world's
// state. Internal to src/check.
#pragma once

#include <optional>
#include <string>

#include "check/replay.hpp"

namespace tally::check::replay {

// take(w, st) -> verdict; check(w, st) -> optional mismatch text;
// describe(w) -> state text; after(before, w, text) -> optional failure message.
template <class World, class Take, class Check, class Describe, class After>
report run_statements(const script& s, World& w, Take take, Check check, Describe describe, After after) {
  report r;
  const auto stop = [&](outcome code, const statement& st, std::string why) {
    r.code = code;
    r.line = st.line;
    r.message = std::move(why);
    r.state = describe(w);
    return r;
  };
  for (const statement& st : s.body) {
    if (!st.is_step()) {
      if (auto miss = check(w, st)) return stop(outcome::failed, st, "`" + st.text + "` failed: " + *miss);
      ++r.expects;
      continue;
    }
    const World before = w;
    if (const verdict v = take(w, st); !v)
      return stop(outcome::rejected, st, "step `" + st.text + "` rejected: " + v.reason);
    ++r.steps;
    if (auto bad = after(before, w, st.text)) return stop(outcome::failed, st, *bad);
  }
  return r;
}

}  // namespace tally::check::replay
