// sim/algorithms/ricart_agrawala.hpp — Ricart–Agrawala (CACM 1981), a baseline.
//
// A requester takes timestamp ts = ++clock and sends REQUEST(ts) to every other node;
// it enters once all n-1 have replied. A node that receives REQUEST(ts_j) from j sets
// clock = max(clock, ts_j) and replies at once unless it is in its CS or requesting
// with priority (ts, id) < (ts_j, j); then it defers the reply to its exit. At exit
// it replies to the deferred nodes in priority order, so the next entrant's reply
// leaves first. Exactly 2(n-1) messages per CS: n-1 REQUESTs (8 bytes, the
// timestamp) and n-1 REPLYs (0 bytes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/des.hpp"

namespace tally::sim {

class ricart_agrawala {
 public:
  static constexpr const char* name = "ricart-agrawala";

  ricart_agrawala(std::int32_t n, const std::vector<std::int32_t>&)
      : n_(n), st_(static_cast<std::size_t>(n)) {}

  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t to, std::int32_t) const noexcept {
    sim::prefetch(&st_[static_cast<std::size_t>(to)]);
  }

  template <class E>
  void lock(E& e, std::int32_t i) {
    state& s = st_[static_cast<std::size_t>(i)];
    s.ts = ++s.clock;
    s.requesting = true;
    s.need = n_ - 1;
    if (s.need == 0) return enter(e, i, s);
    e.broadcast(i, msg_kind::request, 8, s.ts);
  }

  template <class E>
  void unlock(E& e, std::int32_t i) {
    state& s = st_[static_cast<std::size_t>(i)];
    s.in_cs = false;
    std::sort(s.deferred.begin(), s.deferred.end());
    std::vector<std::int32_t> to = e.borrow_list();
    for (const auto& d : s.deferred) to.push_back(d.second);
    s.deferred.clear();
    e.multicast(i, msg_kind::reply, 0, std::move(to));
  }

  template <class E>
  void deliver(E& e, const message& m) {
    state& s = st_[static_cast<std::size_t>(m.to)];
    if (m.kind == msg_kind::request) {
      s.clock = std::max(s.clock, m.val);
      const bool mine_first =
          s.requesting && std::pair(s.ts, m.to) < std::pair(m.val, m.from);
      if (s.in_cs || mine_first)
        s.deferred.emplace_back(m.val, m.from);
      else
        e.send(m.to, m.from, msg_kind::reply, 0);
      return;
    }
    if (!s.requesting || s.need <= 0)
      throw invariant_violation("tally-sim (ricart-agrawala): unexpected REPLY at node " +
                                std::to_string(m.to));
    if (--s.need == 0) enter(e, m.to, s);
  }

  template <class E>
  void finish(const E& e) const {
    for (std::size_t i = 0; i < st_.size(); ++i)
      if (st_[i].requesting || st_[i].in_cs || !st_[i].deferred.empty())
        throw invariant_violation("tally-sim (ricart-agrawala): node " + std::to_string(i) +
                                  " is not idle at the end");
    if (e.sent(msg_kind::request) != e.sent(msg_kind::reply))
      throw invariant_violation("tally-sim (ricart-agrawala): " +
                                std::to_string(e.sent(msg_kind::request)) + " REQUESTs but " +
                                std::to_string(e.sent(msg_kind::reply)) + " REPLYs");
  }

 private:
  struct state {
    std::uint64_t clock = 0;
    std::uint64_t ts = 0;  // timestamp of the outstanding request
    std::int32_t need = 0;  // replies still missing
    bool requesting = false;
    bool in_cs = false;
    std::vector<std::pair<std::uint64_t, std::int32_t>> deferred;  // (ts, id)
  };

  template <class E>
  void enter(E& e, std::int32_t i, state& s) {
    s.requesting = false;
    s.in_cs = true;
    e.enter(i);
  }

  std::int32_t n_;
  std::vector<state> st_;
};

}  // namespace tally::sim
