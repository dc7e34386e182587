// core/ricart_agrawala.hpp — Ricart & Agrawala, "An optimal algorithm for mutual
// exclusion in computer networks", CACM 24(1), 1981, as a pure state machine.
//
// A baseline, not part of libtally: the simulator's model (sim/models/) and the
// benchmark's MPI lock (bench/baselines/ricart_agrawala.cpp) both carry this one
// definition. A requester stamps its request with ts = ++clock and sends it to
// every other peer; it enters once all n-1 have replied. A peer that receives
// REQUEST(ts_j) from j sets clock = max(clock, ts_j) and replies at once unless it
// is in the critical section or requesting with priority (ts, self) < (ts_j, j);
// then it defers the reply to its exit, where it replies in priority order (the
// next entrant's reply leaves first). Exactly 2(n-1) messages per entry, n-1
// REQUESTs carrying the stamp and n-1 empty REPLYs; no state stays with the last
// holder, so a re-entry costs the same. Header-only; no MPI, threads or clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace tally::protocol {

class ricart_agrawala {
 public:
  ricart_agrawala(std::int32_t self, std::int32_t n) : self_(self), n_(n) {}

  // Wants the critical section (must be idle). Returns the stamp to send to every
  // other peer; with no other peer it enters at once (in_cs() is then true).
  std::uint64_t lock() {
    stamp_ = ++clock_;
    need_ = n_ - 1;
    requesting_ = need_ > 0;
    in_cs_ = !requesting_;
    return stamp_;
  }
  // REQUEST(stamp) from peer `from`: true to reply now, false if deferred to unlock().
  bool on_request(std::int32_t from, std::uint64_t stamp) {
    clock_ = std::max(clock_, stamp);
    const bool mine_first = requesting_ && std::pair(stamp_, self_) < std::pair(stamp, from);
    if (!in_cs_ && !mine_first) return true;
    deferred_.emplace_back(stamp, from);
    return false;
  }
  // A REPLY arrived. Returns true iff it was the last one missing: enter now. False
  // as well for a REPLY nobody waits for (check expecting_reply() first).
  bool on_reply() {
    if (!expecting_reply()) return false;
    if (--need_ > 0) return false;
    requesting_ = false;
    in_cs_ = true;
    return true;
  }
  // Leaves the critical section (must be in it). Appends the peers owed a REPLY to
  // `to`, highest priority first.
  void unlock(std::vector<std::int32_t>& to) {
    in_cs_ = false;
    std::sort(deferred_.begin(), deferred_.end());
    for (const auto& d : deferred_) to.push_back(d.second);
    deferred_.clear();
  }

  bool expecting_reply() const noexcept { return requesting_ && need_ > 0; }
  bool requesting() const noexcept { return requesting_; }
  bool in_cs() const noexcept { return in_cs_; }
  bool idle() const noexcept { return !requesting_ && !in_cs_ && deferred_.empty(); }

 private:
  std::int32_t self_;
  std::int32_t n_;
  std::uint64_t clock_ = 0;  // Lamport clock
  std::uint64_t stamp_ = 0;  // stamp of the outstanding request
  std::int32_t need_ = 0;    // replies still missing
  bool requesting_ = false;
  bool in_cs_ = false;
  std::vector<std::pair<std::uint64_t, std::int32_t>> deferred_;  // (stamp, peer)
};

}  // namespace tally::protocol
