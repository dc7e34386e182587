// core/token_layout.hpp — the token and the REQUEST as bytes on the wire.
//
// The one definition of the message layout: the MPI runtime builds its committed
// datatype from it (runtime/wire.cpp) and the simulator charges message sizes by it
// (sim/network_model.hpp). For n entries, p payload bytes and q queued entries
// (q < n), integers little-endian, P = p rounded up to a multiple of 4:
//   offset 0        q          32-bit unsigned
//   offset 4        Q[0..q)    q x 32-bit signed, head first
//   offset 4+4q     LN         n - 1 - q x 32-bit unsigned: the low 32 bits of LN[j]
//                              for every j neither queued nor the receiver, in
//                              ascending j; widened by the receiver against its RN
//   offset 4n       payload    p bytes, then P - p zero bytes
// Every token is 4n + P bytes whatever its queue: a queued entry's LN is not carried
// (it is never read before that entry, served, overwrites it) and the receiver's
// own is RN - 1 (docs/design.md, "Transport"). A REQUEST is one 64-bit unsigned
// sequence number (the sender is the MPI source); between nodes it is two: the
// sequence number and the asking rank. In the node topology n is the number of nodes,
// Q names the asking rank of each node and LN is indexed by node.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tally::protocol {

struct token_layout {
  static constexpr std::size_t unit = 4;  // every token is a whole number of these
  static constexpr std::size_t ln_entry = sizeof(std::uint32_t);
  static constexpr std::size_t queue_entry = sizeof(std::int32_t);

  static constexpr std::size_t padded(std::size_t payload) noexcept { return (payload + unit - 1) / unit * unit; }
  static constexpr std::size_t queue_offset() noexcept { return unit; }
  static constexpr std::size_t ln_offset(std::size_t queued) noexcept { return unit + queue_entry * queued; }
  static constexpr std::size_t payload_offset(std::size_t n) noexcept { return unit * n; }
  // Every token of n entries: 4n + P bytes (receive and send buffers are this size).
  static constexpr std::size_t bytes(std::size_t n, std::size_t payload = 0) noexcept {
    return payload_offset(n) + padded(payload);
  }
};
static_assert(token_layout::bytes(2) == 8 && token_layout::bytes(3, 5) == 20 && token_layout::bytes(512) == 2048 &&
              token_layout::ln_offset(0) + token_layout::ln_entry * (3 - 1) == token_layout::payload_offset(3));

// A broadcast's REQUESTs are posted this many at a time, the next window on the
// sender's next progress step (runtime/transport.cpp): a token the sender passes on
// meanwhile leaves after the current window, ahead of the rest, and the simulator
// charges it so (sim/des_impl.hpp). Every REQUEST is still sent; a newer
// broadcast's windows go first.
// $TALLY_BROADCAST_WINDOW overrides it in the runtime, --broadcast-window in tally-sim.
inline constexpr std::size_t broadcast_window = 16;

// A REQUEST message: one sequence number.
inline constexpr std::size_t request_bytes = sizeof(std::uint64_t);
// A REQUEST between nodes (topology::node, core/cohort.hpp): the sequence number and
// the global rank that asked, which the token goes to.
inline constexpr std::size_t node_request_bytes = 2 * sizeof(std::uint64_t);

}  // namespace tally::protocol
