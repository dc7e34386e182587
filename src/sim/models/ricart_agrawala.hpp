// sim/models/ricart_agrawala.hpp — Ricart–Agrawala in tally-sim, a baseline.
//
// Every rank is a protocol::ricart_agrawala (core/ricart_agrawala.hpp), the same
// state machine the benchmark's MPI lock drives; this model only carries its
// messages: n-1 REQUESTs (8 bytes, the stamp) and n-1 REPLYs (0 bytes) per entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ricart_agrawala.hpp"
#include "sim/des.hpp"

namespace tally::sim {

class ricart_agrawala {
 public:
  static constexpr const char* name = "ricart-agrawala";
  static constexpr msg_kind kinds[] = {msg_kind::request, msg_kind::reply};

  ricart_agrawala(std::int32_t n, const std::vector<std::int32_t>&) {
    peers_.reserve(static_cast<std::size_t>(n));
    for (std::int32_t i = 0; i < n; ++i) peers_.emplace_back(i, n);
  }

  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t to, std::int32_t) const noexcept { sim::prefetch(&peers_[static_cast<std::size_t>(to)]); }
  std::uint64_t local_entries(const raw_results&) const noexcept { return 0; }

  template <class E>
  void lock(E& e, std::int32_t i) {
    protocol::ricart_agrawala& p = at(i);
    const std::uint64_t stamp = p.lock();
    if (p.in_cs()) return e.enter(i);
    e.broadcast(i, msg_kind::request, 8, stamp);
  }

  template <class E>
  void unlock(E& e, std::int32_t i) {
    std::vector<std::int32_t> to = e.borrow_list();
    at(i).unlock(to);
    e.multicast(i, msg_kind::reply, 0, std::move(to));
  }

  template <class E>
  void deliver(E& e, const message& m) {
    protocol::ricart_agrawala& p = at(m.to);
    if (m.kind == msg_kind::request) {
      if (p.on_request(m.from, m.val)) e.send(m.to, m.from, msg_kind::reply, 0);
      return;
    }
    if (!p.expecting_reply())
      throw invariant_violation("ricart-agrawala: unexpected REPLY at rank " + std::to_string(m.to));
    if (p.on_reply()) e.enter(m.to);
  }

  template <class E>
  void finish(const E& e) const {
    for (std::size_t i = 0; i < peers_.size(); ++i)
      if (!peers_[i].idle())
        throw invariant_violation("ricart-agrawala: rank " + std::to_string(i) + " is not idle at the end");
    if (e.sent(msg_kind::request) != e.sent(msg_kind::reply))
      throw invariant_violation("ricart-agrawala: " + std::to_string(e.sent(msg_kind::request)) + " REQUESTs but " +
                                std::to_string(e.sent(msg_kind::reply)) + " REPLYs");
  }

 private:
  protocol::ricart_agrawala& at(std::int32_t i) { return peers_[static_cast<std::size_t>(i)]; }

  std::vector<protocol::ricart_agrawala> peers_;
};

}  // namespace tally::sim
