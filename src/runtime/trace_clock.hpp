// runtime/trace_clock.hpp — the timeline's time base (docs/design.md, "Timeline").
//
// Contract. Every rank stamps its trace events with CLOCK_MONOTONIC (steady_clock)
// in nanoseconds. Ranks whose kernels share that clock (the same boot and time
// namespace: one host, or emulated nodes on it) form one clock domain and need no
// estimate. Where a domain differs from the communicator's rank 0, its lowest rank
// measures the offset to rank 0 by ping-pong (the round trip with the least delay)
// and the others of the domain take it over. The engine takes one sample at
// creation and one at free; the merger (tools/tally-trace) corrects linearly
// between the two. Nothing here runs unless every rank traces.
//
// TALLY_TRACE_SKEW=FIRST[-LAST]:NS[:PPM], a test aid, adds NS nanoseconds plus PPM
// parts per million of the monotonic reading (time since boot: one host's ranks
// drift alike) to the trace clocks of ranks FIRST to LAST (one emulated host, say)
// and puts them in a clock domain of their own, so tests can prove that the
// estimate removes a known offset and drift. It touches nothing but the trace's
// timestamps.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>

namespace tally::detail {

class trace_clock {
 public:
  trace_clock() = default;  // unskewed; domain_key() not set
  // The clock of `rank`, skewed where TALLY_TRACE_SKEW names it (a malformed value is
  // reported on stderr and ignored).
  explicit trace_clock(int rank);
  // Nanoseconds of CLOCK_MONOTONIC, skewed as above.
  std::int64_t now() const noexcept;
  // Ranks with the same key read the same clock.
  std::uint64_t domain_key() const noexcept { return key_; }
  bool skewed() const noexcept { return skew_ns_ != 0 || skew_ppm_ != 0; }
  std::int64_t skew_ns() const noexcept { return skew_ns_; }
  double skew_ppm() const noexcept { return skew_ppm_; }

 private:
  std::int64_t skew_ns_ = 0;
  double skew_ppm_ = 0;
  std::uint64_t key_ = 0;
};

// One offset estimate: rank 0's clock reads local + offset, to within rtt / 2.
struct clock_sample {
  std::int64_t at = 0;      // local time of the estimate (the round trip's midpoint)
  std::int64_t offset = 0;  // ns to add to a local time
  std::int64_t rtt = 0;     // the round trip it came from; 0: rank 0's clock domain
};

using clock_waiter = std::function<void(MPI_Request&, const char*)>;

// Collective over comm: the offset of this rank's clock from rank 0's. `tag` is
// the sync's own tag on comm; `wait` completes a request while the caller keeps
// progress going. Returns the sample and sets `domain` to the lowest rank sharing
// this rank's clock. Throws tally::error(errc::mpi).
clock_sample sync_clock(const trace_clock& clock, MPI_Comm comm, int tag, const clock_waiter& wait, int& domain);

}  // namespace tally::detail
