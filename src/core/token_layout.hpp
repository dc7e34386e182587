// core/token_layout.hpp — the token and the REQUEST as bytes on the wire.
//
// The one definition of the message layout: the MPI runtime builds its committed
// datatype from it (runtime/wire.cpp) and the simulator charges message sizes by it
// (sim/network_model.hpp). For n entries and p payload bytes (P = p rounded up to a
// multiple of 4), every token is 4n + P bytes, integers little-endian:
//   offset 4j      slot j (0 <= j < n), 32 bits:
//                    j neither queued nor the receiver: LN[j] (protocol::ln_t, the
//                    low 32 bits of a sequence number, unsigned);
//                    j the receiver: the queue's head (signed), -1 when it is empty;
//                    j queued: the entry after j's in the queue, -1 after the last.
//   offset 4n      payload: p bytes, then P - p zero bytes.
// So LN sits at fixed offsets (the codec is a straight copy plus one slot per queued
// entry) and the queue is a list threaded through the slots whose LN the token does
// not carry: a queued entry's LN is never read before that entry, served, overwrites
// it, and the receiver's own is RN - 1 (docs/design.md, "Transport"). A REQUEST is one
// 64-bit unsigned sequence number (the sender is the MPI source); between nodes it is
// three: the sequence number, the asking rank and the move of the asking node's LN
// copy (node_request_bytes below). In the node topology n is the number
// of nodes, LN and the slots are indexed by node and the queue names the asking rank
// of each node, and the token starts with its trail (below).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tally::protocol {

struct token_layout {
  static constexpr std::size_t unit = 4;   // every token is a whole number of these
  static constexpr std::int32_t end = -1;  // a link to no entry: the queue ends there

  static constexpr std::size_t padded(std::size_t payload) noexcept { return (payload + unit - 1) / unit * unit; }
  static constexpr std::size_t slot_offset(std::size_t j) noexcept { return unit * j; }
  static constexpr std::size_t payload_offset(std::size_t n) noexcept { return unit * n; }
  // Every token of n entries: 4n + P bytes (receive and send buffers are this size).
  static constexpr std::size_t bytes(std::size_t n, std::size_t payload = 0) noexcept {
    return payload_offset(n) + padded(payload);
  }
};
// The node topology's token: the trail, then one of two bodies, then the payload.
//   word 0-1        hop (unsigned 64 bits): moves between nodes so far, this one included
//   word 2+i        route[i], i < route: the node that sent move hop - i; -1 where
//                   hop - i < 1
//   word 2+route    form: `full` or d >= 0
//   full body       the n slots as above (LN with the queue's links)
//   delta body      since (64 bits), the queue's length q, its q ranks, then d pairs
//                   (node j, LN[j]): the distinct senders of the moves since+1..hop
//                   but the receiver, where the receiver's own LN is its copy from
//                   move `since` (docs/design.md, "Two-level lock", delta tokens)
// The delta is sent when the route reaches back to the receiver's copy and (by
// default: protocol::token_form) it is no longer than the full body.
struct node_token {
  static constexpr std::size_t route = 16;  // moves the trail remembers
  static constexpr std::int32_t full = -1;  // the form word of a full body
  static constexpr std::size_t trail_words = 3 + route;
  static constexpr std::size_t trail_bytes = token_layout::unit * trail_words;
  static constexpr std::size_t body_offset = trail_bytes;
  // The full form of n nodes.
  static constexpr std::size_t full_bytes(std::size_t n, std::size_t payload = 0) noexcept {
    return trail_bytes + token_layout::bytes(n, payload);
  }
  // A delta of a q-rank queue and d pairs.
  static constexpr std::size_t delta_bytes(std::size_t q, std::size_t d, std::size_t payload = 0) noexcept {
    return trail_bytes + token_layout::unit * (3 + q + 2 * d) + token_layout::padded(payload);
  }
  // The longest token of n nodes in either form (receive and send buffers).
  static constexpr std::size_t bytes(std::size_t n, std::size_t payload = 0) noexcept {
    const std::size_t others = n > 0 ? n - 1 : 0, d = others < route ? others : route;
    const std::size_t longest_delta = delta_bytes(others, d, payload), whole = full_bytes(n, payload);
    return longest_delta > whole ? longest_delta : whole;
  }
};
static_assert(node_token::full_bytes(512) == 2048 + 76 && node_token::delta_bytes(0, 1) == 96 &&
              node_token::bytes(512) == node_token::delta_bytes(511, 16) && node_token::bytes(2) == 100);

static_assert(token_layout::bytes(2) == 8 && token_layout::bytes(3, 5) == 20 && token_layout::bytes(512) == 2048 &&
              token_layout::slot_offset(3) == token_layout::payload_offset(3));

// A broadcast's REQUESTs are posted this many at a time, the next window on the
// sender's next progress step (runtime/transport.cpp): a token the sender passes on
// meanwhile leaves after the current window, ahead of the rest, and the simulator
// charges it so (sim/des_impl.hpp). Every REQUEST is still sent; a newer
// broadcast's windows go first.
// $TALLY_BROADCAST_WINDOW overrides it in the runtime, --broadcast-window in tally-sim.
inline constexpr std::size_t broadcast_window = 16;

// A REQUEST message: one sequence number.
inline constexpr std::size_t request_bytes = sizeof(std::uint64_t);
// A REQUEST between nodes (topology::node, core/cohort.hpp): the sequence number, the
// global rank that asked (which the token goes to) and the move of the asking node's
// LN copy (core/token_codec.hpp, token_trail).
inline constexpr std::size_t node_request_bytes = 3 * sizeof(std::uint64_t);

}  // namespace tally::protocol
