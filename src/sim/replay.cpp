#include "sim/replay.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>
#include <system_error>

namespace tally::sim::replay {

using op = statement::op;

namespace {

// Thrown inside parse() only; becomes a rejected report for the current line.
struct syntax_error {
  std::string why;
};

std::vector<std::string_view> words_of(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (true) {
    i = s.find_first_not_of(" \t\r", i);
    if (i == std::string_view::npos) return out;
    const std::size_t end = std::min(s.find_first_of(" \t\r", i), s.size());
    out.push_back(s.substr(i, end - i));
    i = end;
  }
}

// The words of one statement, consumed left to right.
class cursor {
 public:
  cursor(std::vector<std::string_view> words, std::int32_t nodes)
      : w_(std::move(words)), nodes_(nodes) {}

  void set_nodes(std::int32_t n) { nodes_ = n; }
  bool done() const { return k_ == w_.size(); }
  std::string_view peek() const { return done() ? std::string_view{} : w_[k_]; }
  std::string_view word(const char* what) {
    if (done()) throw syntax_error{std::string("missing ") + what};
    return w_[k_++];
  }
  std::uint64_t number(const char* what) {
    const std::string_view s = word(what);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size())
      throw syntax_error{std::string("expected ") + what + ", got '" + std::string(s) + "'"};
    return v;
  }
  std::int32_t node(const char* what = "a node id") {
    const std::uint64_t v = number(what);
    if (v >= static_cast<std::uint64_t>(nodes_))
      throw syntax_error{"node " + std::to_string(v) + " out of range [0, " +
                         std::to_string(nodes_) + ")"};
    return static_cast<std::int32_t>(v);
  }
  // Node id, or empty for the word "none".
  std::optional<std::int32_t> node_or_none() {
    if (peek() == "none") {
      ++k_;
      return std::nullopt;
    }
    return node("a node id or 'none'");
  }
  std::uint64_t equals_number(const char* what) {
    if (word("'='") != "=") throw syntax_error{"expected '=' before the " + std::string(what)};
    return number(what);
  }
  void end() const {
    if (!done()) throw syntax_error{"unexpected '" + std::string(w_[k_]) + "'"};
  }

 private:
  std::vector<std::string_view> w_;
  std::size_t k_ = 0;
  std::int32_t nodes_;
};

// Parses `nodes N [owner I]` into s.
void parse_header(cursor& c, script& s) {
  const std::uint64_t n = c.number("the node count");
  if (n < 1 || n > static_cast<std::uint64_t>(max_nodes))
    throw syntax_error{"node count " + std::to_string(n) + " outside [1, " +
                       std::to_string(max_nodes) + "]"};
  s.nodes = static_cast<std::int32_t>(n);
  c.set_nodes(s.nodes);
  if (!c.done()) {
    if (c.word("'owner'") != "owner") throw syntax_error{"expected 'owner I' after 'nodes N'"};
    s.owner = c.node("the owner");
  }
  c.end();
}

statement parse_expect(cursor& c) {
  static constexpr std::pair<std::string_view, op> names[] = {
      {"holder", op::holder},
      {"incs", op::incs},
      {"idle", op::idle},
      {"requesting", op::requesting},
      {"withdrawn", op::withdrawn},
      {"rn", op::rn},
      {"ln", op::ln},
      {"queue", op::queue},
      {"inflight", op::inflight},
      {"pending", op::pending},
      {"messages", op::messages},
  };
  const std::string_view what = c.word("what to expect");
  statement st;
  const auto* it = std::find_if(std::begin(names), std::end(names),
                                [&](const auto& e) { return e.first == what; });
  if (it == std::end(names)) throw syntax_error{"unknown expectation '" + std::string(what) + "'"};
  st.what = it->second;
  switch (st.what) {
    case op::holder:
    case op::inflight: st.a = c.node_or_none(); break;
    case op::incs:
    case op::idle:
    case op::requesting:
    case op::withdrawn: st.a = c.node(); break;
    case op::rn:
      st.a = c.node();
      st.b = c.node();
      st.value = c.equals_number("value");
      break;
    case op::ln:
      st.a = c.node();
      st.value = c.equals_number("value");
      break;
    case op::queue:
      while (!c.done()) st.list.push_back(c.node());
      break;
    case op::pending:
      st.a = c.node();
      st.b = c.node();
      st.value = c.equals_number("count");
      break;
    case op::messages: st.value = c.equals_number("count"); break;
    default: break;
  }
  c.end();
  return st;
}

statement parse_step(std::string_view verb, cursor& c) {
  statement st;
  if (verb == "request" || verb == "withdraw" || verb == "exit") {
    st.what = verb == "request" ? op::request : verb == "withdraw" ? op::withdraw : op::exit;
    st.a = c.node();
  } else if (verb == "deliver") {
    st.what = op::deliver;
    st.a = c.node("the sender");
    st.b = c.node("the receiver");
    if (!c.done()) st.value = c.number("a sequence number");
  } else if (verb == "token") {
    st.what = op::token;
  } else {
    throw syntax_error{"unknown statement '" + std::string(verb) + "'"};
  }
  c.end();
  return st;
}

// "[a b c]", each element mapped to a number by f.
template <class Range, class F>
std::string list_of(const Range& xs, F f) {
  std::string s = "[";
  for (const auto& x : xs) s += (s.size() > 1 ? " " : "") + std::to_string(f(x));
  return s + "]";
}
constexpr auto id_of = [](rank_t r) { return r.value(); };
constexpr auto number_of = [](seq_t q) { return q.value(); };

std::string where(const world& w) {
  if (const auto h = w.holder()) return "held by node " + std::to_string(h->value());
  if (w.flight()) return "in flight to node " + std::to_string(w.flight()->to.value());
  return "lost";
}

std::string mode_of(const protocol::node& nd) {
  return to_string(nd.mode()) + (nd.withdrawn() ? " (withdrawn)" : "");
}

verdict take(world& w, const statement& st) {
  switch (st.what) {
    case op::request: return w.request(rank_t(*st.a));
    case op::withdraw: return w.withdraw(rank_t(*st.a));
    case op::deliver:
      return w.deliver(rank_t(*st.a), rank_t(*st.b),
                       st.value ? std::optional<seq_t>(seq_t(*st.value)) : std::nullopt);
    case op::token: return w.deliver_token();
    case op::exit: return w.exit(rank_t(*st.a));
    default: return verdict::refuse("not a step");
  }
}

// Checks an expect; returns "expected ..., found ..." if it does not hold.
std::optional<std::string> check(const world& w, const statement& st) {
  const auto node = [&](std::int32_t i) -> const protocol::node& { return w.node(rank_t(i)); };
  const auto mismatch = [](const std::string& expected, const std::string& found) {
    return std::optional<std::string>("expected " + expected + ", found " + found);
  };
  switch (st.what) {
    case op::holder: {
      const auto h = w.holder();
      const std::optional<std::int32_t> got = h ? std::optional(h->value()) : std::nullopt;
      if (got == st.a) return std::nullopt;
      return mismatch(
          st.a ? "the token held by node " + std::to_string(*st.a) : "the token in flight",
          "it " + where(w));
    }
    case op::incs:
    case op::idle:
    case op::requesting: {
      const protocol::mode want = st.what == op::incs   ? protocol::mode::in_cs
                                  : st.what == op::idle ? protocol::mode::idle
                                                        : protocol::mode::requesting;
      if (node(*st.a).mode() == want) return std::nullopt;
      return mismatch("node " + std::to_string(*st.a) + " " + to_string(want),
                      mode_of(node(*st.a)));
    }
    case op::withdrawn:
      if (node(*st.a).withdrawn()) return std::nullopt;
      return mismatch("node " + std::to_string(*st.a) + " withdrawn", mode_of(node(*st.a)));
    case op::rn: {
      const std::uint64_t got = node(*st.a).rn(rank_t(*st.b)).value();
      if (got == *st.value) return std::nullopt;
      return mismatch("RN_" + std::to_string(*st.a) + "[" + std::to_string(*st.b) +
                          "] = " + std::to_string(*st.value),
                      std::to_string(got));
    }
    case op::ln: {
      const std::uint64_t got = w.token().ln[static_cast<std::size_t>(*st.a)].value();
      if (got == *st.value) return std::nullopt;
      return mismatch("LN[" + std::to_string(*st.a) + "] = " + std::to_string(*st.value),
                      std::to_string(got));
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
      return mismatch(
          st.a ? "the token in flight to node " + std::to_string(*st.a) : "no token in flight",
          "it " + where(w));
    }
    case op::pending: {
      const std::size_t got = w.pending_count(rank_t(*st.a), rank_t(*st.b));
      if (got == *st.value) return std::nullopt;
      return mismatch(std::to_string(*st.value) + " pending REQUEST(s) from node " +
                          std::to_string(*st.a) + " to node " + std::to_string(*st.b),
                      std::to_string(got));
    }
    case op::messages:
      if (w.messages() == *st.value) return std::nullopt;
      return mismatch(std::to_string(*st.value) + " messages sent", std::to_string(w.messages()));
    default: return "not an expectation";
  }
}

}  // namespace

std::variant<script, report> parse(std::istream& in) {
  script s;
  bool header = false;
  bool owner_allowed = false;  // a standalone `owner` line may follow `nodes N`
  std::string raw;
  for (std::size_t line = 1; std::getline(in, raw); ++line) {
    std::string text = raw.substr(0, raw.find('#'));
    std::string spaced;
    for (char ch : text) spaced += ch == '=' ? std::string(" = ") : std::string(1, ch);
    std::vector<std::string_view> words = words_of(spaced);
    if (words.empty()) continue;
    text.clear();  // the statement normalized: words joined by single blanks
    for (std::string_view w : words) {
      if (!text.empty()) text += ' ';
      text += w;
    }
    try {
      cursor c(words, s.nodes);
      const std::string_view verb = c.word("a statement");
      if (!header) {
        if (verb != "nodes") throw syntax_error{"the first statement must be 'nodes N'"};
        parse_header(c, s);
        header = true;
        owner_allowed = words.size() == 2;
        continue;
      }
      if (verb == "nodes") throw syntax_error{"'nodes' may appear only once, first"};
      if (verb == "owner") {
        if (!owner_allowed) throw syntax_error{"'owner I' must directly follow 'nodes N'"};
        s.owner = c.node("the owner");
        c.end();
        owner_allowed = false;
        continue;
      }
      owner_allowed = false;
      statement st = verb == "expect" ? parse_expect(c) : parse_step(verb, c);
      st.line = line;
      st.text = std::move(text);
      s.body.push_back(std::move(st));
    } catch (const syntax_error& e) {
      return report{outcome::rejected, line, "syntax error in `" + text + "`: " + e.why, {}, 0, 0};
    }
  }
  if (in.bad()) return report{outcome::rejected, 0, "read error", {}, 0, 0};
  if (!header) return report{outcome::rejected, 0, "empty trace: expected 'nodes N'", {}, 0, 0};
  return s;
}

report execute(const script& s) {
  report r;
  world w(s.nodes, rank_t(s.owner));
  const auto stop = [&](outcome code, const statement& st, std::string why) {
    r.code = code;
    r.line = st.line;
    r.message = std::move(why);
    r.state = describe(w);
    return r;
  };
  for (const statement& st : s.body) {
    if (!st.is_step()) {
      if (auto miss = check(w, st))
        return stop(outcome::failed, st, "`" + st.text + "` failed: " + *miss);
      ++r.expects;
      continue;
    }
    const world before = w;
    if (const verdict v = take(w, st); !v)
      return stop(outcome::rejected, st, "step `" + st.text + "` rejected: " + v.reason);
    ++r.steps;
    if (auto bad = w.violation())
      return stop(outcome::failed, st, "invariant broken after `" + st.text + "`: " + *bad);
    if (auto bad = w.regression_from(before))
      return stop(outcome::failed, st, "monotonicity broken by `" + st.text + "`: " + *bad);
  }
  return r;
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
  for (const protocol::node& nd : w.nodes()) {
    os << "  node " << nd.self().value() << ": " << mode_of(nd)
       << (nd.holds_token() ? ", holds the token" : "") << ", RN = " << list_of(nd.rn(), number_of)
       << "\n";
    if (nd.holds_token()) t = nd.held();
  }
  os << "  token: " << where(w);
  if (t) os << ", LN = " << list_of(t->ln, number_of) << ", Q = " << list_of(t->queue, id_of);
  os << "\n  pending:";
  if (w.pending().empty()) os << " none";
  for (const request_msg& m : w.pending())
    os << " " << m.from.value() << "->" << m.to.value() << "#" << m.seq.value();
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

}  // namespace tally::sim::replay
