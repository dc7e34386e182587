// sim/network_model.hpp — the LogGP-style cost model of tally-sim's network.
//
// Time is integer picoseconds. A rank has one send port and one receive handler,
// both FIFO. A message of b bytes that rank i sends at time t (docs/simulator.md):
//   s     = max(t, tx_i)                 injection starts when i's port is free
//   tx_i  = s + slot(b)                  slot(b) = max(g, o + b*G)
//   a     = s + o + b*G + L (+ R)        arrival at the receiver j; R only if b > E
//   h     = max(a, rx_j) + o,  rx_j = h  j handles messages one at a time, o each
// The protocol sees the message at h. A broadcast to k ranks is k back-to-back
// sends: recipient p (0-based) starts at s + p*slot(b). E and R model MPI's switch
// from eager to rendezvous protocol: a message over E bytes waits for a handshake.
// W models tally's windowed broadcast: a token the sender passes on while its own
// broadcast is being injected starts at the end of the current window of W sends
// (scheduler::send_ahead), not after the whole broadcast.
// e and s model the CPU a token costs beyond o: for a token of m LN entries the
// sender spends e*m encoding it and the receiver e*m decoding and taking it in after
// its o; a token sent by a release waits, before that, for the release's scan of
// every entry for fresh requests, s*m. The node topology's token has its own pair
// (its hop differs: LN is copied into the node's shared state), used by the
// two-level model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/token_layout.hpp"

namespace tally::sim {

using ps_t = std::int64_t;  // simulated time or duration, picoseconds

struct network_params {
  ps_t latency = 0;                                   // L: wire time, sender port to receiver
  ps_t overhead = 0;                                  // o: CPU time per message, paid by sender and by receiver
  ps_t gap = 0;                                       // g: minimum time between two injections at one rank
  double byte_time = 0.0;                             // G: picoseconds per payload byte (1/bandwidth)
  std::uint64_t eager_limit = UINT64_MAX;             // E: largest message sent eagerly, bytes
  ps_t rendezvous = 0;                                // R: extra latency of a message over E bytes
  std::uint64_t window = protocol::broadcast_window;  // W: 0 = the token waits for the whole broadcast
  ps_t entry_time = 0;       // e: CPU per LN entry of a token, at the sender and at the receiver
  ps_t scan_time = 0;        // s: CPU per LN entry of a release's scan, before the token it sends
  ps_t node_entry_time = 0;  // e and s of the node topology's token (two-level)
  ps_t node_scan_time = 0;

  // Injection time of the payload, rounded to the picosecond.
  ps_t wire(std::uint64_t bytes) const noexcept {
    return static_cast<ps_t>(std::llround(static_cast<double>(bytes) * byte_time));
  }
  // How long one message of `bytes` keeps the sender's port busy.
  ps_t slot(std::uint64_t bytes) const noexcept { return std::max(gap, overhead + wire(bytes)); }
  // Injection start to handling at an idle receiver: o + b*G + L (+ R) + o.
  ps_t transit(std::uint64_t bytes) const noexcept {
    return 2 * overhead + wire(bytes) + latency + (bytes > eager_limit ? rendezvous : 0);
  }
};

// Message sizes: the REQUEST and the token as the MPI runtime sends them
// (core/token_layout.hpp). Baseline messages that carry no data (grant, release,
// reply) are 0 bytes.
constexpr std::uint64_t request_bytes = protocol::request_bytes;
// Every token of n entries is this long whatever its queue.
constexpr std::uint64_t token_bytes(std::int64_t n) noexcept {
  return protocol::token_layout::bytes(static_cast<std::size_t>(n));
}

}  // namespace tally::sim
