// check/replay_parse.cpp — the trace language: text to a script (check/replay.hpp).
#include <algorithm>
#include <charconv>
#include <istream>

#include "check/replay.hpp"

namespace tally::check::replay {

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
  cursor(std::vector<std::string_view> words, std::int32_t ranks, std::int32_t nodes = 0)
      : w_(std::move(words)), ranks_(ranks), nodes_(nodes) {}

  void set_ranks(std::int32_t n) { ranks_ = n; }
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
  std::int32_t rank(const char* what = "a rank id") {
    const std::uint64_t v = number(what);
    if (v >= static_cast<std::uint64_t>(ranks_))
      throw syntax_error{"rank " + std::to_string(v) + " out of range [0, " + std::to_string(ranks_) + ")"};
    return static_cast<std::int32_t>(v);
  }
  // A node id of a two-level trace.
  std::int32_t node(const char* what = "a node id") {
    const std::uint64_t v = number(what);
    if (v >= static_cast<std::uint64_t>(nodes_))
      throw syntax_error{"node " + std::to_string(v) + " out of range [0, " + std::to_string(nodes_) + ")"};
    return static_cast<std::int32_t>(v);
  }
  // Rank (or node) id, or empty for the word "none".
  std::optional<std::int32_t> rank_or_none(bool of_node = false) {
    if (peek() == "none") {
      ++k_;
      return std::nullopt;
    }
    return of_node ? node("a node id or 'none'") : rank("a rank id or 'none'");
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
  std::int32_t ranks_;
  std::int32_t nodes_;
};

// Parses `cohort KxR | cohort S0,S1,... [bound B] [owner K0]` into s.
void parse_cohort_header(cursor& c, script& s) {
  const std::string_view shape = c.word("the nodes (KxR or S0,S1,...)");
  auto count = [](std::string_view w, const char* what) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (ec != std::errc{} || end != w.data() + w.size() || v < 1 || v > static_cast<std::uint64_t>(max_ranks))
      throw syntax_error{std::string("expected ") + what + " in [1, " + std::to_string(max_ranks) + "], got '" +
                         std::string(w) + "'"};
    return static_cast<std::int32_t>(v);
  };
  if (const auto x = shape.find('x'); x != std::string_view::npos) {
    const std::int32_t k = count(shape.substr(0, x), "a node count");
    s.node_sizes.assign(static_cast<std::size_t>(k), count(shape.substr(x + 1), "ranks per node"));
  } else {
    for (std::size_t i = 0; i <= shape.size();) {
      const std::size_t comma = std::min(shape.find(',', i), shape.size());
      s.node_sizes.push_back(count(shape.substr(i, comma - i), "a node's rank count"));
      i = comma + 1;
    }
  }
  std::uint64_t n = 0;
  for (std::int32_t r : s.node_sizes) n += static_cast<std::uint64_t>(r);
  if (n > static_cast<std::uint64_t>(max_ranks))
    throw syntax_error{std::to_string(n) + " ranks exceed " + std::to_string(max_ranks)};
  s.ranks = static_cast<std::int32_t>(n);
  while (!c.done()) {
    const std::string_view key = c.word("'bound' or 'owner'");
    if (key == "bound") {
      const std::uint64_t b = c.number("the pass bound");
      if (b < 1 || b > (std::uint64_t{1} << 20)) throw syntax_error{"pass bound outside [1, 2^20]"};
      s.pass_bound = static_cast<std::uint32_t>(b);
    } else if (key == "owner") {
      const std::uint64_t k = c.number("the owner node");
      if (k >= s.node_sizes.size())
        throw syntax_error{"owner node " + std::to_string(k) + " out of range [0, " +
                           std::to_string(s.node_sizes.size()) + ")"};
      s.owner = static_cast<std::int32_t>(k);
    } else {
      throw syntax_error{"expected 'bound B' or 'owner K' after the nodes, got '" + std::string(key) + "'"};
    }
  }
}

// Parses `ranks N [owner I]` into s.
void parse_header(cursor& c, script& s) {
  const std::uint64_t n = c.number("the rank count");
  if (n < 1 || n > static_cast<std::uint64_t>(max_ranks))
    throw syntax_error{"rank count " + std::to_string(n) + " outside [1, " + std::to_string(max_ranks) + "]"};
  s.ranks = static_cast<std::int32_t>(n);
  c.set_ranks(s.ranks);
  if (!c.done()) {
    if (c.word("'owner'") != "owner") throw syntax_error{"expected 'owner I' after 'ranks N'"};
    s.owner = c.rank("the owner");
  }
  c.end();
}

statement parse_expect(cursor& c, bool two_level) {
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
      {"waiting", op::waiting},
      {"local", op::local},
      {"passes", op::passes},
  };
  const std::string_view what = c.word("what to expect");
  statement st;
  const auto* it = std::find_if(std::begin(names), std::end(names), [&](const auto& e) { return e.first == what; });
  if (it == std::end(names)) throw syntax_error{"unknown expectation '" + std::string(what) + "'"};
  st.what = it->second;
  const bool flat_only = st.what == op::withdrawn;
  const bool two_level_only = st.what == op::waiting || st.what == op::local || st.what == op::passes;
  if (two_level ? flat_only : two_level_only)
    throw syntax_error{"'expect " + std::string(what) + "' is for " + (two_level ? "flat" : "two-level (cohort)") +
                       " traces"};
  // Two-level traces name a node where the state is a node's.
  auto id = [&] { return two_level ? c.node() : c.rank(); };
  switch (st.what) {
    case op::holder: st.a = c.rank_or_none(two_level); break;
    case op::inflight: st.a = c.rank_or_none(); break;
    case op::incs:
    case op::idle:
    case op::waiting:
    case op::withdrawn: st.a = c.rank(); break;
    case op::requesting: st.a = id(); break;
    case op::rn:
      st.a = id();
      st.b = id();
      st.value = c.equals_number("value");
      break;
    case op::ln:
      st.a = id();
      st.value = c.equals_number("value");
      break;
    case op::local:
      st.a = c.node();
      while (!c.done()) st.list.push_back(c.rank());
      break;
    case op::passes:
      st.a = c.node();
      st.value = c.equals_number("count");
      break;
    case op::queue:
      while (!c.done()) st.list.push_back(c.rank());
      break;
    case op::pending:
      st.a = c.rank();
      st.b = id();
      st.value = c.equals_number("count");
      break;
    case op::messages: st.value = c.equals_number("count"); break;
    default: break;
  }
  c.end();
  return st;
}

statement parse_step(std::string_view verb, cursor& c, bool two_level) {
  statement st;
  if (verb == "request" || verb == "withdraw" || verb == "exit") {
    st.what = verb == "request" ? op::request : verb == "withdraw" ? op::withdraw : op::exit;
    st.a = c.rank();
  } else if (verb == "deliver") {
    st.what = op::deliver;
    st.a = c.rank(two_level ? "the asking rank" : "the sender");
    st.b = two_level ? c.node("the receiving node") : c.rank("the receiver");
    if (!c.done()) st.value = c.number("a sequence number");
  } else if (verb == "token") {
    st.what = op::token;
  } else {
    throw syntax_error{"unknown statement '" + std::string(verb) + "'"};
  }
  c.end();
  return st;
}

}  // namespace

std::variant<script, report> parse(std::istream& in) {
  script s;
  bool header = false;
  bool owner_allowed = false;  // a standalone `owner` line may follow `ranks N`
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
      cursor c(words, s.ranks, static_cast<std::int32_t>(s.node_sizes.size()));
      const std::string_view verb = c.word("a statement");
      if (!header) {
        // `nodes N`: the old spelling of `ranks N`, still accepted (deprecated).
        if (verb == "cohort") {
          parse_cohort_header(c, s);
        } else if (verb == "ranks" || verb == "nodes") {
          parse_header(c, s);
          owner_allowed = words.size() == 2;
        } else {
          throw syntax_error{"the first statement must be 'ranks N' or 'cohort KxR'"};
        }
        header = true;
        continue;
      }
      if (verb == "ranks" || verb == "nodes" || verb == "cohort")
        throw syntax_error{"'" + std::string(verb) + "' may appear only once, first"};
      if (verb == "owner") {
        if (!owner_allowed) throw syntax_error{"'owner I' must directly follow 'ranks N'"};
        s.owner = c.rank("the owner");
        c.end();
        owner_allowed = false;
        continue;
      }
      owner_allowed = false;
      statement st = verb == "expect" ? parse_expect(c, s.two_level()) : parse_step(verb, c, s.two_level());
      st.line = line;
      st.text = std::move(text);
      s.body.push_back(std::move(st));
    } catch (const syntax_error& e) {
      return report{outcome::rejected, line, "syntax error in `" + text + "`: " + e.why, {}, 0, 0};
    }
  }
  if (in.bad()) return report{outcome::rejected, 0, "read error", {}, 0, 0};
  if (!header) return report{outcome::rejected, 0, "empty trace: expected 'ranks N' or 'cohort KxR'", {}, 0, 0};
  return s;
}

}  // namespace tally::check::replay
