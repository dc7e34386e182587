// check/replay_cohort.cpp — a parsed two-level trace (`cohort KxR`) run on
// check::cohort_world (check/replay.hpp).
#include <sstream>

#include "check/cohort_world.hpp"
#include "check/replay.hpp"
#include "check/replay_steps.hpp"

namespace tally::check::replay {

using op = statement::op;

namespace {

std::string join(const std::vector<std::int32_t>& xs) {
  std::string s = "[";
  for (std::int32_t x : xs) s += (s.size() > 1 ? " " : "") + std::to_string(x);
  return s + "]";
}

std::optional<std::int32_t> holder_of(const cohort_world& w) {
  for (std::int32_t k = 0; k < w.nodes(); ++k)
    if (w.node(k).holds_token()) return k;
  return std::nullopt;
}

// The token's LN and queue (asking ranks), wherever it is.
std::pair<std::vector<std::uint64_t>, std::vector<std::int32_t>> token_of(const cohort_world& w) {
  std::pair<std::vector<std::uint64_t>, std::vector<std::int32_t>> t;
  if (const auto h = holder_of(w)) {
    const protocol::cohort c = w.node(*h);
    const protocol::cohort_view v = c.state();
    for (std::int32_t j = 0; j < w.nodes(); ++j) t.first.push_back(v.ln[j]);
    t.second.assign(v.tq, v.tq + v.h->tq_len);
  } else {
    // In flight: the sender's copy is the token's last state (the world keeps it).
    t.first = w.flight_ln();
    t.second = w.flight_queue();
  }
  return t;
}

std::vector<std::int32_t> local_fifo(const cohort_world& w, std::int32_t k) {
  // The waiting ranks in ticket order (the one in the CS, served, is not waiting).
  const protocol::cohort c = w.node(k);
  std::vector<std::int32_t> out;
  for (std::int32_t q = c.in_cs() >= 0 ? 1 : 0; q < c.queued_count(); ++q)
    out.push_back(w.global(k, c.queued_at(q)).value());
  return out;
}

const char* phase_name(cohort_world::phase p) {
  return p == cohort_world::phase::in_cs ? "in the CS" : p == cohort_world::phase::waiting ? "waiting" : "idle";
}

verdict take(cohort_world& w, const statement& st) {
  switch (st.what) {
    case op::request: return w.request(rank_t(*st.a));
    case op::withdraw: return w.withdraw(rank_t(*st.a));
    case op::deliver:
      return w.deliver(rank_t(*st.a), *st.b, st.value ? std::optional<seq_t>(seq_t(*st.value)) : std::nullopt);
    case op::token: return w.deliver_token();
    case op::exit: return w.exit(rank_t(*st.a));
    default: return verdict::refuse("not a step");
  }
}

std::optional<std::string> check(const cohort_world& w, const statement& st) {
  const auto mismatch = [](const std::string& expected, const std::string& found) {
    return std::optional<std::string>("expected " + expected + ", found " + found);
  };
  const auto number = [&](const std::string& what, std::uint64_t got) -> std::optional<std::string> {
    if (got == *st.value) return std::nullopt;
    return mismatch(what + " = " + std::to_string(*st.value), std::to_string(got));
  };
  switch (st.what) {
    case op::holder: {
      const auto h = holder_of(w);
      if (h == st.a) return std::nullopt;
      return mismatch(st.a ? "the token on node " + std::to_string(*st.a) : "the token in flight",
                      h ? "it on node " + std::to_string(*h) : "it in flight");
    }
    case op::inflight: {
      const std::optional<std::int32_t> got = w.token_in_flight() ? std::optional(w.flight_to().value()) : std::nullopt;
      if (got == st.a) return std::nullopt;
      return mismatch(st.a ? "the token in flight to rank " + std::to_string(*st.a) : "no token in flight",
                      got ? "it in flight to rank " + std::to_string(*got) : "none in flight");
    }
    case op::incs:
    case op::idle:
    case op::waiting: {
      const cohort_world::phase want = st.what == op::incs   ? cohort_world::phase::in_cs
                                       : st.what == op::idle ? cohort_world::phase::idle
                                                             : cohort_world::phase::waiting;
      const cohort_world::phase got = w.phase_of(rank_t(*st.a));
      if (got == want) return std::nullopt;
      return mismatch("rank " + std::to_string(*st.a) + " " + phase_name(want), phase_name(got));
    }
    case op::requesting:
      if (w.node(*st.a).requesting()) return std::nullopt;
      return mismatch("node " + std::to_string(*st.a) + " requesting", "it not requesting");
    case op::rn:
      return number("RN_" + std::to_string(*st.a) + "[" + std::to_string(*st.b) + "]",
                    w.node(*st.a).state().rn[*st.b].value());
    case op::ln: return number("LN[" + std::to_string(*st.a) + "]", token_of(w).first[static_cast<std::size_t>(*st.a)]);
    case op::queue: {
      const std::string got = join(token_of(w).second), want = join(st.list);
      if (got == want) return std::nullopt;
      return mismatch("Q = " + want, got);
    }
    case op::local: {
      const std::string got = join(local_fifo(w, *st.a)), want = join(st.list);
      if (got == want) return std::nullopt;
      return mismatch("node " + std::to_string(*st.a) + "'s local FIFO = " + want, got);
    }
    case op::passes: return number("passes at node " + std::to_string(*st.a), w.node(*st.a).state().h->passes);
    case op::pending: {
      std::uint64_t got = 0;
      for (const node_request& m : w.pending()) got += m.requester.value() == *st.a && m.to == *st.b;
      return number("pending REQUESTs of rank " + std::to_string(*st.a) + " to node " + std::to_string(*st.b), got);
    }
    case op::messages: return number("messages sent", w.messages());
    default: return "not an expectation for a two-level trace";
  }
}

std::string describe(const cohort_world& w) {
  std::ostringstream os;
  for (std::int32_t k = 0; k < w.nodes(); ++k) {
    const protocol::cohort c = w.node(k);
    const protocol::cohort_header& h = *c.state().h;
    os << "  node " << k << ":" << (c.holds_token() ? " holds the token," : "")
       << (c.requesting() ? " requesting," : "") << " in CS "
       << (c.in_cs() >= 0 ? std::to_string(w.global(k, c.in_cs()).value()) : std::string("none")) << ", local FIFO "
       << join(local_fifo(w, k)) << ", passes " << h.passes << ", RN = [";
    for (std::int32_t j = 0; j < w.nodes(); ++j) os << (j ? " " : "") << c.state().rn[j].value();
    os << "]\n";
  }
  const auto [ln, queue] = token_of(w);
  os << "  token: "
     << (w.token_in_flight() ? "in flight to rank " + std::to_string(w.flight_to().value())
                             : "on node " + std::to_string(holder_of(w).value_or(-1)))
     << ", LN = [";
  for (std::size_t j = 0; j < ln.size(); ++j) os << (j ? " " : "") << ln[j];
  os << "], Q = " << join(queue) << "\n  pending:";
  if (w.pending().empty()) os << " none";
  for (const node_request& m : w.pending())
    os << " " << m.requester.value() << "->node" << m.to << "#" << m.seq.value();
  os << "\n  messages sent: " << w.messages() << "\n";
  return os.str();
}

}  // namespace

report execute_two_level(const script& s) {
  cohort_world w(s.node_sizes, s.owner, s.pass_bound);
  return run_statements(
      s, w, take, check, [](const cohort_world& x) { return describe(x); },
      [](const cohort_world& before, const cohort_world& now, const std::string& text) -> std::optional<std::string> {
        if (auto bad = now.violation()) return "invariant broken after `" + text + "`: " + *bad;
        if (auto bad = now.regression_from(before)) return "monotonicity broken by `" + text + "`: " + *bad;
        if (auto bad = now.counter_mismatch())
          return "counters disagree with the network after `" + text + "`: " + *bad;
        return std::nullopt;
      });
}

}  // namespace tally::check::replay
