// core/token_codec.hpp — the token to and from the bytes core/token_layout.hpp lays
// out: the one encoder and decoder, used by the MPI runtime (runtime/wire.cpp) and
// fuzzed on its own (tests/fuzz). The integers are little-endian whatever the host,
// so the bytes mean the same on every rank and MPI moves them as plain bytes.
//
// LN travels as its low 32 bits, which is how every rank and node keeps it
// (protocol::ln_t): the slots are copied as they are, no widening either way.
// Compared with RN modulo 2^32, it is exact while |LN[j] - RN[j]| < 2^31, which
// holds: LN[j] >= RN[j] - 1 (a participant asks again only after its last request
// was served, and the LN entries the token carries never decrease), and
// LN[j] - RN[j] is at most the number of j's REQUESTs not yet handled by the rank
// that compares them (docs/design.md, "Transport").
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
std::size_t encode_token(const token_frame& f, std::span<const ln_t> ln, std::span<const std::int32_t> queue,
                         std::size_t to, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;
std::size_t encode_token(const token_frame& f, const token& t, std::size_t to, std::span<const std::byte> payload,
                         std::span<std::byte> buf) noexcept;

// Reads a message for the receiver whose LN index is `self` (buf: exactly the bytes
// received) into t, reusing t's storage, and copies payload.size() payload bytes
// out. LN holds the wire's values, 0 for the entries not carried (the receiving
// core sets them). Returns false when buf is not token_layout::bytes(f.n, payload.size())
// long, the queue names an entry out of range, `self` or one LN index twice, or the
// padding is not zero; t is then a token that token::well_formed rejects.
// marks: f.n bytes of scratch, zero on entry and on return.
bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, token& t,
                  std::span<std::byte> payload, std::span<std::uint8_t> marks);
// The same, LN into `ln` (f.n entries: where the receiving core keeps it, so that it
// is written once; cohort::ln_inbox) and the queue into `queue`.
bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, std::span<ln_t> ln,
                  std::vector<rank_t>& queue, std::span<std::byte> payload, std::span<std::uint8_t> marks);

}  // namespace tally::protocol
