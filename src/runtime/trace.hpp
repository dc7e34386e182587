// runtime/trace.hpp — the handoff timeline (options::trace, TALLY_TRACE).
//
// When on, each rank records its lock events with a steady-clock timestamp into a
// fixed buffer (no allocation after creation; events past its capacity are counted
// as dropped) and writes them at free() to DIR/tally-<mutex>-rank<k>.jsonl: a header
// line, then one JSON object per event. tools/tally-trace merges the files of all
// ranks into a Chrome/Perfetto trace. Off (the default) costs one predictable branch
// per event site. Times are nanoseconds since the creation's agreement step, which
// every rank leaves at about the same moment: a common origin to within the
// collective's skew, on one node or several.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

  // Turns the log on (dir not empty): `capacity` events, origin now.
  void open(const std::string& dir, const std::string& mutex_name, int rank, int size,
            std::size_t capacity = 1u << 16);
  bool on() const noexcept { return on_; }
  void record(kind k, std::int32_t peer = -1, std::uint64_t seq = 0) noexcept {
    if (!on_) return;
    if (used_ == events_.size()) {
      ++dropped_;
      return;
    }
    events_[used_++] = {std::chrono::steady_clock::now() - origin_, peer, seq, k};
  }
  // Writes the file (once); a failure to write is reported on stderr, never thrown.
  void flush() noexcept;

 private:
  struct event {
    std::chrono::steady_clock::duration t;
    std::int32_t peer;
    std::uint64_t seq;
    kind what;
  };
  bool on_ = false;
  std::string path_, name_;
  int rank_ = 0, size_ = 1;
  std::chrono::steady_clock::time_point origin_{};
  std::vector<event> events_;
  std::size_t used_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace tally::detail
