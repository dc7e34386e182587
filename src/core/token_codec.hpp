// core/token_codec.hpp — the token to and from the bytes core/token_layout.hpp lays
// out: the one encoder and decoder, used by the MPI runtime (runtime/wire.cpp) and
// fuzzed on its own (tests/fuzz). The integers are little-endian whatever the host,
// so the bytes mean the same on every rank and MPI moves them as plain bytes.
//
// LN travels as its low 32 bits; widen_ln restores each entry against the
// receiver's RN. That is exact while |LN[j] - RN[j]| < 2^31, which holds: LN[j] >=
// RN[j] - 1 (a participant asks again only after its last request was served, and
// the one token's LN entries never decrease), and LN[j] - RN[j] is at most the
// number of j's REQUESTs not yet handled by the receiver (docs/design.md, "Transport").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/protocol.hpp"

namespace tally::protocol {

// Writes LN (n = ln.size() entries), the queue (fewer than n ranks) and the payload
// into buf, which must hold token_layout::bytes(n, payload.size(), queue.size())
// bytes. Returns that length, the message's.
std::size_t encode_token(std::span<const seq_t> ln, std::span<const std::int32_t> queue,
                         std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;
std::size_t encode_token(const token& t, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;

// Reads a message of n entries (buf: exactly the bytes received) into t, reusing
// t's storage, and copies payload.size() payload bytes out. LN holds the wire's
// 32-bit values until widen_ln. Returns false when buf's length is not
// token_layout::bytes(n, payload.size(), q) for some q in [0, n) or the padding is
// not zero; t is then a token that token::well_formed rejects. A true return says
// nothing about the entries: the receiver checks well_formed.
bool decode_token(std::span<const std::byte> buf, std::size_t n, token& t, std::span<std::byte> payload);

// Replaces each 32-bit LN[j] from the wire with the 64-bit value congruent to it
// modulo 2^32 that lies nearest the receiver's rn[j] (rn.size() == ln.size()).
void widen_ln(std::span<seq_t> ln, std::span<const seq_t> rn) noexcept;

}  // namespace tally::protocol
