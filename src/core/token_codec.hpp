// core/token_codec.hpp — the token to and from the bytes core/token_layout.hpp lays
// out: the one encoder and decoder, used by the MPI runtime (runtime/wire.cpp) and
// fuzzed on its own (tests/fuzz). The integers are little-endian whatever the host,
// so the bytes mean the same on every rank and MPI moves them as plain bytes.
//
// LN travels as its low 32 bits. The flat protocol's peer keeps 64-bit LN, and
// widen_ln restores each entry against the receiver's RN; the node topology's
// cohort keeps the 32 bits themselves (node_token) and compares them with RN modulo
// 2^32 (protocol::fresh). That is exact while |LN[j] - RN[j]| < 2^31, which holds: LN[j] >=
// RN[j] - 1 (a participant asks again only after its last request was served, and
// the LN entries the token carries never decrease), and LN[j] - RN[j] is at most the
// number of j's REQUESTs not yet handled by the receiver (docs/design.md, "Transport").
// The queued entries' LN and the receiver's own are not carried (their slots hold
// the queue): the decoder leaves them 0 and the receiving protocol core sets them
// (peer::on_token, cohort::on_token).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/protocol.hpp"

namespace tally::protocol {

// Which LN entry a queue entry stands for. Flat: the queue names ranks and LN is by
// rank (node_of empty). Node topology: the queue names the asking rank of each node
// and LN is by node, node_of[rank].
struct token_frame {
  std::size_t n = 0;                      // LN entries
  std::span<const std::int32_t> node_of;  // empty: a queue entry is its own LN index

  bool valid(std::int32_t e) const noexcept {
    return e >= 0 && static_cast<std::size_t>(e) < (node_of.empty() ? n : node_of.size());
  }
  std::size_t slot(std::int32_t e) const noexcept {
    return static_cast<std::size_t>(node_of.empty() ? e : node_of[static_cast<std::size_t>(e)]);
  }
};

// Writes the token for the receiver whose LN index is `to` into buf, which must
// hold token_layout::bytes(f.n, payload.size()): LN in every slot but the receiver's
// and the queued entries', which hold the queue's links (core/token_layout.hpp), then
// the payload. The queue must have fewer than n entries, distinct LN indices, none
// `to` (the protocol core's invariant; not checked). Returns the message's length.
std::size_t encode_token(const token_frame& f, std::span<const seq_t> ln, std::span<const std::int32_t> queue,
                         std::size_t to, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;
std::size_t encode_token(const token_frame& f, const token& t, std::size_t to, std::span<const std::byte> payload,
                         std::span<std::byte> buf) noexcept;
// The node topology's: LN as the low 32 bits the cohort keeps (the same bytes).
std::size_t encode_token(const token_frame& f, std::span<const std::uint32_t> ln, std::span<const std::int32_t> queue,
                         std::size_t to, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;

// The node topology's token as received: LN's low 32 bits, as the cohort keeps them
// (cohort::on_token), and the queue.
struct node_token {
  std::vector<std::uint32_t> ln;
  std::vector<rank_t> queue;
};

// Reads a message for the receiver whose LN index is `self` (buf: exactly the bytes
// received) into t, reusing t's storage, and copies payload.size() payload bytes
// out. LN holds the wire's 32-bit values until widen_ln, 0 for the entries not
// carried. Returns false when buf is not token_layout::bytes(f.n, payload.size())
// long, the queue names an entry out of range, `self` or one LN index twice, or the
// padding is not zero; t is then a token that token::well_formed rejects.
// marks: f.n bytes of scratch, zero on entry and on return.
bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, token& t,
                  std::span<std::byte> payload, std::span<std::uint8_t> marks);
// The same into a node_token (LN needs no widening); malformed: a queue of n
// entries, which cohort::on_token refuses.
bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, node_token& t,
                  std::span<std::byte> payload, std::span<std::uint8_t> marks);

// The 64-bit value congruent to `wire` modulo 2^32 that lies nearest `rn` (the
// wire's value itself if that would be below zero, which only a token breaking the
// bound above gives). A full value within the bound comes back unchanged.
inline std::uint64_t widened(std::uint64_t wire, std::uint64_t rn) noexcept {
  const auto w = static_cast<std::uint32_t>(wire);
  // RN plus the signed distance from its low 32 bits to the wire's, in [-2^31, 2^31).
  const std::int64_t near = static_cast<std::int64_t>(rn) + static_cast<std::int32_t>(w - static_cast<std::uint32_t>(rn));
  // As masks, which vectorize with SSE2 (its 64-bit compares need SSE4.2).
  const std::uint64_t below = 0 - (static_cast<std::uint64_t>(near) >> 63);
  return (static_cast<std::uint64_t>(near) & ~below) | (std::uint64_t{w} & below);
}

// Replaces each 32-bit LN[j] from the wire with widened(LN[j], rn[j])
// (rn.size() == ln.size()).
void widen_ln(std::span<seq_t> ln, std::span<const seq_t> rn) noexcept;

}  // namespace tally::protocol
