// Tests of tally-sim's discrete-event engine, its three models and `tally-sim run`:
// exact message accounting per algorithm, exact latencies from the network model,
// the simulator's own safety checks (they must fire on a broken model), the
// summary statistics, determinism per seed, and usage errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/models/central.hpp"
#include "sim/models/ricart_agrawala.hpp"
#include "sim/models/suzuki_kasami.hpp"
#include "sim/models/two_level.hpp"
#include "sim/des.hpp"
#include "sim/run.hpp"

namespace {

using namespace tally::sim;

constexpr ps_t ns = 1000;

network_params net_a() {  // round numbers, every term distinct
  network_params p;
  p.latency = 500 * ns;
  p.overhead = 100 * ns;
  p.gap = 150 * ns;
  p.byte_time = 10;  // 10 ps per byte
  return p;
}

std::vector<std::int32_t> all(std::int32_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

workload per_rank(std::int32_t n, std::uint64_t r, duration_dist cs = {}, duration_dist think = {},
                  std::uint64_t seed = 1) {
  workload w;
  w.ranks = n;
  w.active = all(n);
  w.requests_per_rank = r;
  w.cs = cs;
  w.think = think;
  w.seed = seed;
  return w;
}

duration_dist fixed(ps_t t) { return {duration_dist::shape::fixed, t, 0}; }
duration_dist expo(ps_t mean) { return {duration_dist::shape::exponential, mean, 0}; }

std::uint64_t msgs(const raw_results& r, msg_kind k) { return r.messages[static_cast<std::size_t>(k)]; }

// --- the simulator's own checks must fire -----------------------------------------

// Lets every requester in at once: the engine must see two ranks in their CS.
struct everyone_enters {
  everyone_enters(std::int32_t, const std::vector<std::int32_t>&) {}
  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t, std::int32_t) const noexcept {}
  template <class E>
  void lock(E& e, std::int32_t i) {
    e.enter(i);
  }
  template <class E>
  void unlock(E&, std::int32_t) {}
  template <class E>
  void deliver(E&, const message&) {}
  template <class E>
  void finish(const E&) const {}
};

// Sends its request into the void: the run goes quiet with requests unserved.
struct never_grants {
  never_grants(std::int32_t, const std::vector<std::int32_t>&) {}
  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t, std::int32_t) const noexcept {}
  template <class E>
  void lock(E& e, std::int32_t i) {
    e.broadcast(i, msg_kind::request, 8, 0);
  }
  template <class E>
  void unlock(E&, std::int32_t) {}
  template <class E>
  void deliver(E&, const message&) {}
  template <class E>
  void finish(const E&) const {}
};

TEST(Engine, CatchesTwoNodesInTheCriticalSection) {
  scheduler<everyone_enters> e(net_a(), per_rank(3, 1, fixed(ns)));
  try {
    e.run();
    FAIL() << "no violation reported";
  } catch (const invariant_violation& v) {
    EXPECT_NE(std::string(v.what()).find("mutual exclusion violated"), std::string::npos) << v.what();
  }
}

TEST(Engine, CatchesARunThatGoesQuiet) {
  scheduler<never_grants> e(net_a(), per_rank(4, 1));
  EXPECT_THROW(e.run(), invariant_violation);
}

TEST(Engine, RejectsInconsistentWorkloads) {
  workload w = per_rank(4, 1);
  w.ranks = 1;
  w.active = {0};
  EXPECT_THROW(scheduler<central>(net_a(), w), tally::protocol::bad_argument);
  w = per_rank(4, 1);
  w.active = {2, 1};
  EXPECT_THROW(scheduler<central>(net_a(), w), tally::protocol::bad_argument);
  w = per_rank(4, 1);
  w.active = {0, 4};
  EXPECT_THROW(scheduler<central>(net_a(), w), tally::protocol::bad_argument);
  w = per_rank(4, 1);
  w.total_requests = 5;  // both budgets
  EXPECT_THROW(scheduler<central>(net_a(), w), tally::protocol::bad_argument);
}

// --- every request served once; exact messages per algorithm ---------------------

struct workload_case {
  const char* name;
  duration_dist cs, think;
};
const workload_case workloads[] = {
    {"saturated", fixed(2 * ns), fixed(0)},
    {"exp", expo(3 * ns), expo(20 * ns)},
    {"sparse", fixed(ns), expo(400 * ns)},
};
const std::int32_t sizes[] = {2, 3, 7, 64};

template <class Model>
raw_results run_case(std::int32_t n, const workload_case& c, std::uint64_t seed, std::uint64_t& local) {
  scheduler<Model> e(net_a(), per_rank(n, 25, c.cs, c.think, seed));
  raw_results r = e.run();
  EXPECT_EQ(r.entries, 25u * static_cast<std::uint64_t>(n));
  for (std::uint64_t k : r.entries_per_rank) EXPECT_EQ(k, 25u);
  EXPECT_EQ(r.waits.size(), r.entries);
  local = e.model().local_entries(r);
  return r;
}

TEST(SuzukiKasami, NMinusOneRequestsAndOneTokenPerRemoteEntry) {
  for (std::int32_t n : sizes)
    for (const auto& c : workloads)
      for (std::uint64_t seed : {1u, 2u}) {
        SCOPED_TRACE(std::string(c.name) + " n=" + std::to_string(n));
        std::uint64_t local = 0;
        const raw_results r = run_case<suzuki_kasami>(n, c, seed, local);
        const std::uint64_t remote = r.entries - local;
        const auto un = static_cast<std::uint64_t>(n);
        EXPECT_EQ(msgs(r, msg_kind::request), (un - 1) * remote);
        EXPECT_EQ(msgs(r, msg_kind::token), remote);
        EXPECT_LE(msgs(r, msg_kind::request) + msgs(r, msg_kind::token), un * r.entries);
        // Every token is 4n bytes: the queue's entries replace the LN they leave out.
        EXPECT_EQ(r.bytes[static_cast<std::size_t>(msg_kind::token)], remote * 4 * un);
      }
}

TEST(SuzukiKasami, SaturationMakesEveryEntryRemote) {
  // 64 ranks, each back in line the moment it leaves, with a CS (5 us) long enough
  // for REQUESTs to reach the holder: it always knows of a waiter when it exits, so
  // every entry but rank 0's first (with the token it starts with) costs n messages.
  scheduler<suzuki_kasami> e(net_a(), per_rank(64, 25, fixed(5000 * ns)));
  const raw_results r = e.run();
  EXPECT_EQ(e.model().local_entries(r), 1u);
  EXPECT_EQ(msgs(r, msg_kind::request) + msgs(r, msg_kind::token), 64u * (r.entries - 1));
}

TEST(RicartAgrawala, ExactlyTwoNMinusOnePerEntry) {
  for (std::int32_t n : sizes)
    for (const auto& c : workloads) {
      SCOPED_TRACE(std::string(c.name) + " n=" + std::to_string(n));
      std::uint64_t unused = 0;
      const raw_results r = run_case<ricart_agrawala>(n, c, 3, unused);
      const auto others = static_cast<std::uint64_t>(n - 1);
      EXPECT_EQ(msgs(r, msg_kind::request), others * r.entries);
      EXPECT_EQ(msgs(r, msg_kind::reply), others * r.entries);
    }
}

TEST(Central, ThreePerEntryOfANodeOtherThanTheServer) {
  for (std::int32_t n : sizes)
    for (const auto& c : workloads) {
      SCOPED_TRACE(std::string(c.name) + " n=" + std::to_string(n));
      std::uint64_t unused = 0;
      const raw_results r = run_case<central>(n, c, 4, unused);
      const std::uint64_t remote = r.entries - r.entries_per_rank[0];
      EXPECT_EQ(msgs(r, msg_kind::request), remote);
      EXPECT_EQ(msgs(r, msg_kind::grant), remote);
      EXPECT_EQ(msgs(r, msg_kind::release), remote);
    }
}

TEST(SuzukiKasami, RanksThatNeverRequestAreCountedNotInstantiated) {
  workload w = per_rank(50, 10, fixed(ns));
  w.active = {3, 17, 40};
  scheduler<suzuki_kasami> e(net_a(), w);
  const raw_results r = e.run();
  EXPECT_EQ(e.model().peers().size(), 4u);  // the three, and rank 0 with the token
  EXPECT_EQ(r.entries, 30u);
  EXPECT_EQ(r.entries_per_rank[0], 0u);
  const std::uint64_t tokens = msgs(r, msg_kind::token);
  EXPECT_GE(tokens, 3u);  // each of the three takes the token from elsewhere at least once
  EXPECT_EQ(e.model().local_entries(r) + tokens, 30u);
  EXPECT_EQ(msgs(r, msg_kind::request), 49u * tokens);  // REQUESTs to all 49 others
}

// --- the network model, to the picosecond ------------------------------------------

// A model that exercises the window alone: rank 1's lock broadcasts a REQUEST to
// every other rank and at once sends rank 2 a 1,000-byte token (send_ahead) or,
// with AsCast, a second multicast of one 8-byte REQUEST; rank 2 answers either with
// a GRANT. Other REQUESTs are ignored.
template <bool AsCast>
struct cast_and_token {
  static constexpr const char* name = "cast-and-token";
  static constexpr msg_kind kinds[] = {msg_kind::request, msg_kind::token, msg_kind::grant};
  cast_and_token(std::int32_t, const std::vector<std::int32_t>&) {}
  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t, std::int32_t) const noexcept {}
  std::uint64_t local_entries(const raw_results&) const noexcept { return 0; }
  template <class E>
  void lock(E& e, std::int32_t i) {
    e.broadcast(i, msg_kind::request, request_bytes, 0);
    if (AsCast)
      e.multicast(i, msg_kind::request, request_bytes, {2}, 1);
    else
      e.send_ahead(i, 2, msg_kind::token, 1000);
  }
  template <class E>
  void unlock(E&, std::int32_t) {}
  template <class E>
  void deliver(E& e, const message& m) {
    if (m.kind == msg_kind::token || (m.kind == msg_kind::request && m.val == 1)) e.send(m.to, 1, msg_kind::grant, 0);
    if (m.kind == msg_kind::grant) e.enter(m.to);
  }
  template <class E>
  void finish(const E&) const {}
};

// Rank 1's wait in cast_and_token<AsCast> at 41 ranks (a broadcast of 40 REQUESTs)
// under window W; `requests` gets the REQUEST count.
template <bool AsCast>
ps_t lone_wait(const network_params& base, std::uint64_t window, std::uint64_t& requests) {
  network_params p = base;
  p.window = window;
  workload w = per_rank(41, 1);
  w.active = {1};
  scheduler<cast_and_token<AsCast>> e(p, w);
  const raw_results r = e.run();
  requests = msgs(r, msg_kind::request);
  EXPECT_EQ(r.waits.size(), 1u);
  return r.waits.empty() ? -1 : r.waits[0];
}

TEST(NetworkModel, ATokenOvertakesTheRestOfItsSendersBroadcastAfterOneWindow) {
  // The token leaves after the first window of W, or after all 40 when W is 0 (no
  // windows) or covers them all.
  const network_params p = net_a();
  const ps_t slot = p.slot(request_bytes);
  for (std::uint64_t window : {16u, 4u, 0u, 64u}) {
    std::uint64_t requests = 0;
    const ps_t ahead = window == 0 ? 40 : static_cast<ps_t>(std::min<std::uint64_t>(window, 40));
    EXPECT_EQ(lone_wait<false>(p, window, requests), ahead * slot + p.transit(1000) + p.transit(0)) << "W=" << window;
    EXPECT_EQ(requests, 40u);
  }
}

TEST(NetworkModel, ANewBroadcastCutsInAheadOfTheRestOfTheLastOne) {
  // As above, the second message being a one-recipient multicast (a new broadcast).
  const network_params p = net_a();
  const ps_t slot = p.slot(request_bytes);
  for (std::uint64_t window : {16u, 0u}) {
    std::uint64_t requests = 0;
    const ps_t ahead = window == 0 ? 40 : 16;
    EXPECT_EQ(lone_wait<true>(p, window, requests), ahead * slot + p.transit(request_bytes) + p.transit(0))
        << "W=" << window;
    EXPECT_EQ(requests, 41u);
  }
}

TEST(NetworkModel, OneSuzukiKasamiRequestCrossesTheRotatingBroadcast) {
  // Rank k asks alone; rank 0 holds the token idle. The broadcast goes k+1, k+2, ...
  // so rank 0 is recipient p = n-1-k; it hands the token back at once.
  const network_params p = net_a();
  for (std::int32_t k : {1, 5, 9}) {
    workload w = per_rank(10, 1);
    w.active = {k};
    scheduler<suzuki_kasami> e(p, w);
    const raw_results r = e.run();
    const ps_t slot = std::max(p.gap, p.overhead + p.wire(request_bytes));
    const ps_t expect = (10 - 1 - k) * slot + p.transit(request_bytes) + p.transit(token_bytes(10));
    ASSERT_EQ(r.waits.size(), 1u);
    EXPECT_EQ(r.waits[0], expect) << "k=" << k;
  }
}

TEST(NetworkModel, RicartAgrawalaWaitsForTheLastReply) {
  // One requester: recipient p gets the REQUEST at p*slot + transit(8) and replies at
  // once; the replies come back one slot apart, the last from p = n-2.
  const network_params p = net_a();
  workload w = per_rank(8, 1);
  w.active = {0};
  scheduler<ricart_agrawala> e(p, w);
  const raw_results r = e.run();
  ASSERT_EQ(r.waits.size(), 1u);
  EXPECT_EQ(r.waits[0], p.transit(8) + p.transit(0) + 6 * p.slot(8));
}

// Every rank but 0 sends one message to rank 0 at t = 0; rank 0 records when it
// handles each, and grants the sender (so the engine sees every request served).
struct fan_in {
  std::vector<ps_t> handled;
  fan_in(std::int32_t, const std::vector<std::int32_t>&) {}
  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t, std::int32_t) const noexcept {}
  template <class E>
  void lock(E& e, std::int32_t i) {
    e.send(i, 0, msg_kind::request, 0);
  }
  template <class E>
  void unlock(E&, std::int32_t) {}
  template <class E>
  void deliver(E& e, const message& m) {
    if (m.kind == msg_kind::grant) return e.enter(m.to);
    handled.push_back(e.now());
    e.send(0, m.from, msg_kind::grant, 0);
  }
  template <class E>
  void finish(const E&) const {}
};

TEST(NetworkModel, AReceiverHandlesOneMessageAtATime) {
  const network_params p = net_a();
  workload w = per_rank(6, 1);
  w.active = {1, 2, 3, 4, 5};
  scheduler<fan_in> e(p, w);
  e.run();
  // All five arrive together; each costs the receiver o, in the order sent.
  const std::vector<ps_t>& h = e.model().handled;
  ASSERT_EQ(h.size(), 5u);
  for (std::size_t k = 0; k < h.size(); ++k) EXPECT_EQ(h[k], p.transit(0) + static_cast<ps_t>(k) * p.overhead) << k;
}

TEST(NetworkModel, SaturatedHandoffIsOneOrTwoMessageTimes) {
  // CS of 5 us: every waiter's request has reached whoever must know of it, so a
  // handoff is the token (SK), the exiting rank's REPLY (RA, sent to the next in
  // priority first), or RELEASE then GRANT (central, clients only).
  const network_params p = net_a();
  auto handoff = [&](const char* a, std::int32_t n, std::int32_t first) {
    run_config c;
    c.algorithm = a;
    c.net = p;
    c.load = per_rank(n, 20, fixed(5000 * ns));
    c.load.active.erase(c.load.active.begin(), c.load.active.begin() + first);
    const summary s = simulate(c);
    EXPECT_EQ(s.handoff_p50, s.handoff_p99) << a << " n=" << n;
    return s.handoff_p50;
  };
  for (std::int32_t n : {3, 5, 33}) {
    // Every token carries the n - 2 ranks still waiting behind its receiver, in 4n bytes.
    EXPECT_EQ(handoff("suzuki-kasami", n, 0), p.transit(4 * static_cast<std::uint64_t>(n))) << n;
    EXPECT_EQ(handoff("ricart-agrawala", n, 0), p.transit(0)) << n;
    EXPECT_EQ(handoff("central", n, 1), 2 * p.transit(0)) << n;
  }
}

TEST(NetworkModel, ATokenCostsEachEndItsEntriesCpu) {
  // As above, with e per LN entry at both ends of the token's trip (encoding,
  // decoding) and s per entry for the release's scan before it: every saturated
  // handoff follows a release, 2en + sn more; Ricart-Agrawala's have no token.
  network_params p = net_a();
  p.entry_time = 7 * ns;
  p.scan_time = 3 * ns;
  for (std::int32_t n : {3, 33}) {
    run_config c;
    c.net = p;
    c.load = per_rank(n, 20, fixed(5000 * ns));
    c.algorithm = "suzuki-kasami";
    const summary s = simulate(c);
    EXPECT_EQ(s.handoff_p50, s.handoff_p99) << n;
    EXPECT_EQ(s.handoff_p50, p.transit(4 * static_cast<std::uint64_t>(n)) + n * (2 * p.entry_time + p.scan_time)) << n;
    c.algorithm = "ricart-agrawala";
    EXPECT_EQ(simulate(c).handoff_p50, p.transit(0)) << n;
  }
  // An idle holder hands the token off on a REQUEST without a release: no scan.
  workload w = per_rank(10, 1);
  w.active = {9};
  scheduler<suzuki_kasami> e(p, w);
  const raw_results r = e.run();
  ASSERT_EQ(r.waits.size(), 1u);
  EXPECT_EQ(r.waits[0], p.transit(request_bytes) + p.transit(token_bytes(10)) + 2 * 10 * p.entry_time);
}

// --- two-level: the cohort core across simulated nodes ---------------------------------

struct shape_case {
  std::int32_t nodes, per_node;
  std::uint32_t bound;
};
const shape_case shapes[] = {{1, 4, 1}, {2, 1, 1}, {3, 2, 1}, {4, 3, 2}, {5, 4, 16}, {8, 8, 3}};

run_config two_level_config(const shape_case& sc, workload w) {
  run_config c;
  c.algorithm = "two-level";
  c.net = net_a();
  c.intra = net_a();
  c.intra.latency = 50 * ns;  // distinct from the network's, to tell them apart
  c.ranks_per_node = sc.per_node;
  c.pass_bound = sc.bound;
  c.local_grant = 30 * ns;
  c.load = std::move(w);
  return c;
}

TEST(TwoLevel, KMinusOneRequestsPerNodeRequestAndNoMessageInsideANode) {
  std::uint64_t deltas_at_8 = 0;
  for (const shape_case& sc : shapes)
    for (const auto& wc : workloads)
      for (std::uint64_t seed : {1u, 2u}) {
        const std::int32_t n = sc.nodes * sc.per_node;
        SCOPED_TRACE(std::string(wc.name) + " " + std::to_string(sc.nodes) + "x" + std::to_string(sc.per_node) +
                     " B=" + std::to_string(sc.bound));
        const run_config c = two_level_config(sc, per_rank(n, 25, wc.cs, wc.think, seed));
        scheduler<two_level> e(c.net, c.load, c);
        e.split_nodes(c.ranks_per_node, c.intra);
        const raw_results r = e.run();  // the model's own end checks run here too
        EXPECT_EQ(r.entries, 25u * static_cast<std::uint64_t>(n));
        const auto k = static_cast<std::uint64_t>(sc.nodes);
        const std::uint64_t requests = msgs(r, msg_kind::request), tokens = msgs(r, msg_kind::token);
        if (k == 1) {
          EXPECT_EQ(requests + tokens, 0u);  // one node: shared memory only
        } else {
          EXPECT_EQ(requests % (k - 1), 0u);
          EXPECT_LE(tokens, requests / (k - 1));  // at most one token per node request
          EXPECT_GT(tokens, 0u);
        }
        EXPECT_EQ(r.bytes[static_cast<std::size_t>(msg_kind::request)], requests * tally::protocol::node_request_bytes);
        // Each token the full body or a delta no longer (never below K = 5: a delta's
        // overhead, 20 bytes, outweighs K entries).
        using tally::protocol::node_token;
        const std::uint64_t deltas = e.model().delta_tokens(), delta_bytes = e.model().delta_bytes();
        EXPECT_EQ(r.bytes[static_cast<std::size_t>(msg_kind::token)],
                  (tokens - deltas) * node_token::full_bytes(k) + delta_bytes);
        if (k < 5) {
          EXPECT_EQ(deltas, 0u);
        }
        EXPECT_LE(delta_bytes, deltas * node_token::full_bytes(k));  // none longer
        EXPECT_GE(delta_bytes, deltas * node_token::delta_bytes(0, 1));
        if (k == 8) deltas_at_8 += deltas;
        // Entries without a token message: re-entries and local grants.
        EXPECT_EQ(e.model().local_entries(r) + tokens, r.entries);
      }
  EXPECT_GT(deltas_at_8, 0u);  // 8 nodes: a receiver's copy often lacks one entry only
}

// Runs the two-level model on c; `kinds` gets the distinct handoff times, ascending.
raw_results run_two_level(const run_config& c, std::vector<ps_t>* kinds = nullptr) {
  scheduler<two_level> e(c.net, c.load, c);
  e.split_nodes(c.ranks_per_node, c.intra);
  raw_results r = e.run();
  if (kinds) {
    kinds->assign(r.handoffs.begin(), r.handoffs.end());
    std::sort(kinds->begin(), kinds->end());
    kinds->erase(std::unique(kinds->begin(), kinds->end()), kinds->end());
  }
  return r;
}

TEST(TwoLevel, SaturatedHandoffIsALocalGrantOrOneToken) {
  // CS of 5 us: every node always has waiters and every REQUEST has arrived. A
  // handoff is a local grant (30 ns) or the token between nodes; each node passes
  // locally exactly B times between tokens once all are queued.
  for (std::uint32_t bound : {1u, 2u, 5u}) {
    const shape_case sc{4, 3, bound};
    const run_config c = two_level_config(sc, per_rank(12, 30, fixed(5000 * ns)));
    const summary s = simulate(c);
    std::vector<ps_t> kinds;
    const raw_results r = run_two_level(c, &kinds);
    // The token, 92 bytes whatever its queue (its 16 entries and the trail), or a
    // local grant: nothing else.
    const std::vector<ps_t> allowed{30 * ns, net_a().transit(tally::protocol::node_token::full_bytes(4))};
    EXPECT_EQ(kinds, allowed) << "B=" << bound;
    const std::uint64_t tokens = msgs(r, msg_kind::token);
    const auto grants = static_cast<std::uint64_t>(std::count(r.handoffs.begin(), r.handoffs.end(), 30 * ns));
    EXPECT_LE(grants, bound * (tokens + 1)) << "B=" << bound;  // the pass bound
    EXPECT_GE(grants, bound * (tokens - 4)) << "B=" << bound;  // ... and used in full
    EXPECT_EQ(s.entries, r.entries);
  }
}

TEST(TwoLevel, ATokenBetweenNodesCostsItsNodeEntriesCpu) {
  // As above with the node token's e per word and s per LN entry (the flat token's,
  // set too, do not apply): the token, of K = 4 entries (23 words with the trail)
  // and always sent by a release, takes 2e x 23 + sK longer; a local grant is no
  // token and costs the same.
  run_config c = two_level_config(shape_case{4, 3, 2}, per_rank(12, 30, fixed(5000 * ns)));
  c.net.node_entry_time = 7 * ns;
  c.net.node_scan_time = 3 * ns;
  c.net.entry_time = 100 * ns;
  c.net.scan_time = 100 * ns;
  std::vector<ps_t> kinds;
  run_two_level(c, &kinds);
  const auto words = static_cast<ps_t>(tally::protocol::node_token::full_bytes(4) / 4);
  const std::vector<ps_t> allowed{30 * ns, net_a().transit(words * 4) + (2 * 7 * words + 3 * 4) * ns};
  EXPECT_EQ(kinds, allowed);
  // A node's idle holder hands the token off on the REQUEST without a release: no
  // scan. Node 1's first rank asks once; node 0, the initial owner, is first in its
  // broadcast order.
  run_config one = two_level_config(shape_case{4, 3, 2}, per_rank(12, 1));
  one.load.active = {3};
  one.net.node_entry_time = 7 * ns;
  one.net.node_scan_time = 3 * ns;
  const raw_results r1 = run_two_level(one);
  ASSERT_EQ(r1.waits.size(), 1u);
  EXPECT_EQ(r1.waits[0],
            net_a().transit(tally::protocol::node_request_bytes) + net_a().transit(words * 4) + 2 * words * 7 * ns);
}

TEST(TwoLevel, WaitGrowsWithThePassBound) {
  // Saturated 8 x 8: a request waits behind at most B local entries per node ahead
  // of it, so the longest wait grows with B; B = 1 is the fairest.
  ps_t last = 0;
  for (std::uint32_t bound : {1u, 4u, 16u}) {
    const summary s = simulate(two_level_config({8, 8, bound}, per_rank(64, 20, fixed(1000 * ns))));
    EXPECT_GT(s.wait_max, last) << "B=" << bound;
    last = s.wait_max;
  }
}

TEST(NetworkModel, MessagesInsideANodeCostTheIntraParameters) {
  // Central server on rank 0, nodes of 2: client 1 shares the server's node, clients
  // 2 and 3 do not. Saturated handoffs: RELEASE + GRANT within node 0 (1 -> 0 -> 1)
  // or across (2 or 3 -> 0 -> next).
  run_config c;
  c.algorithm = "central";
  c.net = net_a();
  c.intra = net_a();
  c.intra.latency = 50 * ns;
  c.ranks_per_node = 2;
  c.load = per_rank(4, 20, fixed(5000 * ns));
  c.load.active = {1, 2, 3};
  scheduler<central> e(c.net, c.load);
  e.split_nodes(2, c.intra);
  EXPECT_EQ(&e.link(0, 1), &e.link(1, 0));
  EXPECT_EQ(e.link(0, 1).latency, 50 * ns);
  EXPECT_EQ(e.link(1, 2).latency, 500 * ns);
  const raw_results r = e.run();
  for (ps_t h : r.handoffs) {
    // One of the two messages may be inside node 0 (to or from rank 1), or neither.
    EXPECT_TRUE(h == 2 * net_a().transit(0) || h == net_a().transit(0) + c.intra.transit(0)) << h;
  }
  EXPECT_THROW(e.split_nodes(3, c.intra), tally::protocol::bad_argument);
}

TEST(NetworkModel, RendezvousAboveTheEagerLimit) {
  network_params p = net_a();
  p.eager_limit = 100;
  p.rendezvous = 2000 * ns;
  EXPECT_EQ(p.transit(100), net_a().transit(100));
  EXPECT_EQ(p.transit(101), net_a().transit(101) + 2000 * ns);
  EXPECT_EQ(p.slot(101), net_a().slot(101));  // the sender's port is not held
}

// --- summary statistics -------------------------------------------------------------

TEST(Summary, NearestRankPercentile) {
  std::vector<ps_t> v{50, 10, 40, 20, 30};
  EXPECT_EQ(percentile(v, 50), 30);
  EXPECT_EQ(percentile(v, 99), 50);
  EXPECT_EQ(percentile(v, 20), 10);
  EXPECT_EQ(percentile(v, 21), 20);
  std::vector<ps_t> none;
  EXPECT_EQ(percentile(none, 50), 0);
}

TEST(Summary, BypassCountsLaterRequestsServedFirst) {
  // Issue times in entry order. Entry 3 (issued at 1) was overtaken by the three
  // entries issued at 2, 3 and 4; equal issue times do not overtake.
  EXPECT_EQ(max_bypass({2, 3, 4, 1}), 3u);
  EXPECT_EQ(max_bypass({1, 2, 3, 4}), 0u);
  EXPECT_EQ(max_bypass({5, 5, 5}), 0u);
  EXPECT_EQ(max_bypass({4, 1, 3, 2}), 2u);
  EXPECT_EQ(max_bypass({}), 0u);
}

TEST(Summary, JainIndex) {
  EXPECT_DOUBLE_EQ(jain({3, 3, 3}), 1.0);
  EXPECT_DOUBLE_EQ(jain({1, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jain({1, 2}), 9.0 / 10.0);
  EXPECT_DOUBLE_EQ(jain({0, 0}), 1.0);
}

TEST(Summary, RicartAgrawalaServesInTimestampOrderSuzukiKasamiMayNot) {
  // The holder appends fresh requests in id order, so a low id asking later can
  // overtake a high id that asked earlier; Lamport timestamps forbid most of that.
  run_config c;
  c.net = net_a();
  c.load = per_rank(16, 30, fixed(3 * 1000 * ns), expo(20 * 1000 * ns), 7);
  c.algorithm = "suzuki-kasami";
  const summary sk = simulate(c);
  EXPECT_GT(sk.max_bypass, 0u);
  EXPECT_LT(sk.max_bypass, 2u * 16u);  // FIFO after insertion: bounded by about 2n
}

// --- the command line ------------------------------------------------------------------

int run_args(std::vector<std::string_view> args, std::string& out, std::string& err) {
  std::ostringstream o, e;
  const int rc = run_command(args, o, e, false);
  out = o.str();
  err = e.str();
  return rc;
}

TEST(RunCommand, SameArgumentsGiveTheSameBytes) {
  for (const char* algo : {"suzuki-kasami", "ricart-agrawala", "central"}) {
    std::vector<std::string_view> args{"--ranks", "64",        "--algorithm", algo,           "--requests-per-rank",
                                       "20",      "--cs-time", "exp:1us",     "--think-time", "exp:5us",
                                       "--seed",  "42",        "--json"};
    std::string a, b, err;
    ASSERT_EQ(run_args(args, a, err), 0) << err;
    ASSERT_EQ(run_args(args, b, err), 0) << err;
    EXPECT_EQ(a, b) << algo;
    EXPECT_NE(a.find("\"entries\": 1280,"), std::string::npos) << a;
    args[11] = "43";
    std::string c;
    ASSERT_EQ(run_args(args, c, err), 0) << err;
    EXPECT_NE(a, c) << algo << ": the seed changed nothing";
  }
}

TEST(RunCommand, OldSpellingsStillWorkWithANote) {
  std::string now, old, err_now, err_old;
  ASSERT_EQ(run_args({"--ranks", "6", "--requests-per-rank", "4", "--json"}, now, err_now), 0);
  ASSERT_EQ(run_args({"--nodes", "6", "--requests-per-node", "4", "--json"}, old, err_old), 0);
  EXPECT_EQ(now, old);
  EXPECT_EQ(err_now.find("deprecated"), std::string::npos) << err_now;
  EXPECT_NE(err_old.find("--nodes is deprecated; it is now --ranks"), std::string::npos) << err_old;
  EXPECT_NE(err_old.find("--requests-per-node is deprecated"), std::string::npos) << err_old;
}

TEST(RunCommand, WallClockFiguresGoToStandardError) {
  std::string out, err;
  ASSERT_EQ(run_args({"--ranks", "4", "--requests-per-rank", "3", "--no-progress"}, out, err), 0);
  EXPECT_NE(out.find("throughput"), std::string::npos) << out;
  EXPECT_EQ(out.find("wall"), std::string::npos) << out;
  EXPECT_NE(err.find("events/s"), std::string::npos) << err;
}

TEST(RunCommand, UsageErrorsExitTwoAndSayWhy) {
  const std::vector<std::pair<std::vector<std::string_view>, const char*>> cases{
      {{}, "--ranks is required"},
      {{"--ranks", "1"}, "--ranks: expected an integer in [2, 16777216], got '1'"},
      {{"--ranks", "12x"}, "--ranks: expected an integer"},
      {{"--ranks"}, "--ranks: missing value"},
      {{"--ranks", "8", "--algorithm", "paxos"},
       "--algorithm: expected one of suzuki-kasami, two-level, ricart-agrawala, central"},
      {{"--ranks", "8", "--algorithm", "two-level"}, "two-level needs --ranks-per-node"},
      {{"--ranks", "8", "--ranks-per-node", "3"}, "--ranks-per-node 3 does not divide --ranks 8"},
      {{"--ranks", "8", "--pass-bound", "2"}, "apply to --algorithm two-level only"},
      {{"--ranks", "8", "--algorithm", "two-level", "--ranks-per-node", "2", "--pass-bound", "0"},
       "--pass-bound: expected an integer in [1, "},
      {{"--ranks", "8", "--cs-time", "5"}, "--cs-time: expected a duration"},
      {{"--ranks", "8", "--cs-time", "-1us"}, "--cs-time: expected a duration"},
      {{"--ranks", "8", "--think-time", "uniform:2us:1us"}, "needs LO <= HI"},
      {{"--ranks", "8", "--think-time", "exp:"}, "--think-time: expected a duration"},
      {{"--ranks", "8", "--active", "9"}, "--active: 9 exceeds --ranks 8"},
      {{"--ranks", "8", "--network", "infiniband"}, "--network: expected shm"},
      {{"--ranks", "8", "--requests-per-rank", "2", "--total-requests", "9"}, "exclude each other"},
      {{"--ranks", "8", "--json=yes"}, "--json: takes no value"},
      {{"--ranks", "8", "--frobnicate"}, "unknown option '--frobnicate'"},
  };
  for (const auto& [args, text] : cases) {
    std::string out, err;
    EXPECT_EQ(run_args(args, out, err), 2) << text;
    EXPECT_NE(err.find(text), std::string::npos) << err;
    EXPECT_TRUE(out.empty()) << out;
  }
}

TEST(RunCommand, HelpExitsZero) {
  std::string out, err;
  EXPECT_EQ(run_args({"--help"}, out, err), 0);
  EXPECT_NE(out.find("usage: tally-sim run --ranks N"), std::string::npos);
}

TEST(RunCommand, DurationsRoundTrip) {
  EXPECT_EQ(duration_text(0), "0");
  EXPECT_EQ(duration_text(500), "0.5ns");
  EXPECT_EQ(duration_text(250'000), "250ns");
  EXPECT_EQ(duration_text(1'500'000), "1.5us");
  EXPECT_EQ(duration_text(2'000'000'000), "2ms");
  EXPECT_EQ(duration_text(3'000'000'000'001), "3.000000000001s");
}

}  // namespace
