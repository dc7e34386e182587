// Unit tests of one node of the two-level lock (protocol::cohort): every row of the
// table in cohort.hpp, the pass bound, withdraw/try_lock and every misuse status.
// Two nodes of two ranks (global ranks 0,1 on node 0 and 2,3 on node 1) unless a
// test says otherwise.
#include "core/cohort.hpp"

#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

#include <gtest/gtest.h>

#include <array>

#include <vector>

namespace {

using namespace tally::protocol;

// One node's state in ordinary memory.
struct node_fixture {
  std::vector<std::int32_t> node_of, members;
  cohort_layout layout;
  std::vector<std::uint64_t> mem;
  cohort c;

  node_fixture(std::vector<std::int32_t> node_of_, std::int32_t node, std::uint32_t bound, std::int32_t owner)
      : node_of(std::move(node_of_)),
        layout(cohort_layout::of(count(node_of, -1), count(node_of, node))),
        mem(layout.bytes / 8),
        c(make(node, bound)) {
    c.reset(owner);
  }
  static std::int32_t count(const std::vector<std::int32_t>& v, std::int32_t node) {
    std::int32_t k = 0, top = 0;
    for (std::int32_t x : v) {
      k += x == node;
      top = std::max(top, x + 1);
    }
    return node < 0 ? top : k;
  }
  cohort make(std::int32_t node, std::uint32_t bound) {
    for (std::int32_t r = 0; r < static_cast<std::int32_t>(node_of.size()); ++r)
      if (node_of[static_cast<std::size_t>(r)] == node) members.push_back(r);
    return cohort({count(node_of, -1), node, static_cast<std::int32_t>(members.size()), bound},
                  cohort_view::at(mem.data(), layout), node_of, members);
  }
};

const std::vector<std::int32_t> two_by_two{0, 0, 1, 1};

// The trail of a token handed to a cohort by hand: its first move (on_token checks
// only that the hop is new; the route matters to the codec alone).
const std::array<std::int32_t, node_token::route> hand_route = [] {
  std::array<std::int32_t, node_token::route> r{};
  r.fill(-1);
  r[0] = 0;
  return r;
}();
const token_trail by_hand{1, hand_route};

TEST(Cohort, ConstructionRejectsBadShapes) {
  std::vector<std::uint64_t> mem(cohort_layout::of(2, 2).bytes / 8);
  const cohort_view v = cohort_view::at(mem.data(), cohort_layout::of(2, 2));
  const std::vector<std::int32_t> members{0, 1};
  EXPECT_THROW(cohort({2, 0, 2, 0}, v, two_by_two, members), tally::protocol::bad_argument);  // B = 0
  EXPECT_THROW(cohort({2, 2, 2, 1}, v, two_by_two, members), tally::protocol::bad_argument);  // node out of range
  EXPECT_THROW(cohort({0, 0, 2, 1}, v, two_by_two, members), tally::protocol::bad_argument);  // no nodes
  const std::vector<std::int32_t> wrong{0, 2};
  EXPECT_THROW(cohort({2, 0, 2, 1}, v, two_by_two, wrong), tally::protocol::bad_argument);  // rank 2 is on node 1
  try {
    cohort({2, 0, 2, 0}, v, two_by_two, members);
  } catch (const tally::protocol::bad_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pass bound"), std::string::npos);
  }
}

TEST(Cohort, IdleHolderNodeEntersWithoutMessages) {
  node_fixture n(two_by_two, 0, 1, 0);
  for (std::int32_t i : {0, 1, 0}) {
    const cohort_step s = n.c.lock(i);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.act.grant, i);  // the caller itself entered
    EXPECT_FALSE(s.act.broadcast);
    EXPECT_EQ(s.act.token_to, rank_t(-1));
    EXPECT_EQ(n.c.in_cs(), i);
    ASSERT_TRUE(n.c.unlock(i).ok());
  }
  EXPECT_EQ(n.c.counters_of(0).acquisitions, 2u);
  EXPECT_EQ(n.c.counters_of(0).local_acquisitions, 2u);
  EXPECT_EQ(n.c.state().rn[0], seq_t(0));  // no new sequence number
}

TEST(Cohort, FirstWaiterBroadcastsOnceForTheNode) {
  node_fixture n(two_by_two, 1, 1, 0);  // node 1 (ranks 2, 3) without the token
  cohort_step s = n.c.lock(1);          // global rank 3
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s.act.broadcast);
  EXPECT_EQ(s.act.seq, seq_t(1));
  EXPECT_EQ(s.act.requester, rank_t(3));
  EXPECT_TRUE(n.c.requesting());
  s = n.c.lock(0);  // a second local waiter joins the FIFO; no second broadcast
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s.act.broadcast);
  EXPECT_EQ(n.c.counters_of(1).requests_sent, 1u);  // K - 1
  EXPECT_EQ(n.c.counters_of(1).broadcasts, 1u);
  EXPECT_EQ(n.c.counters_of(0).broadcasts, 0u);
  EXPECT_EQ(n.c.lock(1).st, status::already_requesting);
}

TEST(Cohort, TokenGrantsTheLocalHead) {
  node_fixture n(two_by_two, 1, 1, 0);
  ASSERT_TRUE(n.c.lock(1).ok());
  ASSERT_TRUE(n.c.lock(0).ok());
  const std::vector<std::uint32_t> ln(2);
  const cohort_step s = n.c.on_token(1, ln, {}, by_hand);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.grant, 1);  // FIFO: rank 3 asked first
  EXPECT_EQ(n.c.in_cs(), 1);
  EXPECT_EQ(n.c.counters_of(1).tokens_received, 1u);
  n.c.note_entry(1);  // rank 3 sees its entry, with the token: no local acquisition
  EXPECT_EQ(n.c.counters_of(1).acquisitions, 1u);
  EXPECT_EQ(n.c.counters_of(1).local_acquisitions, 0u);
  // Nobody else waits: the second local rank gets it by a local handoff.
  const cohort_step u = n.c.unlock(1);
  EXPECT_EQ(u.act.grant, 0);
  EXPECT_EQ(u.act.token_to, rank_t(-1));
  EXPECT_EQ(n.c.counters_of(1).local_handoffs_sent, 1u);
  // The waiter counts its entry when it sees the gate serve its ticket.
  EXPECT_TRUE(n.c.gate_now().serves(n.c.ticket_of(0)));
  EXPECT_EQ(n.c.counters_of(0).acquisitions, 0u);
  n.c.note_entry(0);
  EXPECT_EQ(n.c.counters_of(0).local_handoffs_received, 1u);
  EXPECT_EQ(n.c.counters_of(0).local_acquisitions, 1u);

  ASSERT_TRUE(n.c.unlock(0).ok());
  EXPECT_TRUE(n.c.holds_token());  // idle holder now
  EXPECT_EQ(n.c.state().ln[1], 1u);
}

// The cohort keeps LN as the wire carries it, 32 bits, and compares it with RN
// modulo 2^32: node 1 has heard node 0's request s (past 2^32, and at the wrap);
// the token says node 0's last served request is s (not waiting) or s - 1 (waiting,
// so the release sends the token there).
TEST(Cohort, TokenLnIsComparedWithRnModulo2To32) {
  constexpr std::uint64_t past = (std::uint64_t{1} << 32) + 5, wrap = std::uint64_t{1} << 32;
  for (const std::uint64_t s : {past, wrap}) {
    for (const bool served : {true, false}) {
      node_fixture n(two_by_two, 1, 1, 0);
      ASSERT_TRUE(n.c.on_request(0, rank_t(0), seq_t(s)).ok());
      ASSERT_TRUE(n.c.lock(0).ok());
      const std::vector<std::uint32_t> ln{low32(seq_t(served ? s : s - 1)), 0};
      ASSERT_TRUE(n.c.on_token(0, ln, {}, by_hand).ok());
      EXPECT_EQ(n.c.state().ln[0], ln[0]) << s;
      EXPECT_EQ(n.c.remote_waiter_known(), !served) << s;  // else node 0 still waits
      const cohort_step u = n.c.unlock(0);
      ASSERT_TRUE(u.ok());
      EXPECT_EQ(u.act.token_to, served ? rank_t(-1) : rank_t(0)) << s;
    }
  }
}

// The runtime decodes a token's LN straight into the receiving node's state
// (ln_inbox) instead of into a spare token that on_token copies: both leave the
// same state. Three nodes of one rank, the token first on node 2; node 0 gets it
// (LN[0] = 1 after its release), enters again and passes it to node 1, node 2
// queued.
TEST(Cohort, TokenDecodedIntoTheInboxEqualsACopiedOne) {
  const std::vector<std::int32_t> three{0, 1, 2};
  node_fixture h(three, 0, 1, 2), copied(three, 1, 1, 2), inbox(three, 1, 1, 2);
  ASSERT_TRUE(h.c.lock(0).act.broadcast);
  const std::vector<ln_t> first(3, 0);
  ASSERT_TRUE(h.c.on_token(0, first, {}, by_hand).ok());
  ASSERT_TRUE(h.c.unlock(0).ok());
  ASSERT_TRUE(h.c.lock(0).ok());
  for (node_fixture* n : {&h, &copied, &inbox}) {
    if (n != &h) {
      ASSERT_TRUE(n->c.lock(0).ok());  // node 1's first request
    }
    ASSERT_TRUE(n->c.on_request(0, rank_t(2), seq_t(1)).ok());
  }
  ASSERT_TRUE(h.c.on_request(0, rank_t(1), seq_t(1)).ok());
  const cohort_step u = h.c.unlock(0);
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u.act.token_to, rank_t(1));
  const cohort_view& v = h.c.state();
  ASSERT_EQ(v.h->tq_len, 1);
  const token_frame f{3, three};
  std::vector<std::byte> buf(node_token::bytes(3));
  buf.resize(encode_node_token(f, {v.ln, 3}, {v.tq, 1}, 1, h.c.trail(), 0, {}, buf));
  std::vector<std::uint8_t> marks(3, 0);
  token spare;
  spare.ln.resize(3);
  std::uint64_t hop = 0;
  std::array<std::int32_t, node_token::route> route{};
  ASSERT_TRUE(decode_node_token(buf, f, 1, 0, spare.ln, spare.queue, hop, route, {}, marks));
  ASSERT_TRUE(copied.c.on_token(0, spare.ln, spare.queue, {hop, route}).ok());
  std::vector<rank_t> queue;
  ASSERT_TRUE(decode_node_token(buf, f, 1, 0, inbox.c.ln_inbox(), queue, hop, route, {}, marks));
  ASSERT_TRUE(inbox.c.on_token(0, inbox.c.ln_inbox(), queue, {hop, route}).ok());
  EXPECT_EQ(hop, 2u);  // node 2 to node 0, node 0 to node 1
  EXPECT_EQ(route[0], 0);
  EXPECT_EQ(inbox.c.state().ln[0], 1u);
  EXPECT_EQ(inbox.c.in_cs(), 0);
  EXPECT_EQ(inbox.mem, copied.mem);  // the whole node state, byte for byte
}

TEST(Cohort, IdleHolderSendsTokenToTheRequester) {
  node_fixture n(two_by_two, 0, 1, 0);
  const cohort_step s = n.c.on_request(0, rank_t(3), seq_t(1));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.token_to, rank_t(3));  // straight to the asking rank, not node 1's rank 0
  EXPECT_FALSE(n.c.holds_token());
  EXPECT_EQ(n.c.counters_of(0).requests_received, 1u);
  EXPECT_EQ(n.c.counters_of(0).tokens_sent, 1u);
  // A stale or repeated REQUEST changes nothing.
  EXPECT_FALSE(n.c.on_request(0, rank_t(2), seq_t(1)).act.broadcast);
  EXPECT_EQ(n.c.state().requester[1], 3);
}

// A broadcast reaches the other nodes most recently heard of first: the initial
// owner, the nodes whose new requests were heard (latest first), the node the token
// was last sent to. Every other node is in the order exactly once.
TEST(Cohort, BroadcastOrderPutsTheLikeliestHolderFirst) {
  using order = std::vector<std::int32_t>;
  auto order_of = [](const cohort& c) { return order(c.broadcast_order().begin(), c.broadcast_order().end()); };
  const std::vector<std::int32_t> four_nodes{0, 1, 2, 3};  // one rank each
  node_fixture a(four_nodes, 1, 1, 2);                     // node 1; the token starts on node 2
  EXPECT_EQ(order_of(a.c), (order{2, 3, 0}));
  cohort_step s = a.c.lock(0);
  ASSERT_TRUE(s.act.broadcast);
  EXPECT_EQ(order_of(a.c), (order{2, 3, 0}));
  node_fixture b(four_nodes, 1, 1, 1);  // node 1 holds the token: its successors first
  EXPECT_EQ(order_of(b.c), (order{2, 3, 0}));
  ASSERT_TRUE(b.c.on_request(0, rank_t(3), seq_t(1)).ok());  // idle holder: token to node 3
  EXPECT_EQ(order_of(b.c), (order{3, 2, 0}));
  ASSERT_TRUE(b.c.on_request(0, rank_t(0), seq_t(1)).ok());  // heard later: node 0 asks too
  EXPECT_EQ(order_of(b.c), (order{0, 3, 2}));
  s = b.c.lock(0);
  ASSERT_TRUE(s.act.broadcast);
  EXPECT_EQ(order_of(b.c).front(), 0);
  // An old or repeated REQUEST does not move its node.
  ASSERT_TRUE(b.c.on_request(0, rank_t(3), seq_t(1)).ok());
  EXPECT_EQ(order_of(b.c), (order{0, 3, 2}));
  // The token sent away: its destination moves to the front.
  node_fixture c(four_nodes, 1, 1, 1);
  ASSERT_TRUE(c.c.lock(0).ok());
  ASSERT_TRUE(c.c.on_request(0, rank_t(2), seq_t(1)).ok());
  ASSERT_TRUE(c.c.on_request(0, rank_t(3), seq_t(1)).ok());
  EXPECT_EQ(order_of(c.c), (order{3, 2, 0}));
  ASSERT_EQ(c.c.unlock(0).act.token_to, rank_t(2));  // the queue takes nodes 2, 3
  EXPECT_EQ(order_of(c.c), (order{2, 3, 0}));
  // One node: nobody to send to.
  node_fixture d({0, 0}, 0, 1, 0);
  EXPECT_TRUE(d.c.broadcast_order().empty());
}

TEST(Cohort, PassBoundSendsTheTokenAwayAndAsksAgain) {
  for (std::uint32_t bound : {1u, 2u}) {
    node_fixture n({0, 0, 0, 1}, 0, bound, 0);  // node 0: ranks 0,1,2; node 1: rank 3
    ASSERT_TRUE(n.c.lock(0).ok());
    ASSERT_TRUE(n.c.lock(1).ok());
    ASSERT_TRUE(n.c.lock(2).ok());
    ASSERT_TRUE(n.c.on_request(0, rank_t(3), seq_t(1)).ok());  // deferred: rank 0 in CS
    EXPECT_TRUE(n.c.remote_waiter_known());
    std::int32_t at = 0;
    for (std::uint32_t p = 0; p < bound; ++p) {  // B local passes while node 1 waits
      const cohort_step s = n.c.unlock(at);
      ASSERT_EQ(s.act.grant, at + 1) << "B=" << bound;
      at = s.act.grant;
    }
    const cohort_step s = n.c.unlock(at);  // the bound: the token goes to rank 3
    EXPECT_EQ(s.act.grant, -1);
    EXPECT_EQ(s.act.token_to, rank_t(3));
    const bool left = bound < 2;  // with B = 1, rank 2 still waits locally
    EXPECT_EQ(s.act.broadcast, left);
    if (left) {
      EXPECT_EQ(s.act.requester, rank_t(2));  // the token must come back to the local head
      EXPECT_EQ(s.act.seq, seq_t(1));
      EXPECT_EQ(n.c.counters_of(at).bound_releases, 1u);
    }
  }
}

TEST(Cohort, WithoutRemoteWaitersLocalPassesAreUnbounded) {
  node_fixture n({0, 0, 1}, 0, 1, 0);
  ASSERT_TRUE(n.c.lock(0).ok());
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(n.c.lock(1 - round % 2).ok());
    const cohort_step s = n.c.unlock(round % 2);
    ASSERT_EQ(s.act.grant, 1 - round % 2);
  }
  EXPECT_TRUE(n.c.holds_token());
}

TEST(Cohort, WithdrawKeepsOrderAndTheNodeRequest) {
  node_fixture n({0, 1, 1, 1}, 1, 1, 0);  // node 1: ranks 1,2,3 (locals 0,1,2)
  ASSERT_TRUE(n.c.lock(0).ok());
  ASSERT_TRUE(n.c.lock(1).ok());
  ASSERT_TRUE(n.c.lock(2).ok());
  ASSERT_TRUE(n.c.withdraw(1).ok());
  EXPECT_EQ(n.c.withdraw(1).st, status::not_requesting);
  ASSERT_TRUE(n.c.withdraw(0).ok());  // the requester gives up; the request stands
  EXPECT_TRUE(n.c.requesting());
  const std::vector<std::uint32_t> ln(2);
  const cohort_step s = n.c.on_token(0, ln, {}, by_hand);  // received by the withdrawn requester
  EXPECT_EQ(s.act.grant, 2);
}

TEST(Cohort, TokenForAllWithdrawnNodeMovesOnOrStays) {
  node_fixture n({0, 1, 2}, 1, 1, 0);  // three nodes of one rank; this is node 1
  ASSERT_TRUE(n.c.lock(0).ok());
  ASSERT_TRUE(n.c.withdraw(0).ok());
  ASSERT_TRUE(n.c.on_request(0, rank_t(2), seq_t(1)).ok());
  const std::vector<std::uint32_t> ln(3);
  const cohort_step s = n.c.on_token(0, ln, {}, by_hand);
  EXPECT_EQ(s.act.token_to, rank_t(2));  // node 2 is fresh: it gets the token
  EXPECT_EQ(n.c.state().ln[1], 1u);      // node 1's request counts as served
}

TEST(Cohort, TryLockEntersOnlyAtAnIdleHolderNode) {
  node_fixture n(two_by_two, 0, 1, 0), m(two_by_two, 1, 1, 0);
  EXPECT_EQ(m.c.try_lock(0).st, status::would_block);
  EXPECT_FALSE(m.c.requesting());
  ASSERT_TRUE(n.c.try_lock(0).ok());
  EXPECT_EQ(n.c.try_lock(1).st, status::would_block);  // busy node
  EXPECT_EQ(n.c.try_lock(0).st, status::already_in_cs);
}

TEST(Cohort, MisuseChangesNothing) {
  node_fixture n(two_by_two, 0, 1, 0);
  EXPECT_EQ(n.c.unlock(0).st, status::not_in_cs);
  EXPECT_EQ(n.c.lock(2).st, status::bad_rank);
  EXPECT_EQ(n.c.on_request(0, rank_t(1), seq_t(1)).st, status::self_request);
  EXPECT_EQ(n.c.on_request(0, rank_t(9), seq_t(1)).st, status::bad_rank);
  const std::vector<std::uint32_t> ln(2);
  EXPECT_EQ(n.c.on_token(0, ln, {}, by_hand).st, status::not_requesting);
  node_fixture m(two_by_two, 1, 1, 0);
  ASSERT_TRUE(m.c.lock(0).ok());
  const std::vector<std::uint32_t> short_ln(1);
  const std::vector<rank_t> self_q{rank_t(3)}, dup_q{rank_t(0), rank_t(1)};
  EXPECT_EQ(m.c.on_token(0, short_ln, {}, by_hand).st, status::bad_token);
  EXPECT_EQ(m.c.on_token(0, ln, self_q, by_hand).st, status::bad_token);  // this node queued
  EXPECT_EQ(m.c.on_token(0, ln, dup_q, by_hand).st, status::bad_token);   // too long, node 0 twice
  EXPECT_TRUE(m.c.requesting());
  EXPECT_EQ(m.c.counters_of(0).tokens_received, 0u);
  EXPECT_TRUE(m.c.on_token(0, ln, {}, by_hand).ok());
}

TEST(Cohort, LeavingWithoutTheLockServesTheNextTicket) {
  node_fixture n({0, 0, 0}, 0, 1, 0);
  ASSERT_EQ(n.c.lock(0).act.grant, 0);  // at once, counted
  ASSERT_EQ(n.c.lock(1).act.grant, -1);
  ASSERT_EQ(n.c.lock(2).act.grant, -1);
  EXPECT_FALSE(n.c.leave_unlocked(1));  // not in the CS: nothing changes
  EXPECT_EQ(n.c.in_cs(), 0);
  ASSERT_TRUE(n.c.leave_unlocked(0));
  EXPECT_EQ(n.c.in_cs(), 1);
  EXPECT_TRUE(n.c.is_waiting(2));
  n.c.note_entry(1);
  ASSERT_TRUE(n.c.leave_unlocked(1));
  n.c.note_entry(2);
  ASSERT_TRUE(n.c.leave_unlocked(2));
  EXPECT_EQ(n.c.in_cs(), -1);
  EXPECT_EQ(n.c.queued_count(), 0);
  EXPECT_FALSE(n.c.leave_unlocked(2));  // twice
  for (std::int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(n.c.counters_of(i).acquisitions, 1u);
    EXPECT_EQ(n.c.counters_of(i).local_acquisitions, 1u);
    EXPECT_EQ(n.c.counters_of(i).local_handoffs_sent, i < 2 ? 1u : 0u);  // the last one handed to nobody
    EXPECT_EQ(n.c.counters_of(i).local_handoffs_received, i > 0 ? 1u : 0u);
  }
  EXPECT_EQ(n.c.lock(1).act.grant, 1);  // the token idle here again: at once
}

TEST(Cohort, AKnownRemoteWaiterMakesLeavingTakeTheLock) {
  node_fixture n(two_by_two, 0, 1, 0);
  ASSERT_EQ(n.c.lock(0).act.grant, 0);
  ASSERT_TRUE(n.c.lock(1).ok());
  ASSERT_TRUE(n.c.on_request(0, rank_t(2), seq_t(1)).ok());  // node 1 waits
  EXPECT_TRUE(n.c.gate_now().slow);
  EXPECT_FALSE(n.c.leave_unlocked(0));
  EXPECT_EQ(n.c.in_cs(), 0);
  const cohort_step u = n.c.unlock(0);  // the one pass B = 1 allows
  EXPECT_EQ(u.act.grant, 1);
  EXPECT_FALSE(n.c.leave_unlocked(1));
  const cohort_step v = n.c.unlock(1);
  EXPECT_EQ(v.act.token_to, rank_t(2));
  EXPECT_FALSE(n.c.gate_now().token);
  EXPECT_FALSE(n.c.gate_now().slow);
}

TEST(Cohort, WithdrawMovesLaterTicketsUp) {
  node_fixture n({0, 0, 0, 0}, 0, 1, 0);
  ASSERT_EQ(n.c.lock(0).act.grant, 0);
  for (std::int32_t i = 1; i < 4; ++i) ASSERT_TRUE(n.c.lock(i).ok());
  const std::uint32_t third = n.c.ticket_of(3);
  ASSERT_TRUE(n.c.withdraw(2).ok());
  EXPECT_EQ(n.c.ticket_of(3), third - 1);
  EXPECT_EQ(n.c.gate_now().next, third);
  EXPECT_EQ(n.c.withdraw(0).st, status::already_in_cs);
  ASSERT_TRUE(n.c.leave_unlocked(0));
  EXPECT_EQ(n.c.withdraw(1).st, status::already_in_cs);  // served meanwhile
  ASSERT_TRUE(n.c.leave_unlocked(1));
  EXPECT_EQ(n.c.in_cs(), 3);
  EXPECT_FALSE(n.c.queued(2));
}

TEST(Cohort, TicketsWrapAround) {
  // A node whose tickets are about to wrap (2^24): the state as after that many
  // entries, set by hand.
  node_fixture n({0, 0, 0}, 0, 1, 0);
  const std::uint32_t last = gate::ticket_mask;
  *n.c.state().gate = gate{last - 1, last - 1, true, false, false}.word();
  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(n.c.lock(0).ok());
    ASSERT_TRUE(n.c.lock(1).ok());
    ASSERT_TRUE(n.c.lock(2).ok());
    ASSERT_TRUE(n.c.withdraw(1).ok());
    EXPECT_EQ(n.c.in_cs(), 0);
    ASSERT_TRUE(n.c.leave_unlocked(0));
    EXPECT_EQ(n.c.in_cs(), 2);
    EXPECT_FALSE(n.c.queued(1));
    ASSERT_TRUE(n.c.leave_unlocked(2));
    EXPECT_EQ(n.c.in_cs(), -1);
  }
  EXPECT_LT(n.c.gate_now().turn, 8u);  // it wrapped
}

TEST(Cohort, LockingWithoutTheLockNeedsTheTokenAndNothingSlow) {
  node_fixture n({0, 0, 0, 1}, 0, 1, 0), m({0, 0, 0, 1}, 1, 1, 0);
  cohort_step s;
  ASSERT_TRUE(n.c.lock_unlocked(0, s));
  EXPECT_EQ(s.act.grant, 0);  // at once
  EXPECT_EQ(n.c.counters_of(0).local_acquisitions, 1u);
  EXPECT_FALSE(n.c.lock_unlocked(0, s));  // holds a ticket: lock() says why
  EXPECT_EQ(n.c.lock(0).st, status::already_in_cs);
  ASSERT_TRUE(n.c.lock_unlocked(1, s));
  EXPECT_EQ(s.act.grant, -1);
  EXPECT_TRUE(n.c.is_waiting(1));
  ASSERT_TRUE(n.c.on_request(0, rank_t(3), seq_t(1)).ok());  // node 1 waits: slow
  EXPECT_FALSE(n.c.lock_unlocked(2, s));
  ASSERT_TRUE(n.c.lock(2).ok());
  EXPECT_EQ(n.c.queued_at(2), 2);
  EXPECT_FALSE(m.c.lock_unlocked(0, s));  // no token: the node must ask for it
  EXPECT_TRUE(m.c.lock(0).act.broadcast);
}

TEST(Cohort, SettledOnlyWhenEveryTicketOutHasItsRank) {
  node_fixture n({0, 0}, 0, 1, 0);
  cohort_step s;
  ASSERT_TRUE(n.c.lock_unlocked(0, s));
  EXPECT_TRUE(n.c.settled());
  // A rank that took the next ticket and has not written it to its line yet.
  gate g = n.c.gate_now();
  g.next = gate::after(g.next);
  *n.c.state().gate = g.word();
  EXPECT_FALSE(n.c.settled());
}

TEST(Cohort, OneNodeIsAPurelyLocalLock) {
  node_fixture n({0, 0, 0}, 0, 1, 0);
  ASSERT_TRUE(n.c.lock(2).ok());
  ASSERT_TRUE(n.c.lock(0).ok());
  ASSERT_TRUE(n.c.lock(1).ok());
  EXPECT_EQ(n.c.unlock(2).act.grant, 0);
  EXPECT_EQ(n.c.unlock(0).act.grant, 1);
  const cohort_step s = n.c.unlock(1);
  EXPECT_EQ(s.act.token_to, rank_t(-1));
  EXPECT_FALSE(s.act.broadcast);
  for (std::int32_t i = 0; i < 3; ++i) EXPECT_EQ(n.c.counters_of(i).requests_sent, 0u);
}

}  // namespace
