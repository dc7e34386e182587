#include "check/world.hpp"

#include <algorithm>
#include <stdexcept>
#include <sstream>

namespace tally::check {

using protocol::action;
using protocol::mode;

std::string to_string(mode m) {
  switch (m) {
    case mode::idle: return "idle";
    case mode::requesting: return "requesting";
    case mode::in_cs: return "in CS";
  }
  return "?";
}

world::world(std::int32_t n, rank_t owner) {
  if (n < 1) throw protocol::bad_argument("need at least 1 rank, got " + std::to_string(n));
  peers_.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) peers_.emplace_back(rank_t(i), n, owner);
}

world world::assemble(std::vector<protocol::peer> peers, std::vector<request_msg> pending,
                      std::optional<in_flight> flight) {
  const auto n = static_cast<std::int32_t>(peers.size());
  if (n < 1) throw protocol::bad_argument("assemble: need at least 1 rank");
  const auto in_range = [n](rank_t r) { return r.value() >= 0 && r.value() < n; };
  for (std::int32_t i = 0; i < n; ++i)
    if (peers[static_cast<std::size_t>(i)].self() != rank_t(i) || peers[static_cast<std::size_t>(i)].size() != n)
      throw protocol::bad_argument("assemble: peers[" + std::to_string(i) + "] is not rank " + std::to_string(i) +
                                   " of " + std::to_string(n));
  for (const request_msg& m : pending)
    if (!in_range(m.from) || !in_range(m.to))
      throw protocol::bad_argument("assemble: REQUEST names a rank out of range");
  if (flight && (!in_range(flight->to) || flight->token.ln.size() != peers.size()))
    throw protocol::bad_argument("assemble: bad token in flight");
  world w(n, rank_t(0));
  w.peers_ = std::move(peers);
  w.pending_ = std::move(pending);
  std::sort(w.pending_.begin(), w.pending_.end());
  w.flight_ = std::move(flight);
  return w;
}

verdict world::refused(rank_t i, const char* what, protocol::status st) const {
  std::ostringstream os;
  os << what << " at rank " << i.value() << ": " << protocol::describe(st) << " (rank is "
     << to_string(peers_[i.index()].mode()) << ")";
  return verdict::refuse(os.str());
}

static verdict bad_rank(rank_t i, std::int32_t n) {
  return verdict::refuse("rank " + std::to_string(i.value()) + " out of range [0, " + std::to_string(n) + ")");
}

void world::carry(protocol::peer& sender, const protocol::step& s) {
  switch (s.act.what) {
    case action::kind::none: return;
    case action::kind::broadcast_request:
      for (std::int32_t j = 0; j < size(); ++j)
        if (rank_t(j) != sender.self()) pending_.push_back({sender.self(), rank_t(j), s.act.seq});
      std::sort(pending_.begin(), pending_.end());
      messages_ += static_cast<std::uint64_t>(size() - 1);
      return;
    case action::kind::send_token:
      flight_ = in_flight{s.act.to, *sender.take_token()};
      ++messages_;
      return;
  }
}

verdict world::request(rank_t i) {
  if (i.value() < 0 || i.value() >= size()) return bad_rank(i, size());
  protocol::peer& nd = peers_[i.index()];
  const protocol::step s = nd.lock();
  if (!s.ok()) return refused(i, "request", s.st);
  carry(nd, s);
  return {};
}

verdict world::withdraw(rank_t i) {
  if (i.value() < 0 || i.value() >= size()) return bad_rank(i, size());
  const protocol::step s = peers_[i.index()].withdraw();
  if (!s.ok()) return refused(i, "withdraw", s.st);
  return {};
}

std::size_t world::pending_count(rank_t from, rank_t to) const {
  return static_cast<std::size_t>(std::count_if(pending_.begin(), pending_.end(),
                                                [&](const request_msg& m) { return m.from == from && m.to == to; }));
}

verdict world::deliver(rank_t j, rank_t i, std::optional<seq_t> seq) {
  if (j.value() < 0 || j.value() >= size()) return bad_rank(j, size());
  if (i.value() < 0 || i.value() >= size()) return bad_rank(i, size());
  // pending_ is sorted by (from, to, seq): the first match is the oldest.
  const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const request_msg& m) {
    return m.from == j && m.to == i && (!seq || m.seq == *seq);
  });
  if (it == pending_.end()) {
    std::string why =
        "no pending REQUEST from rank " + std::to_string(j.value()) + " to rank " + std::to_string(i.value());
    if (seq) why += " with sequence " + std::to_string(seq->value());
    return verdict::refuse(why);
  }
  protocol::peer& nd = peers_[i.index()];
  const protocol::step s = nd.on_request(it->from, it->seq);
  if (!s.ok()) return refused(i, "deliver", s.st);
  pending_.erase(it);
  carry(nd, s);
  return {};
}

verdict world::deliver_token() {
  if (!flight_) return verdict::refuse("no token in flight");
  protocol::peer& nd = peers_[flight_->to.index()];
  protocol::token t = flight_->token;
  const protocol::step s = nd.on_token(std::move(t));
  if (!s.ok()) return refused(flight_->to, "token delivery", s.st);
  flight_.reset();
  carry(nd, s);
  return {};
}

verdict world::exit(rank_t i) {
  if (i.value() < 0 || i.value() >= size()) return bad_rank(i, size());
  protocol::peer& nd = peers_[i.index()];
  const protocol::step s = nd.unlock();
  if (!s.ok()) return refused(i, "exit", s.st);
  carry(nd, s);
  return {};
}

std::optional<rank_t> world::holder() const {
  for (const auto& nd : peers_)
    if (nd.holds_token()) return nd.self();
  return std::nullopt;
}

const protocol::token& world::token() const {
  if (flight_) return flight_->token;
  for (const auto& nd : peers_)
    if (nd.holds_token()) return *nd.held();
  throw std::logic_error("the token is lost");
}

bool world::can_progress() const noexcept {
  if (!pending_.empty() || flight_) return true;
  return std::any_of(peers_.begin(), peers_.end(), [](const protocol::peer& nd) { return nd.mode() == mode::in_cs; });
}

bool world::quiescent() const noexcept {
  return pending_.empty() && !flight_ &&
         std::all_of(peers_.begin(), peers_.end(), [](const protocol::peer& nd) { return nd.mode() == mode::idle; });
}

namespace {
using report = detail::failure_text;
}  // namespace

std::optional<std::string> world::violation() const {
  const std::size_t n = peers_.size();
  std::size_t owners = 0;
  for (const auto& nd : peers_) {
    if (nd.holds_token()) ++owners;
    if (nd.outgoing()) return report{}("rank ", nd.self().value(), " has an untaken outgoing token");
    if (nd.mode() == mode::in_cs && !nd.holds_token())
      return report{}("rank ", nd.self().value(), " is in its CS without the token");
    if (nd.withdrawn() && nd.mode() != mode::requesting)
      return report{}("rank ", nd.self().value(), " is withdrawn but not requesting");
  }
  if (owners + (flight_ ? 1 : 0) != 1)
    return report{}("token count is ", owners + (flight_ ? 1 : 0), " (", owners, " owners, ", flight_ ? 1 : 0,
                    " in flight), expected 1");

  const protocol::token& t = token();
  if (t.ln.size() != n) return report{}("token LN has ", t.ln.size(), " entries for ", n, " ranks");

  for (std::size_t j = 0; j < n; ++j) {
    const protocol::peer& nj = peers_[j];
    const seq_t own = nj.rn(nj.self());
    for (std::size_t i = 0; i < n; ++i)
      if (peers_[i].rn(nj.self()) > own)
        return report{}("RN_", i, "[", j, "] = ", peers_[i].rn(nj.self()).value(), " exceeds RN_", j, "[", j,
                        "] = ", own.value());
    if (!carried(j)) {  // queued or the token's destination: 0, as on the wire
      if (t.ln[j] != 0) return report{}("LN[", j, "] = ", t.ln[j], " for a rank the token does not carry it for");
      continue;
    }
    const seq_t lnj(t.ln[j]);  // the checks' values stay far below 2^32
    if (lnj > own || own > lnj.next())
      return report{}("LN[", j, "] = ", t.ln[j], " but RN_", j, "[", j, "] = ", own.value(),
                      " (need LN <= RN <= LN + 1)");
    if (nj.mode() == mode::idle && own != lnj)
      return report{}("idle rank ", j, " has RN_", j, "[", j, "] = ", own.value(), " != LN[", j, "] = ", t.ln[j]);
    if (nj.mode() == mode::requesting && own != lnj.next())
      return report{}("requesting rank ", j, " has RN_", j, "[", j, "] = ", own.value(), " != LN[", j,
                      "] + 1 = ", std::uint64_t{t.ln[j]} + 1);
  }

  std::vector<bool> seen(n, false);
  const std::optional<rank_t> h = holder();
  for (rank_t q : t.queue) {
    if (q.value() < 0 || q.index() >= n) return report{}("Q holds out-of-range id ", q.value());
    if (seen[q.index()]) return report{}("Q holds rank ", q.value(), " twice");
    seen[q.index()] = true;
    if (peers_[q.index()].mode() != mode::requesting) return report{}("Q member ", q.value(), " is not requesting");
    if (h && *h == q) return report{}("Q member ", q.value(), " is the holder");
    if (flight_ && flight_->to == q) return report{}("Q member ", q.value(), " is the in-flight destination");
  }
  if (h && peers_[h->index()].mode() == mode::idle) {
    if (!t.queue.empty()) return report{}("idle holder ", h->value(), " has a non-empty Q");
    // I4 ready holder: an idle holder has handed off every request it knows of.
    for (std::size_t j = 0; j < n; ++j)
      if (protocol::fresh(peers_[h->index()].rn(rank_t(static_cast<std::int32_t>(j))), t.ln[j]))
        return report{}("idle holder ", h->value(), " keeps the token although RN_", h->value(), "[", j, "] = LN[", j,
                        "] + 1 = ", std::uint64_t{t.ln[j]} + 1);
  }
  if (flight_) {
    if (flight_->to.value() < 0 || flight_->to.index() >= n)
      return report{}("token in flight to out-of-range rank ", flight_->to.value());
    if (peers_[flight_->to.index()].mode() != mode::requesting)
      return report{}("token in flight to rank ", flight_->to.value(), ", which is not requesting");
  }

  for (std::size_t k = 0; k < pending_.size(); ++k) {
    const request_msg& m = pending_[k];
    const seq_t own = peers_[m.from.index()].rn(m.from);
    if (m.seq.value() == 0 || m.seq > own)
      return report{}("pending REQUEST(", m.from.value(), ", ", m.seq.value(), ") to ", m.to.value(),
                      " was never issued (sender's RN is ", own.value(), ")");
    if (k > 0 && pending_[k - 1] == m)
      return report{}("pending REQUEST(", m.from.value(), ", ", m.seq.value(), ") to ", m.to.value(), " is duplicated");
  }
  // I6 fresh broadcast: a requester's current REQUEST has reached each other
  // rank or is pending to it.
  for (const protocol::peer& ni : peers_) {
    if (ni.mode() != mode::requesting) continue;
    const rank_t i = ni.self();
    const seq_t s = ni.rn(i);
    for (const protocol::peer& nj : peers_)
      if (nj.self() != i && nj.rn(i) != s &&
          !std::binary_search(pending_.begin(), pending_.end(), request_msg{i, nj.self(), s}))
        return report{}("requesting rank ", i.value(), "'s REQUEST #", s.value(), " neither reached rank ",
                        nj.self().value(), " nor is pending to it");
  }
  return std::nullopt;
}

bool world::carried(std::size_t j) const {
  const protocol::token& t = token();
  if (flight_ && flight_->to.index() == j) return false;
  return std::find(t.queue.begin(), t.queue.end(), rank_t(static_cast<std::int32_t>(j))) == t.queue.end();
}

std::optional<std::string> world::regression_from(const world& before) const {
  const std::size_t n = peers_.size();
  if (before.peers_.size() != n) return report{}("rank count changed");
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const seq_t was = before.peers_[i].rn(rank_t(static_cast<std::int32_t>(j)));
      const seq_t now = peers_[i].rn(rank_t(static_cast<std::int32_t>(j)));
      if (now < was) return report{}("RN_", i, "[", j, "] decreased from ", was.value(), " to ", now.value());
    }
  const protocol::token& t0 = before.token();
  const protocol::token& t1 = token();
  for (std::size_t j = 0; j < n; ++j)
    if (before.carried(j) && carried(j) && t1.ln[j] < t0.ln[j])
      return report{}("LN[", j, "] decreased from ", t0.ln[j], " to ", t1.ln[j]);
  return std::nullopt;
}

void world::encode(std::vector<std::uint64_t>& out) const {
  out.clear();
  for (const auto& nd : peers_) {
    out.push_back(static_cast<std::uint64_t>(nd.mode()) | (nd.withdrawn() ? 4u : 0u) | (nd.holds_token() ? 8u : 0u));
    for (seq_t s : nd.rn()) out.push_back(s.value());
  }
  const protocol::token& t = token();
  for (protocol::ln_t s : t.ln) out.push_back(s);
  out.push_back(t.queue.size());
  for (rank_t q : t.queue) out.push_back(static_cast<std::uint64_t>(q.value()));
  out.push_back(flight_ ? static_cast<std::uint64_t>(flight_->to.value()) : ~std::uint64_t{0});
  for (const request_msg& m : pending_) {
    out.push_back((static_cast<std::uint64_t>(m.from.value()) << 32) | static_cast<std::uint32_t>(m.to.value()));
    out.push_back(m.seq.value());
  }
}

}  // namespace tally::check
