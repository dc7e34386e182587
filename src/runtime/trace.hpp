// runtime/trace.hpp — the handoff timeline (options::trace, TALLY_TRACE).
//
// When on, each rank records its lock events with a timestamp of its trace clock
// (runtime/trace_clock.hpp: CLOCK_MONOTONIC in ns) into a fixed buffer (no
// allocation after creation; events past its capacity are counted as dropped) and
// writes them at free() to DIR/tally-<mutex>-rank<k>.jsonl (DIR made if missing):
// a header line (with the clock's domain and its offset samples against rank 0),
// then one JSON object per event. tools/tally-trace merges the files of all ranks into a Chrome/Perfetto
// trace, in rank 0's time. Off (the default) costs one predictable branch per event
// site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/trace_clock.hpp"

namespace tally::detail {

class trace_log {
 public:
  enum class kind : std::uint8_t {
    request,    // REQUEST broadcast, seq = its number
    token_in,   // the token arrived, peer = its sender
    token_out,  // the token was sent, peer = its receiver
    enter,      // this rank entered the critical section; seq = 1 for a local entry
                // (no message: an idle holder's re-entry, or a node-local grant)
    exit,       // this rank left it
  };

  // Turns the log on (dir not empty): `capacity` events.
  void open(const std::string& dir, const std::string& mutex_name, int rank, int size, std::size_t capacity = 1u << 16);
  bool on() const noexcept { return on_; }
  const trace_clock& clock() const noexcept { return clock_; }
  // Keeps an offset sample for the header (creation's, then free's); `domain`: the
  // lowest rank sharing this rank's clock.
  void add_sample(const clock_sample& s, int domain) noexcept;
  void record(kind k, std::int32_t peer = -1, std::uint64_t seq = 0) noexcept {
    if (!on_) return;
    if (used_ == events_.size()) {
      ++dropped_;
      return;
    }
    events_[used_++] = {clock_.now(), peer, seq, k};
  }
  // Writes the file (once); a failure to write is reported on stderr, never thrown.
  void flush() noexcept;

 private:
  struct event {
    std::int64_t t;  // ns of clock_
    std::int32_t peer;
    std::uint64_t seq;
    kind what;
  };
  bool on_ = false;
  std::string path_, name_;
  int rank_ = 0, size_ = 1;
  trace_clock clock_;
  clock_sample samples_[2];
  int sampled_ = 0, domain_ = -1;
  std::vector<event> events_;
  std::size_t used_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace tally::detail
