#include "core/protocol.hpp"

#include <string>
#include <utility>

#include "core/per_entry.hpp"

namespace tally::protocol {

namespace {
// next_fresh's body (internal: core/per_entry.hpp).
TALLY_PER_ENTRY std::size_t first_fresh(const seq_t* rn, const ln_t* ln, std::size_t from, std::size_t n) noexcept {
  constexpr std::size_t chunk = 64;
  std::size_t j = from;
  for (; j < n && j % chunk != 0; ++j)
    if (fresh(rn[j], ln[j])) return j;
  for (; j < n; j += chunk) {
    if (j + chunk <= n) {
      ln_t all = ~ln_t{0};
      for (std::size_t k = j; k < j + chunk; ++k) all &= stale_mark(low32(rn[k]), ln[k]);
      if (all >> 31) continue;
    }
    for (std::size_t k = j; k < n && k < j + chunk; ++k)
      if (fresh(rn[k], ln[k])) return k;
  }
  return n;
}
}  // namespace

std::size_t next_fresh(const seq_t* rn, const ln_t* ln, std::size_t from, std::size_t n) noexcept {
  return first_fresh(rn, ln, from, n);
}

const char* describe(status s) noexcept {
  switch (s) {
    case status::ok: return "ok";
    case status::would_block: return "token is not held idle here";
    case status::not_in_cs: return "not in the critical section";
    case status::already_in_cs: return "already in the critical section";
    case status::already_requesting: return "a request is already outstanding";
    case status::not_requesting: return "not requesting";
    case status::self_request: return "REQUEST claims to come from this peer";
    case status::bad_rank: return "rank out of range";
    case status::bad_token: return "malformed token";
    case status::unsettled: return "a ticket is being taken";
  }
  return "unknown status";
}

bool token::well_formed(std::int32_t n, rank_t owner) const {
  if (n < 1 || ln.size() != static_cast<std::size_t>(n) || queue.size() >= static_cast<std::size_t>(n)) return false;
  for (rank_t r : queue)
    if (r.value() < 0 || r.value() >= n || r == owner) return false;
  // Distinct: pairwise for short queues (no allocation on the handoff path).
  if (queue.size() <= 16) {
    for (std::size_t i = 0; i < queue.size(); ++i)
      for (std::size_t k = i + 1; k < queue.size(); ++k)
        if (queue[i] == queue[k]) return false;
    return true;
  }
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (rank_t r : queue) {
    if (seen[r.index()]) return false;
    seen[r.index()] = true;
  }
  return true;
}

peer::peer(rank_t self, std::int32_t n, rank_t initial_owner) : self_(self), n_(n) {
  if (n < 1) throw bad_argument("peer count must be at least 1, got " + std::to_string(n));
  if (!in_range(self) || !in_range(initial_owner))
    throw bad_argument("rank " + std::to_string(in_range(self) ? initial_owner.value() : self.value()) +
                       " out of range for " + std::to_string(n) + " peers");
  rn_.assign(static_cast<std::size_t>(n), seq_t{});
  queued_.assign(static_cast<std::size_t>(n), 0);
  if (self == initial_owner) held_ = token{std::vector<ln_t>(rn_.size()), {}};
}

void peer::enter(bool local) noexcept {
  mode_ = mode::in_cs;
  ++counters_.acquisitions;
  if (local) ++counters_.local_acquisitions;
}

step peer::lock() {
  switch (mode_) {
    case mode::in_cs: return {status::already_in_cs};
    case mode::requesting:
      if (!withdrawn_) return {status::already_requesting};
      withdrawn_ = false;  // the outstanding broadcast still stands
      return {};
    case mode::idle: break;
  }
  if (held_) {
    enter(true);
    return {};
  }
  seq_t& mine = rn_[self_.index()];
  mine = mine.next();
  mode_ = mode::requesting;
  ++counters_.broadcasts;
  counters_.requests_sent += static_cast<std::uint64_t>(n_ - 1);
  return {status::ok, {action::kind::broadcast_request, self_, mine}};
}

step peer::try_lock() {
  if (mode_ == mode::in_cs) return {status::already_in_cs};
  if (mode_ != mode::idle || !held_) return {status::would_block};
  enter(true);
  return {};
}

step peer::withdraw() {
  if (mode_ != mode::requesting || withdrawn_) return {status::not_requesting};
  withdrawn_ = true;
  return {};
}

step peer::on_request(rank_t from, seq_t s) {
  if (!in_range(from)) return {status::bad_rank};
  if (from == self_) return {status::self_request};
  ++counters_.requests_received;
  seq_t& seen = rn_[from.index()];
  if (s > seen) seen = s;
  if (held_ && mode_ == mode::idle && fresh(seen, held_->ln[from.index()]))
    return send_to(from);  // idle holder's Q is empty: hand off at once
  return {};
}

step peer::on_token(token t) {
  // One token exists: a second one while it is here or not yet taken for sending
  // is a duplicate, refused like a token nobody asked for.
  if (mode_ != mode::requesting || held_ || outbox_) return {status::not_requesting};
  if (!t.well_formed(n_, self_)) return {status::bad_token};
  ++counters_.tokens_received;
  held_ = std::move(t);
  carried_only(*held_);
  if (withdrawn_) {
    withdrawn_ = false;
    mode_ = mode::idle;
    return release();
  }
  enter(false);
  return {};
}

step peer::unlock() {
  if (mode_ != mode::in_cs) return {status::not_in_cs};
  mode_ = mode::idle;
  return release();
}

step peer::release() {
  token& t = *held_;
  t.ln[self_.index()] = low32(rn_[self_.index()]);
  for (rank_t r : t.queue) queued_[r.index()] = 1;
  // A queued entry, its LN 0, may read as fresh: queued_ skips it.
  find_fresh(rn_.data(), t.ln.data(), static_cast<std::size_t>(n_), [&](std::size_t k) {
    if (!queued_[k]) t.queue.push_back(rank_t(static_cast<std::int32_t>(k)));
    return false;
  });
  for (rank_t r : t.queue) queued_[r.index()] = 0;
  if (t.queue.empty()) return {};
  const rank_t head = t.queue.front();
  t.queue.erase(t.queue.begin());
  return send_to(head);
}

void peer::carried_only(token& t) const noexcept {
  for (rank_t r : t.queue) t.ln[r.index()] = 0;
  // Requesting: RN[self] is the request this token serves, LN[self] the one before.
  t.ln[self_.index()] = low32(rn_[self_.index()]) - 1;
}

step peer::send_to(rank_t to) {
  // Not carried (core/token_layout.hpp): the token in memory reads as on the wire.
  for (rank_t r : held_->queue) held_->ln[r.index()] = 0;
  held_->ln[to.index()] = 0;
  outbox_ = std::move(held_);
  held_.reset();
  ++counters_.tokens_sent;
  return {status::ok, {action::kind::send_token, to, seq_t{}}};
}

bool peer::waiter_known() const noexcept {
  if (!held_) return false;
  if (!held_->queue.empty()) return true;
  for (std::int32_t j = 0; j < n_; ++j) {
    const auto k = static_cast<std::size_t>(j);
    if (j != self_.value() && fresh(rn_[k], held_->ln[k])) return true;
  }
  return false;
}

std::optional<token> peer::take_token() {
  std::optional<token> out = std::move(outbox_);
  outbox_.reset();
  return out;
}

bool operator==(const peer& a, const peer& b) {
  return a.self_ == b.self_ && a.n_ == b.n_ && a.mode_ == b.mode_ && a.withdrawn_ == b.withdrawn_ && a.rn_ == b.rn_ &&
         a.held_ == b.held_ && a.outbox_ == b.outbox_;
}

}  // namespace tally::protocol
