// runtime/agreement.hpp — what the ranks of a communicator agree on at a mutex's
// creation, in one nonblocking MPI_MAX allreduce.
//
// Each field goes in twice, as v and -v, so that the reduction gives its largest
// value (hi) and minus its smallest (lo): a field is the same on every rank iff
// lo == hi. The fields, and what creation does with them: lifecycle.cpp.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <utility>

#include "runtime/handles.hpp"

namespace tally::detail {

class agreement {
 public:
  enum field : std::size_t {
    refusal,      // this rank's error code, 0 if its arguments are fine
    payload,      // options::payload_bytes (capped just above the limit)
    owner,        // options::initial_owner
    topology,     // the resolved options::topology
    pass_bound,   // options::pass_bound
    traced,       // 1 where this rank traces the mutex
    proposed_id,  // the lowest free id this rank proposes on the channel
    fields
  };

  void set(field f, long long v) noexcept {
    mine_[2 * f] = v;
    mine_[2 * f + 1] = -v;
  }
  // Reduces over comm; wait(request, what) completes the request.
  template <class Wait>
  void reduce(MPI_Comm comm, Wait&& wait) {
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(mine_.data(), agreed_.data(), static_cast<int>(mine_.size()), MPI_LONG_LONG, MPI_MAX, comm,
                             &req),
              "MPI_Iallreduce(options)");
    wait(req, "MPI_Iallreduce(options)");
  }
  long long hi(field f) const noexcept { return agreed_[2 * f]; }
  long long lo(field f) const noexcept { return -agreed_[2 * f + 1]; }
  bool same(field f) const noexcept { return lo(f) == hi(f); }

 private:
  std::array<long long, 2 * fields> mine_{};
  std::array<long long, 2 * fields> agreed_{};
};

// The id of a new mutex on a channel, from the proposals' range [lo, hi] after the
// agreement above. Ranks propose different ids only while a free() on the same
// communicator is still ending on some rank (on another thread). Then each rank
// proposes its lowest free id from the largest proposal on, until all agree; the
// id agreed is free on every rank. `lowest_free(from)`: this rank's lowest free id
// >= from; `reduce(v)`: the {largest, smallest} of v over the ranks (a collective).
// Each round raises hi or ends, so it ends once hi passes every id taken anywhere.
template <class LowestFree, class Reduce>
long long agree_on_id(long long hi, long long lo, LowestFree&& lowest_free, Reduce&& reduce) {
  while (lo != hi) {
    const std::pair<long long, long long> r = reduce(static_cast<long long>(lowest_free(hi)));
    hi = r.first;
    lo = r.second;
  }
  return hi;
}

}  // namespace tally::detail
