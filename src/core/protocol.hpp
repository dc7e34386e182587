// core/protocol.hpp — one Suzuki–Kasami peer: state and transitions, nothing else.
//
// This is the protocol core that the MPI runtime, the simulator and the tests all
// drive. It knows nothing of MPI, threads or clocks; it consumes events and returns
// at most one action per event, which the caller carries out (sends messages).
// Peer i of n (one per rank of the mutex's communicator) keeps RN[0..n) (highest
// request number seen per peer); the token carries LN[0..n) (number of each peer's
// last served request) and a FIFO Q.
//
//   state \ event   | lock()               | on_request(j,s)        | on_token(t)        | unlock()
//   ----------------+----------------------+------------------------+--------------------+-----------------------
//   idle, no token  | RN[i]++; requesting; | RN[j]=max(RN[j],s)     | error              | error not_in_cs
//                   | BROADCAST (n-1 msgs) |                        | not_requesting     |
//   requesting      | error                | RN[j]=max(RN[j],s)     | -> in CS           | error not_in_cs
//                   | already_requesting   |                        | (0 msgs)           |
//   in CS (token)   | error already_in_cs  | RN[j]=max(RN[j],s)     | error              | LN[i]=RN[i]; append
//                   |                      | (deferred to unlock)   | not_requesting     | fresh j to Q; -> idle;
//                   |                      |                        |                    | Q non-empty: SEND TOKEN
//                   |                      |                        |                    | to head (1 msg)
//   idle, token     | -> in CS (0 msgs,    | RN[j]=max(RN[j],s);    | error              | error not_in_cs
//                   | no new sequence)     | RN[j]==LN[j]+1: SEND   | not_requesting     |
//                   |                      | TOKEN to j (1 msg)     |                    |
//
// "Fresh" j: RN[j] == LN[j] + 1. Requests with s <= LN[j] are stale and change
// nothing but RN. An idle holder's Q is always empty (it hands off at once).
//
// Two extensions beyond the table serve timed and non-blocking locking:
//   try_lock()  enters only at an idle holder; otherwise would_block, never an action.
//   withdraw()  while requesting: keep the broadcast outstanding but do not enter when
//               the token comes; on_token then marks the request served and routes the
//               token onward (or keeps it idle). lock() while withdrawn re-arms the
//               same request without a new broadcast.
//
// Misuse never corrupts state: the call returns a non-ok status and changes nothing.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

namespace tally::protocol {

// What the core throws for a shape it cannot be built with (a count below 1, a rank
// out of range). The core knows no public error type; the runtime maps this to
// tally::error(errc::arg).
class bad_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Peer id (the rank) within the mutex's group, 0 <= value < n. Explicit both ways,
// so that a rank is never silently used as a sequence number.
class rank_t {
 public:
  constexpr rank_t() = default;
  constexpr explicit rank_t(std::int32_t v) noexcept : v_(v) {}
  constexpr std::int32_t value() const noexcept { return v_; }
  constexpr std::size_t index() const noexcept { return static_cast<std::size_t>(v_); }
  friend constexpr auto operator<=>(rank_t, rank_t) = default;

 private:
  std::int32_t v_ = 0;
};

// Request sequence number. 64-bit: it never wraps in practice.
class seq_t {
 public:
  constexpr seq_t() = default;
  constexpr explicit seq_t(std::uint64_t v) noexcept : v_(v) {}
  constexpr std::uint64_t value() const noexcept { return v_; }
  constexpr seq_t next() const noexcept { return seq_t(v_ + 1); }
  friend constexpr auto operator<=>(seq_t, seq_t) = default;

 private:
  std::uint64_t v_ = 0;
};

// An LN entry: the low 32 bits of the sequence number it records, as the token
// carries it (core/token_layout.hpp). Every rank and node keeps LN so and compares
// it with RN modulo 2^32, which is exact while |LN[j] - RN[j]| < 2^31 (docs/design.md,
// "Transport"); RN and the REQUESTs' sequence numbers stay 64-bit.
using ln_t = std::uint32_t;
constexpr ln_t low32(seq_t s) noexcept { return static_cast<ln_t>(s.value()); }

// The Suzuki–Kasami rule: a participant whose highest request number seen (RN) is
// one past its last served request (LN) waits for the token.
constexpr bool fresh(seq_t rn, ln_t ln) noexcept { return low32(rn) == static_cast<ln_t>(ln + 1); }
// The top bit of stale_mark(rn, ln) is set exactly when the entry is not fresh: x =
// RN - LN - 1 (mod 2^32) is 0 exactly for a fresh entry, and x | -x has its top bit
// set exactly when x != 0. AND the marks of many entries, and a clear top bit means
// one of them is fresh. (No compare, so GCC vectorizes loops of it at -O2 with SSE2.)
constexpr ln_t stale_mark(ln_t rn, ln_t ln) noexcept {
  const ln_t x = rn - ln - 1;
  return x | (0 - x);
}
// The first j in [from, n) whose entry is fresh, or n. Chunks of 64 entries are
// tested at once by their marks and looked at entry by entry only when those say one
// is fresh: the scan of every release, where most of n entries are stale. Built for
// the widest vectors the CPU has (core/per_entry.hpp).
std::size_t next_fresh(const seq_t* rn, const ln_t* ln, std::size_t from, std::size_t n) noexcept;
// Calls f(j) for each fresh entry j < n in ascending order until f returns true;
// returns whether it did.
template <class F>
bool find_fresh(const seq_t* rn, const ln_t* ln, std::size_t n, F&& f) {
  for (std::size_t j = next_fresh(rn, ln, 0, n); j < n; j = next_fresh(rn, ln, j + 1, n))
    if (f(j)) return true;
  return false;
}

enum class mode : std::uint8_t {
  idle,
  requesting,
  in_cs
};

// Outcome of a call. Everything but ok means the call changed nothing.
enum class status : std::uint8_t {
  ok,
  would_block,         // try_lock: this peer does not hold the token idle
  not_in_cs,           // unlock while not in the critical section
  already_in_cs,       // lock/try_lock while in the critical section
  already_requesting,  // lock while a (non-withdrawn) request is outstanding
  not_requesting,      // token received, or withdraw, while not requesting
  self_request,        // REQUEST that claims to come from this peer
  bad_rank,            // REQUEST from an id outside [0, n)
  bad_token,           // token with wrong sizes, ids out of range, duplicates or self in Q
  unsettled,           // cohort: a ticket out is not on its rank's line yet; call again
};

const char* describe(status s) noexcept;

// The token's contents: LN[j] and the FIFO queue (head first, no duplicates).
struct token {
  std::vector<ln_t> ln;
  std::vector<rank_t> queue;

  // True iff ln has n entries and queue holds distinct ids in [0, n) other than owner.
  bool well_formed(std::int32_t n, rank_t owner) const;
  friend bool operator==(const token&, const token&) = default;
};

// What the caller must do after a successful call.
struct action {
  enum class kind : std::uint8_t {
    none,
    broadcast_request,  // send REQUEST(self, seq) to every other peer
    send_token,         // take_token() and send it to `to`
  };
  kind what = kind::none;
  rank_t to{};  // send_token: destination
  seq_t seq{};  // broadcast_request: the new request number
};

struct step {
  status st = status::ok;
  action act{};
  bool ok() const noexcept { return st == status::ok; }
};

// Per-peer message and entry counters. The runtime reports them as the public
// tally_stats (runtime/errors.cpp maps one to the other, field by field).
struct counters {
  std::uint64_t acquisitions = 0;        // critical-section entries
  std::uint64_t local_acquisitions = 0;  // entries that cost zero messages
  std::uint64_t requests_sent = 0;       // REQUEST messages sent: n-1 per broadcast
  std::uint64_t requests_received = 0;   // REQUEST messages received, stale ones included
  std::uint64_t tokens_sent = 0;
  std::uint64_t tokens_received = 0;
  std::uint64_t broadcasts = 0;  // REQUEST broadcasts started
  // The two-level lock only (core/cohort.hpp); REQUESTs and tokens then count the
  // level between nodes.
  std::uint64_t local_handoffs_sent = 0;      // entries granted to a rank of the node
  std::uint64_t local_handoffs_received = 0;  // entries granted to this rank by one of its node
  std::uint64_t bound_releases = 0;           // token sent away with local waiters left
};

// Adds every field of c to sum (totals over ranks, for checks).
constexpr void accumulate(counters& sum, const counters& c) noexcept {
  sum.acquisitions += c.acquisitions;
  sum.local_acquisitions += c.local_acquisitions;
  sum.requests_sent += c.requests_sent;
  sum.requests_received += c.requests_received;
  sum.tokens_sent += c.tokens_sent;
  sum.tokens_received += c.tokens_received;
  sum.broadcasts += c.broadcasts;
  sum.local_handoffs_sent += c.local_handoffs_sent;
  sum.local_handoffs_received += c.local_handoffs_received;
  sum.bound_releases += c.bound_releases;
}

class peer {
 public:
  // Peer `self` of n, the token starting at `initial_owner`.
  // Throws bad_argument unless n >= 1 and both ranks are in [0, n).
  peer(rank_t self, std::int32_t n, rank_t initial_owner);

  // Caller wants the critical section. Idle holder: enters, no action. Idle
  // non-holder: becomes requesting, action broadcast_request. Withdrawn requester:
  // re-armed, no action. Otherwise already_in_cs / already_requesting.
  step lock();
  // Enters only if this peer holds the token idle; otherwise would_block (or
  // already_in_cs). Never produces an action.
  step try_lock();
  // A requesting peer gives up waiting (see header comment); else not_requesting.
  step withdraw();
  // REQUEST(from, s) arrived. May produce send_token if this peer holds it idle.
  step on_request(rank_t from, seq_t s);
  // The token arrived. The peer must be requesting and hold no token, not even one
  // awaiting take_token (else not_requesting); enters unless withdrawn, in which case
  // it may produce send_token (or keep the token idle).
  step on_token(token t);
  // Leaves the critical section; the peer must be in it. May produce send_token.
  step unlock();
  // After a send_token action: hands over the token to be sent. Each send_token
  // action allows exactly one take; otherwise returns std::nullopt.
  std::optional<token> take_token();

  rank_t self() const noexcept { return self_; }
  std::int32_t size() const noexcept { return n_; }
  enum mode mode() const noexcept { return mode_; }
  bool withdrawn() const noexcept { return withdrawn_; }
  // True iff the token is at this peer (idle or in the critical section).
  bool holds_token() const noexcept { return held_.has_value(); }
  // True iff this peer holds the token and, were it to release it now (unlock()
  // from the CS, or an idle holder), would hand it on: its queue is non-empty or
  // some other peer's request is known and unserved (RN[j] = LN[j] + 1).
  bool waiter_known() const noexcept;
  // The token while held here, else nullptr.
  const token* held() const noexcept { return held_ ? &*held_ : nullptr; }
  // The token between a send_token action and take_token(), else nullptr.
  const token* outgoing() const noexcept { return outbox_ ? &*outbox_ : nullptr; }
  seq_t rn(rank_t j) const noexcept { return rn_[j.index()]; }
  std::span<const seq_t> rn() const noexcept { return rn_; }
  const protocol::counters& counters() const noexcept { return counters_; }

  friend bool operator==(const peer&, const peer&);

 private:
  bool in_range(rank_t r) const noexcept { return r.value() >= 0 && r.value() < n_; }
  void enter(bool local) noexcept;
  // Holder not in CS: mark own request served, queue fresh requests, hand off head.
  step release();
  // The LN entries a token on the wire does not carry, as the receiver fills them: 0
  // for every queued rank (never read until that rank, served, overwrites it) and
  // RN[self] - 1 for this rank (core/token_layout.hpp). send_to() zeroes the queued
  // entries and the receiver's, so a token in flight reads as it does on the wire.
  void carried_only(token& t) const noexcept;
  step send_to(rank_t to);

  rank_t self_;
  std::int32_t n_;
  enum mode mode_ = mode::idle;
  bool withdrawn_ = false;
  std::vector<seq_t> rn_;
  std::optional<token> held_;
  std::optional<token> outbox_;
  std::vector<std::uint8_t> queued_;  // scratch for release(); all zero between calls
  protocol::counters counters_{};
};

}  // namespace tally::protocol
