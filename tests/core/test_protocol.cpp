// Unit tests of one protocol peer: every cell of the state x event table in
// protocol.hpp, the withdraw/try_lock extensions, and every misuse status.
#include "core/protocol.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using namespace tally::protocol;
using kind = action::kind;

token fresh(std::int32_t n) { return token{std::vector<ln_t>(static_cast<std::size_t>(n)), {}}; }

// next_fresh against the rule in 64 bits, entry by entry: every length around the
// 64-entry chunks, every start, fresh entries at chunk edges, inside chunks and none
// at all. RN runs across 2^32 and LN holds the low 32 bits (ln_t) of a value within
// the bound |LN - RN| < 2^31, so the modular test must agree with the full one.
TEST(FreshScan, NextFreshFindsExactlyTheFreshEntriesInOrder) {
  std::uint64_t x = 88172645463325252ull;  // xorshift: a fixed, varied pattern
  const auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (std::size_t n : {0, 1, 63, 64, 65, 127, 128, 129, 200, 1000}) {
    for (int density : {0, 1, 30}) {  // fresh entries per thousand
      std::vector<seq_t> rn(n);
      std::vector<std::uint64_t> full(n);  // LN in 64 bits
      std::vector<ln_t> ln(n);
      for (std::size_t j = 0; j < n; ++j) {
        const bool is_fresh = static_cast<int>(rnd() % 1000) < density || (density > 0 && j % 64 == 63);
        const std::uint64_t r = (std::uint64_t{1} << 32) - 2500 + rnd() % 5000;
        std::uint64_t l = r - 1;
        if (!is_fresh) {
          const std::uint64_t stale[] = {r, r - 2, r + 1, r + 1000};  // served, behind, ahead (in flight)
          l = stale[rnd() % 4];
        }
        rn[j] = seq_t(r);
        full[j] = l;
        ln[j] = static_cast<ln_t>(l);
      }
      for (std::size_t from = 0; from <= n; ++from) {
        std::size_t want = from;
        while (want < n && rn[want].value() != full[want] + 1) ++want;
        ASSERT_EQ(next_fresh(rn.data(), ln.data(), from, n), want) << "n " << n << " from " << from;
      }
      std::vector<std::size_t> seen, all;
      for (std::size_t j = 0; j < n; ++j)
        if (rn[j].value() == full[j] + 1) all.push_back(j);
      EXPECT_FALSE(find_fresh(rn.data(), ln.data(), n, [&](std::size_t j) {
        seen.push_back(j);
        return false;
      }));
      EXPECT_EQ(seen, all) << n;
      if (all.size() >= 2) {  // it stops where f says so
        std::size_t calls = 0;
        EXPECT_TRUE(find_fresh(rn.data(), ln.data(), n, [&](std::size_t j) { return ++calls, j == all[1]; }));
        EXPECT_EQ(calls, 2u);
      }
      if (density > 0 && n >= 64) {
        EXPECT_FALSE(all.empty());  // the pattern has fresh entries to find
      }
    }
  }
}

TEST(Peer, ConstructionRejectsBadArguments) {
  EXPECT_THROW(peer(rank_t(0), 0, rank_t(0)), tally::protocol::bad_argument);
  EXPECT_THROW(peer(rank_t(3), 3, rank_t(0)), tally::protocol::bad_argument);
  EXPECT_THROW(peer(rank_t(0), 3, rank_t(-1)), tally::protocol::bad_argument);
  try {
    peer(rank_t(0), 3, rank_t(7));
    FAIL() << "no throw";
  } catch (const tally::protocol::bad_argument& e) {
    EXPECT_STREQ(e.what(), "rank 7 out of range for 3 peers");
  }
}

TEST(Peer, InitialOwnerHoldsIdleToken) {
  peer a(rank_t(1), 3, rank_t(1)), b(rank_t(0), 3, rank_t(1));
  EXPECT_TRUE(a.holds_token());
  EXPECT_FALSE(b.holds_token());
  EXPECT_EQ(a.mode(), mode::idle);
  EXPECT_EQ(a.held()->ln, std::vector<ln_t>(3));
}

TEST(Peer, HolderReentersWithoutMessagesOrNewSequence) {
  peer a(rank_t(0), 4, rank_t(0));
  for (int k = 0; k < 3; ++k) {
    step s = a.lock();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.act.what, kind::none);
    EXPECT_EQ(a.mode(), mode::in_cs);
    s = a.unlock();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.act.what, kind::none);
  }
  EXPECT_EQ(a.rn(rank_t(0)), seq_t(0));
  EXPECT_EQ(a.counters().acquisitions, 3u);
  EXPECT_EQ(a.counters().local_acquisitions, 3u);
  EXPECT_EQ(a.counters().requests_sent + a.counters().tokens_sent, 0u);
}

TEST(Peer, NonHolderBroadcastsNextSequence) {
  peer b(rank_t(2), 5, rank_t(0));
  step s = b.lock();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.what, kind::broadcast_request);
  EXPECT_EQ(s.act.seq, seq_t(1));
  EXPECT_EQ(b.mode(), mode::requesting);
  EXPECT_EQ(b.counters().requests_sent, 4u);
  EXPECT_EQ(b.lock().st, status::already_requesting);
  EXPECT_EQ(b.counters().broadcasts, 1u);
}

TEST(Peer, IdleHolderHandsOffOnFreshRequestOnly) {
  peer a(rank_t(0), 3, rank_t(0));
  step s = a.on_request(rank_t(1), seq_t(0));  // stale: LN[1] = 0 already served
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.act.what, kind::none);
  s = a.on_request(rank_t(1), seq_t(1));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.what, kind::send_token);
  EXPECT_EQ(s.act.to, rank_t(1));
  EXPECT_FALSE(a.holds_token());
  std::optional<token> t = a.take_token();
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->queue.empty());
  EXPECT_FALSE(a.take_token());  // exactly one take per send
}

TEST(Peer, HolderInCsDefersAndQueuesInIdOrderOnUnlock) {
  peer a(rank_t(0), 4, rank_t(0));
  ASSERT_TRUE(a.lock().ok());
  EXPECT_EQ(a.on_request(rank_t(3), seq_t(1)).act.what, kind::none);
  EXPECT_EQ(a.on_request(rank_t(1), seq_t(1)).act.what, kind::none);
  step s = a.unlock();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.what, kind::send_token);
  EXPECT_EQ(s.act.to, rank_t(1));
  std::optional<token> t = a.take_token();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->queue, std::vector<rank_t>{rank_t(3)});
}

TEST(Peer, WaiterKnownPredictsHandoffOnUnlock) {
  peer a(rank_t(0), 3, rank_t(0));
  EXPECT_FALSE(a.waiter_known());  // idle holder, nobody asked
  ASSERT_TRUE(a.lock().ok());
  EXPECT_FALSE(a.waiter_known());
  ASSERT_TRUE(a.on_request(rank_t(2), seq_t(1)).ok());
  EXPECT_TRUE(a.waiter_known());
  ASSERT_EQ(a.unlock().act.what, kind::send_token);
  EXPECT_FALSE(a.waiter_known());  // the token left
  peer b(rank_t(1), 3, rank_t(0));
  ASSERT_TRUE(b.on_request(rank_t(2), seq_t(1)).ok());
  EXPECT_FALSE(b.waiter_known());  // knows of a request, but holds no token
}

TEST(Peer, TokenReceiptEntersAndUnlockServesOwnRequest) {
  peer b(rank_t(1), 3, rank_t(0));
  ASSERT_EQ(b.lock().act.seq, seq_t(1));
  token t = fresh(3);
  step s = b.on_token(t);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(b.mode(), mode::in_cs);
  EXPECT_EQ(b.counters().local_acquisitions, 0u);
  ASSERT_TRUE(b.unlock().ok());
  EXPECT_EQ(b.held()->ln[1], 1u);
  EXPECT_EQ(b.mode(), mode::idle);
}

// LN is kept as its low 32 bits and compared with RN modulo 2^32: rank 1 has heard
// rank 0's request s (past 2^32, and at the wrap); the token says rank 0's last
// served request is s (nobody waits: rank 1 keeps it) or s - 1 (rank 0 waits: the
// release sends it there), and rank 1's own entry becomes its RN's low 32 bits.
TEST(Peer, LnIsComparedWithRnModulo2To32) {
  constexpr std::uint64_t past = (std::uint64_t{1} << 32) + 5, wrap = std::uint64_t{1} << 32;
  for (const std::uint64_t s : {past, wrap}) {
    for (const bool served : {true, false}) {
      peer b(rank_t(1), 2, rank_t(0));
      ASSERT_TRUE(b.on_request(rank_t(0), seq_t(s)).ok());
      ASSERT_TRUE(b.lock().ok());
      ASSERT_TRUE(b.on_token(token{{low32(seq_t(served ? s : s - 1)), 0}, {}}).ok());
      EXPECT_EQ(b.waiter_known(), !served) << s;
      const step u = b.unlock();
      ASSERT_TRUE(u.ok());
      EXPECT_EQ(u.act.what, served ? kind::none : kind::send_token) << s;
      if (!served) {
        EXPECT_EQ(u.act.to, rank_t(0));
      }
      const token* t = served ? b.held() : b.outgoing();
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->ln[1], 1u);                             // its own request (RN[1] = 1) served
      EXPECT_EQ(t->ln[0], served ? low32(seq_t(s)) : 0u);  // sent: the receiver's entry is not carried
    }
  }
}

TEST(Peer, WithdrawnRequesterRoutesTokenWithoutEntering) {
  peer b(rank_t(1), 3, rank_t(0));
  ASSERT_TRUE(b.lock().ok());
  ASSERT_TRUE(b.withdraw().ok());
  EXPECT_EQ(b.withdraw().st, status::not_requesting);
  ASSERT_TRUE(b.on_request(rank_t(2), seq_t(1)).ok());
  token t = fresh(3);
  step s = b.on_token(t);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.what, kind::send_token);
  EXPECT_EQ(s.act.to, rank_t(2));
  EXPECT_EQ(b.counters().acquisitions, 0u);
  EXPECT_EQ(b.mode(), mode::idle);
  EXPECT_EQ(b.take_token()->ln[1], 1u);  // own request marked served
}

TEST(Peer, WithdrawnRequesterKeepsTokenIdleWhenNobodyWaits) {
  peer b(rank_t(1), 2, rank_t(0));
  ASSERT_TRUE(b.lock().ok());
  ASSERT_TRUE(b.withdraw().ok());
  EXPECT_EQ(b.on_token(fresh(2)).act.what, kind::none);
  EXPECT_TRUE(b.holds_token());
  EXPECT_EQ(b.mode(), mode::idle);
  EXPECT_TRUE(b.try_lock().ok());  // now a retained-token entry
}

TEST(Peer, LockRearmsWithdrawnRequestWithoutNewBroadcast) {
  peer b(rank_t(1), 3, rank_t(0));
  ASSERT_TRUE(b.lock().ok());
  ASSERT_TRUE(b.withdraw().ok());
  step s = b.lock();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.act.what, kind::none);
  EXPECT_EQ(b.counters().broadcasts, 1u);
  ASSERT_TRUE(b.on_token(fresh(3)).ok());
  EXPECT_EQ(b.mode(), mode::in_cs);
}

TEST(Peer, TryLockNeverActs) {
  peer a(rank_t(0), 2, rank_t(0)), b(rank_t(1), 2, rank_t(0));
  EXPECT_EQ(b.try_lock().st, status::would_block);
  EXPECT_EQ(b.mode(), mode::idle);
  EXPECT_TRUE(a.try_lock().ok());
  EXPECT_EQ(a.try_lock().st, status::already_in_cs);
  EXPECT_EQ(a.lock().st, status::already_in_cs);
}

TEST(Peer, MisuseIsReportedAndChangesNothing) {
  peer a(rank_t(0), 3, rank_t(0));
  const peer before = a;
  EXPECT_EQ(a.unlock().st, status::not_in_cs);
  EXPECT_EQ(a.on_token(fresh(3)).st, status::not_requesting);
  EXPECT_EQ(a.on_request(rank_t(0), seq_t(1)).st, status::self_request);
  EXPECT_EQ(a.on_request(rank_t(3), seq_t(1)).st, status::bad_rank);
  EXPECT_EQ(a.on_request(rank_t(-1), seq_t(1)).st, status::bad_rank);
  EXPECT_TRUE(a == before);
}

TEST(Peer, SecondTokenWhileOwnAwaitsTakeIsRefused) {
  // Found by fuzz_peer: the idle holder answers a REQUEST (send_token), asks again
  // before its token was taken, and a fabricated token arrives: one token exists,
  // so the second one is refused and changes nothing.
  peer a(rank_t(0), 3, rank_t(0));
  ASSERT_EQ(a.on_request(rank_t(1), seq_t(1)).act.what, action::kind::send_token);
  ASSERT_EQ(a.lock().act.what, action::kind::broadcast_request);
  const peer before = a;
  EXPECT_EQ(a.on_token(fresh(3)).st, status::not_requesting);
  EXPECT_TRUE(a == before);
  ASSERT_TRUE(a.take_token().has_value());
  EXPECT_TRUE(a.on_token(fresh(3)).ok());  // taken: a token may arrive again
  EXPECT_EQ(a.mode(), mode::in_cs);
}

TEST(Peer, MalformedTokenIsRejected) {
  peer b(rank_t(1), 3, rank_t(0));
  ASSERT_TRUE(b.lock().ok());
  token short_ln{std::vector<ln_t>(2), {}};
  EXPECT_EQ(b.on_token(short_ln).st, status::bad_token);
  token dup = fresh(3);
  dup.queue = {rank_t(2), rank_t(2)};
  EXPECT_EQ(b.on_token(dup).st, status::bad_token);
  token self_in_q = fresh(3);
  self_in_q.queue = {rank_t(1)};
  EXPECT_EQ(b.on_token(self_in_q).st, status::bad_token);
  token out_of_range = fresh(3);
  out_of_range.queue = {rank_t(5)};
  EXPECT_EQ(b.on_token(out_of_range).st, status::bad_token);
  EXPECT_EQ(b.mode(), mode::requesting);
  EXPECT_TRUE(b.on_token(fresh(3)).ok());
}

TEST(Peer, SingleNodeIsAlwaysLocal) {
  peer a(rank_t(0), 1, rank_t(0));
  ASSERT_TRUE(a.lock().ok());
  ASSERT_TRUE(a.unlock().ok());
  EXPECT_EQ(a.counters().local_acquisitions, 1u);
}

}  // namespace
