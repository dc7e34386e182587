// Unit tests of check::world: refused steps change nothing, the network's
// bookkeeping, and the checks themselves (each invariant caught on a corrupted
// state built with world::assemble).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/world.hpp"

namespace {

using tally::check::in_flight;
using tally::check::request_msg;
using tally::check::verdict;
using tally::check::world;
using tally::protocol::ln_t;
using tally::protocol::mode;
using tally::protocol::peer;
using tally::protocol::rank_t;
using tally::protocol::seq_t;
using tally::protocol::token;

std::vector<std::uint64_t> code(const world& w) {
  std::vector<std::uint64_t> out;
  w.encode(out);
  return out;
}

// The step is refused with a reason containing `why`, and the world is unchanged.
void expect_refused(world& w, verdict (*step)(world&), const std::string& why) {
  const world before = w;
  const verdict v = step(w);
  EXPECT_FALSE(v);
  EXPECT_NE(v.reason.find(why), std::string::npos) << "reason: " << v.reason;
  EXPECT_EQ(code(w), code(before));
  EXPECT_EQ(w.messages(), before.messages());
}

std::vector<peer> fresh_peers(std::int32_t n, std::int32_t owner) {
  std::vector<peer> out;
  for (std::int32_t i = 0; i < n; ++i) out.emplace_back(rank_t(i), n, rank_t(owner));
  return out;
}

// The violation() message of w, or "" if none.
std::string broken(const world& w) { return w.violation().value_or(""); }

TEST(World, ConstructionRejectsBadArguments) {
  EXPECT_THROW(world(0, rank_t(0)), tally::protocol::bad_argument);
  EXPECT_THROW(world(3, rank_t(3)), tally::protocol::bad_argument);
  EXPECT_THROW(world(3, rank_t(-1)), tally::protocol::bad_argument);
}

TEST(World, InitialStateIsQuiescentAndSound) {
  const world w(4, rank_t(2));
  EXPECT_EQ(w.holder(), rank_t(2));
  EXPECT_FALSE(w.flight());
  EXPECT_TRUE(w.quiescent());
  EXPECT_FALSE(w.can_progress());
  EXPECT_FALSE(w.violation());
  EXPECT_EQ(w.messages(), 0u);
}

TEST(World, RefusedStepsChangeNothing) {
  world w(3, rank_t(0));
  ASSERT_TRUE(w.request(rank_t(1)));  // REQUEST(1, 1) pending to 0 and 2
  expect_refused(
      w, [](world& x) { return x.request(rank_t(1)); }, "already outstanding");
  expect_refused(
      w, [](world& x) { return x.request(rank_t(3)); }, "out of range");
  expect_refused(
      w, [](world& x) { return x.withdraw(rank_t(2)); }, "not requesting");
  expect_refused(
      w, [](world& x) { return x.exit(rank_t(1)); }, "not in the critical section");
  expect_refused(
      w, [](world& x) { return x.deliver_token(); }, "no token in flight");
  expect_refused(
      w, [](world& x) { return x.deliver(rank_t(2), rank_t(0)); }, "no pending REQUEST from rank 2");
  expect_refused(
      w, [](world& x) { return x.deliver(rank_t(1), rank_t(0), seq_t(2)); }, "with sequence 2");
  expect_refused(
      w, [](world& x) { return x.deliver(rank_t(1), rank_t(1)); }, "no pending");
  expect_refused(
      w, [](world& x) { return x.deliver(rank_t(-1), rank_t(0)); }, "out of range");

  ASSERT_TRUE(w.deliver(rank_t(1), rank_t(0), seq_t(1)));  // token leaves for rank 1
  expect_refused(                                          // exactly once: no duplicate receipt
      w, [](world& x) { return x.deliver(rank_t(1), rank_t(0), seq_t(1)); }, "no pending");
  ASSERT_TRUE(w.deliver_token());
  expect_refused(
      w, [](world& x) { return x.request(rank_t(1)); }, "already in the critical");
  EXPECT_FALSE(w.violation());
}

TEST(World, DeliverWithoutSequenceTakesTheOldest) {
  world w(3, rank_t(0));
  ASSERT_TRUE(w.request(rank_t(1)));
  ASSERT_TRUE(w.deliver(rank_t(1), rank_t(0)));
  ASSERT_TRUE(w.deliver_token());
  ASSERT_TRUE(w.exit(rank_t(1)));
  ASSERT_TRUE(w.request(rank_t(2)));
  ASSERT_TRUE(w.deliver(rank_t(2), rank_t(1)));
  ASSERT_TRUE(w.deliver_token());
  ASSERT_TRUE(w.request(rank_t(1)));  // #2; #1 to rank 2 is still pending
  ASSERT_EQ(w.pending_count(rank_t(1), rank_t(2)), 2u);
  ASSERT_TRUE(w.deliver(rank_t(1), rank_t(2)));
  EXPECT_EQ(w.peer(rank_t(2)).rn(rank_t(1)), seq_t(1));
  ASSERT_TRUE(w.deliver(rank_t(1), rank_t(2)));
  EXPECT_EQ(w.peer(rank_t(2)).rn(rank_t(1)), seq_t(2));
}

TEST(World, MessagesCountRequestsAndTokens) {
  world w(4, rank_t(0));
  ASSERT_TRUE(w.request(rank_t(0)));  // retained token: nothing sent
  ASSERT_TRUE(w.exit(rank_t(0)));
  EXPECT_EQ(w.messages(), 0u);
  ASSERT_TRUE(w.request(rank_t(3)));
  EXPECT_EQ(w.messages(), 3u);
  EXPECT_TRUE(w.can_progress());
  ASSERT_TRUE(w.deliver(rank_t(3), rank_t(0)));
  EXPECT_EQ(w.messages(), 4u);
  EXPECT_EQ(w.holder(), std::nullopt);
  EXPECT_EQ(w.flight()->to, rank_t(3));
  ASSERT_TRUE(w.deliver_token());
  EXPECT_FALSE(w.quiescent());  // rank 3 in its CS; two REQUESTs pending
}

TEST(World, EncodingIdentifiesStatesNotPaths) {
  world a(3, rank_t(0)), b(3, rank_t(0));
  for (world* w : {&a, &b}) {
    ASSERT_TRUE(w->request(rank_t(0)));
    ASSERT_TRUE(w->request(rank_t(1)));
    ASSERT_TRUE(w->request(rank_t(2)));
  }
  ASSERT_TRUE(a.deliver(rank_t(1), rank_t(0)));  // the same two deliveries, either order
  ASSERT_TRUE(a.deliver(rank_t(2), rank_t(0)));
  ASSERT_TRUE(b.deliver(rank_t(2), rank_t(0)));
  ASSERT_TRUE(b.deliver(rank_t(1), rank_t(0)));
  EXPECT_EQ(code(a), code(b));
  ASSERT_TRUE(a.deliver(rank_t(1), rank_t(2)));
  EXPECT_NE(code(a), code(b));
}

TEST(World, RegressionFromCatchesDecreases) {
  world w(2, rank_t(0));
  const world start = w;
  ASSERT_TRUE(w.request(rank_t(1)));
  const world requested = w;
  EXPECT_FALSE(w.regression_from(start));
  EXPECT_NE(start.regression_from(requested).value_or("").find("RN_1[1] decreased"), std::string::npos);
  ASSERT_TRUE(w.deliver(rank_t(1), rank_t(0)));
  ASSERT_TRUE(w.deliver_token());
  ASSERT_TRUE(w.exit(rank_t(1)));  // LN[1] = 1
  EXPECT_FALSE(w.regression_from(requested));
  // Same RN rows, but rank 1 holds a token from before its exit: only LN went back.
  peer older(rank_t(1), 2, rank_t(0));
  ASSERT_TRUE(older.lock().ok());
  ASSERT_TRUE(older.on_token(token{std::vector<ln_t>(2), {}}).ok());
  const world rewound = world::assemble({w.peer(rank_t(0)), older}, {});
  EXPECT_NE(rewound.regression_from(w).value_or("").find("LN[1] decreased from 1 to 0"), std::string::npos)
      << rewound.regression_from(w).value_or("");
}

TEST(World, AssembleRejectsPartsTheChecksCannotIndex) {
  EXPECT_THROW(world::assemble({}, {}), tally::protocol::bad_argument);
  std::vector<peer> swapped{peer(rank_t(1), 2, rank_t(0)), peer(rank_t(0), 2, rank_t(0))};
  EXPECT_THROW(world::assemble(swapped, {}), tally::protocol::bad_argument);
  EXPECT_THROW(world::assemble(fresh_peers(2, 0), {{rank_t(1), rank_t(2), seq_t(1)}}), tally::protocol::bad_argument);
  EXPECT_THROW(world::assemble(fresh_peers(2, 0), {}, in_flight{rank_t(1), token{{ln_t{0}}, {}}}),
               tally::protocol::bad_argument);
  EXPECT_FALSE(world::assemble(fresh_peers(2, 0), {}).violation());
}

TEST(World, ViolationCatchesTwoTokensAndNone) {
  std::vector<peer> two{peer(rank_t(0), 2, rank_t(0)), peer(rank_t(1), 2, rank_t(1))};
  EXPECT_NE(broken(world::assemble(two, {})).find("token count is 2"), std::string::npos);
  std::vector<peer> none{peer(rank_t(0), 2, rank_t(1)), peer(rank_t(1), 2, rank_t(0))};
  EXPECT_NE(broken(world::assemble(none, {})).find("token count is 0"), std::string::npos);
  EXPECT_NE(broken(world::assemble(fresh_peers(2, 0), {}, in_flight{rank_t(1), token{std::vector<ln_t>(2), {}}}))
                .find("token count is 2"),
            std::string::npos);
}

TEST(World, ViolationCatchesRnAheadOfItsOwner) {
  std::vector<peer> v = fresh_peers(3, 0);
  ASSERT_TRUE(v[0].lock().ok());                           // in CS: defers
  ASSERT_TRUE(v[0].on_request(rank_t(2), seq_t(5)).ok());  // rank 2 never asked
  EXPECT_NE(broken(world::assemble(v, {})).find("RN_0[2] = 5 exceeds RN_2[2] = 0"), std::string::npos);
}

TEST(World, ViolationCatchesRequesterWithoutFreshBroadcast) {
  std::vector<peer> v = fresh_peers(3, 0);
  ASSERT_TRUE(v[1].lock().ok());  // broadcast #1, but nothing pending and nobody told
  EXPECT_NE(broken(world::assemble(v, {})).find("REQUEST #1 neither reached rank 0"), std::string::npos);
  const std::vector<request_msg> sent{{rank_t(1), rank_t(0), seq_t(1)}, {rank_t(1), rank_t(2), seq_t(1)}};
  EXPECT_EQ(broken(world::assemble(v, sent)), "");
  std::vector<request_msg> twice = sent;
  twice.push_back(sent[0]);
  EXPECT_NE(broken(world::assemble(v, twice)).find("is duplicated"), std::string::npos);
}

TEST(World, ViolationCatchesFabricatedPendingRequest) {
  EXPECT_NE(broken(world::assemble(fresh_peers(2, 0), {{rank_t(1), rank_t(0), seq_t(1)}})).find("was never issued"),
            std::string::npos);
}

TEST(World, ViolationCatchesBadQueueMembers) {
  // Rank 1 enters with a token whose Q names rank 2, which is idle.
  std::vector<peer> v{peer(rank_t(0), 3, rank_t(1)), peer(rank_t(1), 3, rank_t(0)), peer(rank_t(2), 3, rank_t(0))};
  ASSERT_TRUE(v[1].lock().ok());
  ASSERT_TRUE(v[0].on_request(rank_t(1), seq_t(1)).ok());
  ASSERT_TRUE(v[2].on_request(rank_t(1), seq_t(1)).ok());
  ASSERT_TRUE(v[1].on_token(token{std::vector<ln_t>(3), {rank_t(2)}}).ok());
  EXPECT_NE(broken(world::assemble(v, {})).find("Q member 2 is not requesting"), std::string::npos);
}

TEST(World, ViolationCatchesTokenSentToANonRequester) {
  const std::vector<peer> v{peer(rank_t(0), 2, rank_t(1)), peer(rank_t(1), 2, rank_t(0))};
  EXPECT_NE(broken(world::assemble(v, {}, in_flight{rank_t(1), token{std::vector<ln_t>(2), {}}}))
                .find("token in flight to rank 1, which is not requesting"),
            std::string::npos);
}

TEST(World, ViolationCatchesLnForWhomTheTokenDoesNotCarryIt) {
  // Rank 0 asked; the token goes to it. The wire carries neither the destination's
  // LN nor a queued rank's: in flight they read 0.
  std::vector<peer> v{peer(rank_t(0), 2, rank_t(1)), peer(rank_t(1), 2, rank_t(0))};
  ASSERT_TRUE(v[0].lock().ok());
  ASSERT_TRUE(v[1].on_request(rank_t(0), seq_t(1)).ok());
  EXPECT_EQ(broken(world::assemble(v, {}, in_flight{rank_t(0), token{{0, 0}, {}}})), "");
  EXPECT_NE(broken(world::assemble(v, {}, in_flight{rank_t(0), token{{1, 0}, {}}}))
                .find("LN[0] = 1 for a rank the token does not carry it for"),
            std::string::npos);
}

TEST(World, ViolationCatchesLnOutsideItsBand) {
  // Rank 0 holds a token claiming rank 1 was served twice; rank 1 never asked.
  std::vector<peer> v{peer(rank_t(0), 2, rank_t(1)), peer(rank_t(1), 2, rank_t(0))};
  ASSERT_TRUE(v[0].lock().ok());
  ASSERT_TRUE(v[1].on_request(rank_t(0), seq_t(1)).ok());
  ASSERT_TRUE(v[0].on_token(token{{0, 2}, {}}).ok());
  EXPECT_NE(broken(world::assemble(v, {})).find("LN[1] = 2 but RN_1[1] = 0"), std::string::npos);
}

}  // namespace
