// sim/models/central.hpp — a central lock server, a baseline.
//
// Rank 0 is the server and also a client. A client i != 0 sends REQUEST to rank 0,
// enters on GRANT, and sends RELEASE when it leaves. The server grants in FIFO order
// of the REQUESTs it has handled. Rank 0's own lock and unlock are local calls into
// the server (no message). So a CS by rank i != 0 costs exactly 3 messages (REQUEST,
// GRANT, RELEASE; 0 bytes each) and one by rank 0 costs none: its GRANTs to others
// are counted with their entries.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/des.hpp"

namespace tally::sim {

class central {
 public:
  static constexpr const char* name = "central";
  static constexpr msg_kind kinds[] = {msg_kind::request, msg_kind::grant, msg_kind::release};

  central(std::int32_t, const std::vector<std::int32_t>&) {}

  bool sink(std::int32_t) const noexcept { return false; }
  void prefetch(std::int32_t, std::int32_t) const noexcept {}
  // Rank 0's entries: its lock and unlock are local calls into the server.
  std::uint64_t local_entries(const raw_results& r) const noexcept {
    return r.entries_per_rank.empty() ? 0 : r.entries_per_rank[0];
  }

  template <class E>
  void lock(E& e, std::int32_t i) {
    if (i == 0) return on_request(e, 0);
    e.send(i, 0, msg_kind::request, 0);
  }

  template <class E>
  void unlock(E& e, std::int32_t i) {
    if (i == 0) return on_release(e, 0);
    e.send(i, 0, msg_kind::release, 0);
  }

  template <class E>
  void deliver(E& e, const message& m) {
    switch (m.kind) {
      case msg_kind::request: return on_request(e, m.from);
      case msg_kind::release: return on_release(e, m.from);
      case msg_kind::grant: return e.enter(m.to);
      default: throw invariant_violation(std::string("central: unexpected ") + to_string(m.kind));
    }
  }

  template <class E>
  void finish(const E& e) const {
    if (holder_ >= 0 || !waiting_.empty()) throw invariant_violation("central: the server is not idle at the end");
    if (e.sent(msg_kind::request) != e.sent(msg_kind::grant) || e.sent(msg_kind::grant) != e.sent(msg_kind::release))
      throw invariant_violation("central: REQUEST/GRANT/RELEASE counts differ");
  }

 private:
  template <class E>
  void on_request(E& e, std::int32_t j) {
    if (holder_ < 0)
      grant(e, j);
    else
      waiting_.push_back(j);
  }
  template <class E>
  void on_release(E& e, std::int32_t j) {
    if (holder_ != j)
      throw invariant_violation("central: RELEASE from rank " + std::to_string(j) + ", which does not hold the lock");
    holder_ = -1;
    if (waiting_.empty()) return;
    const std::int32_t next = waiting_.front();
    waiting_.pop_front();
    grant(e, next);
  }
  template <class E>
  void grant(E& e, std::int32_t j) {
    holder_ = j;
    if (j == 0)
      e.enter(0);
    else
      e.send(0, j, msg_kind::grant, 0);
  }

  std::int32_t holder_ = -1;  // granted rank (its GRANT may be in flight), or -1
  std::deque<std::int32_t> waiting_;
};

}  // namespace tally::sim
