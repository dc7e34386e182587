// core/cohort.hpp — one node of the two-level (topology-aware) Suzuki–Kasami lock.
//
// Ranks are grouped into K nodes (machines). Between nodes, Suzuki–Kasami runs with
// one SK participant per node: RN and the token's LN are indexed by node, REQUESTs
// go to the other K-1 nodes, and the token's FIFO queue names, for each waiting
// node, the rank that asked for it (the token goes straight to that rank). Inside a
// node, ranks take tickets and are served in ticket order; the rank leaving the
// critical section serves the next ticket without any message, at most B times in a
// row while another node is known to wait, then sends the token on (and re-requests
// if local tickets remain). docs/design.md ("Two-level lock") states the invariants
// and why they hold.
//
// A cohort is the transition function over one node's state. The state is plain
// data (cohort_layout) so that the runtime can keep it in a shared-memory window
// that every rank of the node updates under a lock, and the checker in ordinary
// memory; a cohort object is a view onto it plus the job's static shape. No MPI,
// threads or clocks. Each event names the local rank that carries it out (`by`),
// whose counters it updates (the only counters an event writes); it returns at most
// one grant, one token send and one broadcast, which the caller carries out in that
// order.
//
// The gate. Which ticket is served, the next ticket to hand out, and whether the
// node holds the token live in one 64-bit word (struct gate) that the events change
// atomically. A rank waits by watching the gate until it serves its ticket. The
// local FIFO is the tickets themselves: rank i's ticket (tickets[i], on a line of
// its own in the runtime), the ranks holding [turn, next) in ticket order; finding
// the rank of a ticket scans the R tickets (only events under the lock do).
// Two events need no lock while the node holds the token and no other node is
// known to wait: taking a ticket (lock_unlocked: a compare-and-swap on the gate,
// then the ticket written to the rank's line) and leaving the critical section
// (leave_unlocked: a compare-and-swap that serves the next ticket, whoever holds
// it, without reading who waits). Every other event runs under the node's lock;
// those that need the turn and the next ticket to stand still set the gate's `slow`
// bit first, which makes both unlocked events refuse (their callers then take the
// lock). withdraw and unlock, which look for the ranks of tickets, first set `slow`
// and then return status::unsettled (changing nothing else) while a ticket taken
// without the lock is not yet written to its rank's line (settled()): the caller
// calls again, and the rank taking the ticket is a few instructions from done.
//
//   event            | effect
//   -----------------+------------------------------------------------------------
//   lock(i)          | i takes the next ticket. Node holds the token idle: i enters,
//                    | GRANT i (0 msgs). Else i waits; if the node neither holds nor
//                    | asked for the token: RN[node]++, BROADCAST(seq, requester head)
//                    | (K-1 msgs)
//   leave_unlocked(i)| no other node known to wait: serve the next ticket (0 msgs),
//                    | else refuse (the caller calls unlock)
//   unlock(i)        | local waiter and (no remote waiter known, or passes < B):
//                    | serve it, GRANT it (0 msgs). Else SK release: LN[node]=RN[node],
//                    | append fresh nodes' requesters, SEND TOKEN to the head
//                    | (1 msg); local waiters left: BROADCAST for them
//   on_request(r,s,c)| RN[node(r)] = max; a new maximum records r as requester,
//                    | c as its copy's move.
//                    | Idle holder and fresh: SEND TOKEN to r. Else note the waiter
//   on_token(t)      | node was requesting: hold t; GRANT the local head, or (all
//                    | withdrew) release as unlock does
//   withdraw(i)      | i gives its ticket back (later tickets move up); the node's
//                    | request stands
//   try_lock(i)      | enters only where lock(i) would enter at once
//
// "Fresh" node j: RN[j] == LN[j] + 1 (protocol::fresh). Misuse never changes state:
// the call returns a non-ok status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>

#include "core/protocol.hpp"
#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace tally::protocol {

// The static shape one node's cohort needs; the same on every rank of the node.
struct cohort_shape {
  std::int32_t nodes = 1;        // K >= 1
  std::int32_t node = 0;         // this node, 0 <= node < K
  std::int32_t locals = 1;       // R >= 1 ranks on this node
  std::uint32_t pass_bound = 1;  // B >= 1: local passes in a row while others wait
};

// The scalar part of a node's state (under the node's lock).
struct cohort_header {
  std::int32_t tq_len = 0;   // the token's queue length (while held)
  std::uint32_t passes = 0;  // local grants in a row while a remote waiter is known
  std::uint8_t has_token = 0;
  std::uint8_t requesting = 0;  // a REQUEST of this node is outstanding
  // Held token: some other node is known to wait (1) or not (0); `unsure` from the
  // token's arrival until a local pass needs it (cohort::unlock scans then), so that
  // taking the token in is a plain copy of LN.
  std::uint8_t remote_waiting = 0;
  static constexpr std::uint8_t unsure = 2;
  std::uint8_t pad = 0;
};

// The gate, unpacked. Tickets count modulo 2^24; at most R are out at a time.
struct gate {
  static constexpr std::uint32_t ticket_mask = (std::uint32_t{1} << 24) - 1;
  static constexpr std::uint32_t no_ticket = ~std::uint32_t{0};  // a rank's, between tickets
  std::uint32_t turn = 0;  // the ticket served (its rank is in the CS while `token`)
  std::uint32_t next = 0;  // the next ticket to hand out; turn == next: nobody is served
  bool token = false;      // the node holds the token (= cohort_header::has_token)
  bool slow = false;       // leave_unlocked refuses: another node may wait, or an
                           // event under the lock needs the turn to stand still
  bool via_token = false;  // the ticket served entered with the token's arrival
  static constexpr gate of(std::uint64_t w) noexcept {
    return {static_cast<std::uint32_t>(w) & ticket_mask, static_cast<std::uint32_t>(w >> 24) & ticket_mask,
            (w >> 48 & 1) != 0, (w >> 49 & 1) != 0, (w >> 50 & 1) != 0};
  }
  constexpr std::uint64_t word() const noexcept {
    return std::uint64_t{turn & ticket_mask} | std::uint64_t{next & ticket_mask} << 24 | std::uint64_t{token} << 48 |
           std::uint64_t{slow} << 49 | std::uint64_t{via_token} << 50;
  }
  static constexpr std::uint32_t after(std::uint32_t t) noexcept { return (t + 1) & ticket_mask; }
  // Tickets from `turn` to t (t's distance from the turn).
  constexpr std::uint32_t ahead(std::uint32_t t) const noexcept { return (t - turn) & ticket_mask; }
  constexpr std::uint32_t out() const noexcept { return ahead(next); }  // tickets not yet done
  constexpr bool serves(std::uint32_t ticket) const noexcept { return token && turn != next && turn == ticket; }
};

// Where each part of a node's state lives in one block of memory, for K nodes and
// R local ranks. Every part is 8-byte aligned. The protocol state is
// [0, protocol_bytes); the broadcast order and the per-rank counters follow it, so
// that a checker can compare states by their protocol bytes alone (neither changes
// what any event does).
struct cohort_layout {
  std::size_t header = 0, gate = 0, rn = 0, requester = 0, ln = 0, tq = 0, tickets = 0, scratch = 0, hop = 0, route = 0,
              since = 0, protocol_bytes = 0, order_next = 0, order_prev = 0, counters = 0, bytes = 0;
  static cohort_layout of(std::int32_t nodes, std::int32_t locals) noexcept;
};

// Pointers into one node's state (valid in the calling process). The gate and the
// tickets are read and written atomically (std::atomic_ref). A runtime may place
// the gate, the tickets and the counters elsewhere than the layout does (each on
// cache lines of its own): a rank writes its own counters only.
struct cohort_view {
  cohort_header* h = nullptr;
  std::uint64_t* gate = nullptr;      // [1] struct gate
  std::uint32_t* tickets = nullptr;   // rank i's ticket at tickets[i * ticket_stride]
  std::size_t ticket_stride = 1;      // in uint32s
  seq_t* rn = nullptr;                // [K] highest request number seen per node
  std::int32_t* requester = nullptr;  // [K] global rank that asked for rn[j]
  ln_t* ln = nullptr;                 // [K] token: last served request per node (ln_t)
  std::int32_t* tq = nullptr;         // [K] token: FIFO of requesters (global ranks)
  std::uint8_t* scratch = nullptr;    // [K] all zero between calls
  // The token's trail (core/token_codec.hpp): while the node holds the token, its
  // moves so far and their senders; otherwise those of the token it last sent, whose
  // LN the node keeps as its copy (ln). since[j]: the move of node j's copy as j's
  // latest REQUEST said (0 until one came: a copy is never older than move 0).
  std::uint64_t* hop = nullptr;        // [1]
  std::int32_t* route = nullptr;       // [node_token::route]
  std::uint64_t* since = nullptr;      // [K]
  std::int32_t* order_next = nullptr;  // [K] the broadcast order, a circular list through
  std::int32_t* order_prev = nullptr;  // [K] this node's own entry: next of it is first
  counters* ctr = nullptr;             // rank i's at byte ctr_stride * i
  std::size_t ctr_stride = sizeof(counters);

  // The view of a block laid out by `layout` starting at `base` (8-byte aligned).
  static cohort_view at(void* base, const cohort_layout& layout) noexcept;
};

// Inline: the model check makes a view per step and per check.
inline cohort_view cohort_view::at(void* base, const cohort_layout& l) noexcept {
  std::byte* const b = static_cast<std::byte*>(base);
  return {reinterpret_cast<cohort_header*>(b + l.header),
          reinterpret_cast<std::uint64_t*>(b + l.gate),
          reinterpret_cast<std::uint32_t*>(b + l.tickets),
          1,
          reinterpret_cast<seq_t*>(b + l.rn),
          reinterpret_cast<std::int32_t*>(b + l.requester),
          reinterpret_cast<ln_t*>(b + l.ln),
          reinterpret_cast<std::int32_t*>(b + l.tq),
          reinterpret_cast<std::uint8_t*>(b + l.scratch),
          reinterpret_cast<std::uint64_t*>(b + l.hop),
          reinterpret_cast<std::int32_t*>(b + l.route),
          reinterpret_cast<std::uint64_t*>(b + l.since),
          reinterpret_cast<std::int32_t*>(b + l.order_next),
          reinterpret_cast<std::int32_t*>(b + l.order_prev),
          reinterpret_cast<counters*>(b + l.counters)};
}

struct cohort_action {
  std::int32_t grant = -1;  // local rank whose ticket is now served (the caller itself
                            // at once, or a waiter, which sees it on the gate)
  rank_t token_to{-1};      // send the token (LN, queue, payload) to this global rank
  bool broadcast = false;   // send REQUEST(seq, requester, copy_hop) to the other K-1
  seq_t seq{};              // nodes, in the order of cohort::broadcast_order()
  rank_t requester{-1};
  std::uint64_t copy_hop = 0;  // the move this node's LN copy is from (state().hop)
};

struct cohort_step {
  status st = status::ok;
  cohort_action act{};
  bool ok() const noexcept { return st == status::ok; }
};

class cohort {
 public:
  // node_of[r]: node of global rank r (size n); members[i]: global rank of local
  // rank i (size R). Both are kept by reference and must outlive the cohort. Throws
  // protocol::bad_argument on an inconsistent shape (K or R < 1, B < 1, node out of
  // range, a member not on this node).
  cohort(cohort_shape shape, cohort_view state, std::span<const std::int32_t> node_of,
         std::span<const std::int32_t> members);
  // The same without the checks, for a caller that made a cohort of this shape and
  // maps before (the checker rebuilds views on every step).
  struct trusted {};
  cohort(cohort_shape shape, cohort_view state, std::span<const std::int32_t> node_of,
         std::span<const std::int32_t> members, trusted) noexcept
      : shape_(shape), v_(state), node_of_(node_of), members_(members) {}

  // Writes the initial state: nothing requested, the token idle on `owner_node`.
  void reset(std::int32_t owner_node) noexcept;

  // Events under the node's lock. lock and try_lock GRANT i when i entered at once
  // (counted then); every other entry is counted by note_entry.
  cohort_step lock(std::int32_t i);
  cohort_step try_lock(std::int32_t i);
  cohort_step withdraw(std::int32_t i);
  cohort_step unlock(std::int32_t i);
  // Without the node's lock: lock(i) where the node holds the token and nothing is
  // slow (the common case): true and the step (GRANT i when at once), or false and
  // nothing changed (the caller calls lock(i) under the lock). Between taking the
  // ticket and writing it to i's ticket line, the ticket is out but unnamed:
  // settled() is false, and an event under the lock waits for it first.
  bool lock_unlocked(std::int32_t i, cohort_step& s) noexcept;
  // Every ticket out is written to its rank's line (see lock_unlocked).
  bool settled() const noexcept;
  // Without the node's lock: i, in the critical section, leaves by serving the next
  // ticket, if no other node is known to wait and no event under the lock is under
  // way; false (nothing changed) otherwise, and the caller calls unlock(i). Reads
  // and writes the gate and i's own ticket and counters only.
  bool leave_unlocked(std::int32_t i) noexcept;
  // Without the node's lock: i saw that the gate serves its ticket (it entered other
  // than at once); counts the entry in i's counters.
  void note_entry(std::int32_t i) noexcept;
  // REQUEST(seq, copy) for node(requester) arrived; `by` is the local rank receiving
  // it. `copy`: the move of that node's LN copy (0 is always safe: a full token).
  cohort_step on_request(std::int32_t by, rank_t requester, seq_t s, std::uint64_t copy_hop = 0);
  // The token arrived at local rank `by`: LN as the wire carries it, copied in
  // unless it is ln_inbox() already, under whatever guards this node's state, and
  // its trail (hop > state().hop, node_token::route entries).
  cohort_step on_token(std::int32_t by, std::span<const ln_t> ln, std::span<const rank_t> queue, token_trail trail);
  // Where the node keeps LN (K entries): its copy while it does not hold the token.
  // Nothing reads it then but the rank the token comes to, which may decode the
  // token into it (decode_node_token, against state().hop) without the guard, then
  // pass it to on_token. Its contents are unspecified after a failed decode or
  // on_token.
  std::span<ln_t> ln_inbox() noexcept { return {v_.ln, static_cast<std::size_t>(shape_.nodes)}; }
  // The token this node holds, as it leaves for global rank `to`: LN, the queue, the
  // trail and the move of `to`'s node's LN copy, through encode_node_token (`out`
  // holds node_token::bytes(K, payload.size())). Returns the message's length.
  std::size_t encode_token(rank_t to, std::span<const std::byte> payload, std::span<std::byte> out,
                           token_form form = token_form::shorter) const noexcept;
  // Its trail: the move count and the route (node_token).
  token_trail trail() const noexcept { return {*v_.hop, {v_.route, node_token::route}}; }

  const cohort_shape& shape() const noexcept { return shape_; }
  const cohort_view& state() const noexcept { return v_; }
  std::int32_t member(std::int32_t i) const noexcept { return members_[static_cast<std::size_t>(i)]; }
  std::int32_t node_of(rank_t r) const noexcept { return node_of_[r.index()]; }
  bool holds_token() const noexcept { return v_.h->has_token != 0; }
  bool requesting() const noexcept { return v_.h->requesting != 0; }
  // The gate now (an acquire load) and rank i's ticket (gate::no_ticket while it has
  // none).
  gate gate_now() const noexcept;
  std::uint32_t ticket_of(std::int32_t i) const noexcept;
  // i holds a ticket: it waits or is in the critical section.
  bool queued(std::int32_t i) const noexcept;
  // The local rank in the critical section (its ticket served), or -1.
  std::int32_t in_cs() const noexcept;
  bool is_waiting(std::int32_t i) const noexcept { return queued(i) && in_cs() != i; }
  // The ranks holding tickets, in ticket order from the served one (the local FIFO).
  std::int32_t queued_count() const noexcept;
  std::int32_t queued_at(std::int32_t q) const noexcept;  // 0 <= q < queued_count()
  // The local rank holding ticket t, or -1 (a scan of R ticket lines).
  std::int32_t holder_of(std::uint32_t t) const noexcept;
  // True iff some other node is known to wait, recomputed from RN, LN and the queue
  // (the header's remote_waiting caches it while the token is held, unless unsure).
  bool remote_waiter_known() const noexcept;
  const counters& counters_of(std::int32_t i) const noexcept { return ctr(i); }
  // The other K-1 nodes in the order a broadcast should reach them: most recently
  // heard of first. A node moves to the front when this node hears a new request
  // of it (it gets the token soon, if the lock is free, and it is a node that uses
  // the lock) or sends it the token; the initial owner starts in front. The order
  // decides only which REQUEST leaves first; every node still gets one.
  class order_range;
  order_range broadcast_order() const noexcept;

 private:
  bool local(std::int32_t i) const noexcept { return i >= 0 && i < shape_.locals; }
  // Sets the gate's slow bit: from then on the turn and the next ticket stand still.
  gate freeze() noexcept;
  // Publishes g with `token` and `slow` as the node's state says (release).
  void thaw(gate g) noexcept;
  bool needs_slow() const noexcept { return v_.h->has_token && v_.h->remote_waiting != 0; }
  void set_ticket(std::int32_t i, std::uint32_t t) noexcept;
  // i takes the next ticket, always, or (unlocked) only while the token is here and
  // nothing is slow, or (idle) only while nobody is served or waits; false where it
  // does not. `at_once`: it is served at once (counted).
  enum class taking {
    always,
    unlocked,
    idle
  };
  bool take_ticket(std::int32_t i, taking when, bool& at_once) noexcept;
  counters& ctr(std::int32_t i) const noexcept {
    return *reinterpret_cast<counters*>(reinterpret_cast<std::byte*>(v_.ctr) +
                                        static_cast<std::size_t>(i) * v_.ctr_stride);
  }
  std::uint32_t& ticket_ref(std::int32_t i) const noexcept {
    return v_.tickets[static_cast<std::size_t>(i) * v_.ticket_stride];
  }
  // g: the gate as the event leaves it (its turn is the local head's ticket).
  void request(std::int32_t by, cohort_action& act, const gate& g) noexcept;
  // The token is held and no rank is in the CS: SK release over nodes.
  void release(std::int32_t by, cohort_action& act, const gate& g) noexcept;
  // The rest of a release once the queue is complete: the token to its head, if any.
  void pass_on(std::int32_t by, cohort_action& act, const gate& g) noexcept;
  void heard_of(std::int32_t j) noexcept;  // moves node j to the front of the order, O(1)

  cohort_shape shape_;
  cohort_view v_;
  std::span<const std::int32_t> node_of_;
  std::span<const std::int32_t> members_;
};

// The broadcast order as a range: the list from this node's entry round to it again.
class cohort::order_range {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::int32_t;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::int32_t*;
    using reference = std::int32_t;
    iterator() = default;
    iterator(const std::int32_t* next, std::int32_t at) noexcept : next_(next), at_(at) {}
    std::int32_t operator*() const noexcept { return at_; }
    iterator& operator++() noexcept {
      at_ = next_[static_cast<std::size_t>(at_)];
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator was = *this;
      ++*this;
      return was;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

   private:
    const std::int32_t* next_ = nullptr;
    std::int32_t at_ = 0;
  };
  order_range(const std::int32_t* next, std::int32_t self) noexcept : next_(next), self_(self) {}
  iterator begin() const noexcept { return {next_, next_[static_cast<std::size_t>(self_)]}; }
  iterator end() const noexcept { return {next_, self_}; }
  bool empty() const noexcept { return begin() == end(); }

 private:
  const std::int32_t* next_;
  std::int32_t self_;
};

inline cohort::order_range cohort::broadcast_order() const noexcept { return {v_.order_next, shape_.node}; }

}  // namespace tally::protocol
