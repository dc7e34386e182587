// check/replay_run.cpp — a parsed trace run on check::world, the report, and the
// `tally-sim replay` command (check/replay.hpp).
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <system_error>

#include "check/replay.hpp"
#include "check/replay_steps.hpp"

namespace tally::check::replay {

using op = statement::op;

namespace {
// "[a b c]", each element mapped to a number by f.
template <class Range, class F>
std::string list_of(const Range& xs, F f) {
  std::string s = "[";
  for (const auto& x : xs) s += (s.size() > 1 ? " " : "") + std::to_string(f(x));
  return s + "]";
}
constexpr auto id_of = [](rank_t r) { return r.value(); };
constexpr auto number_of = [](seq_t q) { return q.value(); };
constexpr auto ln_of = [](protocol::ln_t l) { return l; };

std::string where(const world& w) {
  if (const auto h = w.holder()) return "held by rank " + std::to_string(h->value());
  if (w.flight()) return "in flight to rank " + std::to_string(w.flight()->to.value());
  return "lost";
}

std::string mode_of(const protocol::peer& nd) { return to_string(nd.mode()) + (nd.withdrawn() ? " (withdrawn)" : ""); }

verdict take(world& w, const statement& st) {
  switch (st.what) {
    case op::request: return w.request(rank_t(*st.a));
    case op::withdraw: return w.withdraw(rank_t(*st.a));
    case op::deliver:
      return w.deliver(rank_t(*st.a), rank_t(*st.b), st.value ? std::optional<seq_t>(seq_t(*st.value)) : std::nullopt);
    case op::token: return w.deliver_token();
    case op::exit: return w.exit(rank_t(*st.a));
    default: return verdict::refuse("not a step");
  }
}

// Checks an expect; returns "expected ..., found ..." if it does not hold.
std::optional<std::string> check(const world& w, const statement& st) {
  const auto peer = [&](std::int32_t i) -> const protocol::peer& { return w.peer(rank_t(i)); };
  const auto mismatch = [](const std::string& expected, const std::string& found) {
    return std::optional<std::string>("expected " + expected + ", found " + found);
  };
  switch (st.what) {
    case op::holder: {
      const auto h = w.holder();
      const std::optional<std::int32_t> got = h ? std::optional(h->value()) : std::nullopt;
      if (got == st.a) return std::nullopt;
      return mismatch(st.a ? "the token held by rank " + std::to_string(*st.a) : "the token in flight",
                      "it " + where(w));
    }
    case op::incs:
    case op::idle:
    case op::requesting: {
      const protocol::mode want = st.what == op::incs   ? protocol::mode::in_cs
                                  : st.what == op::idle ? protocol::mode::idle
                                                        : protocol::mode::requesting;
      if (peer(*st.a).mode() == want) return std::nullopt;
      return mismatch("rank " + std::to_string(*st.a) + " " + to_string(want), mode_of(peer(*st.a)));
    }
    case op::withdrawn:
      if (peer(*st.a).withdrawn()) return std::nullopt;
      return mismatch("rank " + std::to_string(*st.a) + " withdrawn", mode_of(peer(*st.a)));
    case op::rn: {
      const std::uint64_t got = peer(*st.a).rn(rank_t(*st.b)).value();
      if (got == *st.value) return std::nullopt;
      return mismatch("RN_" + std::to_string(*st.a) + "[" + std::to_string(*st.b) + "] = " + std::to_string(*st.value),
                      std::to_string(got));
    }
    case op::ln: {
      const std::uint64_t got = w.token().ln[static_cast<std::size_t>(*st.a)];
      if (got == *st.value) return std::nullopt;
      return mismatch("LN[" + std::to_string(*st.a) + "] = " + std::to_string(*st.value), std::to_string(got));
    }
    case op::queue: {
      const std::string got = list_of(w.token().queue, id_of);
      const std::string want = list_of(st.list, [](std::int32_t i) { return i; });
      if (got == want) return std::nullopt;
      return mismatch("Q = " + want, got);
    }
    case op::inflight: {
      const auto& f = w.flight();
      const std::optional<std::int32_t> got = f ? std::optional(f->to.value()) : std::nullopt;
      if (got == st.a) return std::nullopt;
      return mismatch(st.a ? "the token in flight to rank " + std::to_string(*st.a) : "no token in flight",
                      "it " + where(w));
    }
    case op::pending: {
      const std::size_t got = w.pending_count(rank_t(*st.a), rank_t(*st.b));
      if (got == *st.value) return std::nullopt;
      return mismatch(std::to_string(*st.value) + " pending REQUEST(s) from rank " + std::to_string(*st.a) +
                          " to rank " + std::to_string(*st.b),
                      std::to_string(got));
    }
    case op::messages:
      if (w.messages() == *st.value) return std::nullopt;
      return mismatch(std::to_string(*st.value) + " messages sent", std::to_string(w.messages()));
    default: return "not an expectation";
  }
}

}  // namespace

report execute(const script& s) {
  if (s.two_level()) return execute_two_level(s);
  world w(s.ranks, rank_t(s.owner));
  return run_statements(
      s, w, take, check, [](const world& x) { return describe(x); },
      [](const world& before, const world& now, const std::string& text) -> std::optional<std::string> {
        if (auto bad = now.violation()) return "invariant broken after `" + text + "`: " + *bad;
        if (auto bad = now.regression_from(before)) return "monotonicity broken by `" + text + "`: " + *bad;
        return std::nullopt;
      });
}

report run_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return report{outcome::rejected, 0, "cannot read trace: it is a directory", {}, 0, 0};
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    const std::string why = errno ? std::generic_category().message(errno) : "cannot be opened";
    return report{outcome::rejected, 0, "cannot read trace: " + why, {}, 0, 0};
  }
  auto parsed = parse(in);
  if (auto* bad = std::get_if<report>(&parsed)) return std::move(*bad);
  return execute(std::get<script>(parsed));
}

std::string format(const report& r, std::string_view file) {
  std::ostringstream os;
  os << file;
  if (r.line) os << ":" << r.line;
  os << ": ";
  if (r.code == outcome::pass) {
    os << "pass (" << r.steps << " steps, " << r.expects << " expects)\n";
    return os.str();
  }
  os << r.message << "\n";
  if (!r.state.empty()) os << "state after line " << r.line << ":\n" << r.state;
  return os.str();
}

std::string describe(const world& w) {
  std::ostringstream os;
  const protocol::token* t = w.flight() ? &w.flight()->token : nullptr;
  for (const protocol::peer& nd : w.peers()) {
    os << "  rank " << nd.self().value() << ": " << mode_of(nd) << (nd.holds_token() ? ", holds the token" : "")
       << ", RN = " << list_of(nd.rn(), number_of) << "\n";
    if (nd.holds_token()) t = nd.held();
  }
  os << "  token: " << where(w);
  if (t) os << ", LN = " << list_of(t->ln, ln_of) << ", Q = " << list_of(t->queue, id_of);
  os << "\n  pending:";
  if (w.pending().empty()) os << " none";
  for (const request_msg& m : w.pending()) os << " " << m.from.value() << "->" << m.to.value() << "#" << m.seq.value();
  os << "\n  messages sent: " << w.messages() << "\n";
  return os.str();
}

int main(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  static constexpr std::string_view usage =
      "usage: tally-sim replay FILE\n"
      "Runs a scripted trace on the protocol core, checking every invariant after every\n"
      "step. Exit status: 0 pass; 1 an expect or invariant failed; 2 a step was rejected\n"
      "or the trace is missing or malformed. The format is described in docs/protocol.md.\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << usage;
    return 0;
  }
  if (args.size() != 1 || args[0].starts_with("-")) {
    err << usage;
    return static_cast<int>(outcome::rejected);
  }
  const std::string file(args[0]);
  const report r = run_file(file);
  (r.code == outcome::pass ? out : err) << format(r, file);
  return static_cast<int>(r.code);
}

}  // namespace tally::check::replay
