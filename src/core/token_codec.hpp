// core/token_codec.hpp — the token to and from the bytes core/token_layout.hpp lays
// out: the one encoder and decoder, used by the MPI runtime (runtime/wire.cpp) and
// fuzzed on its own (tests/fuzz). The integers are little-endian whatever the host,
// so the bytes mean the same on every rank and MPI moves them as plain bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/protocol.hpp"

namespace tally::protocol {

// Writes LN (n = ln.size() entries), the queue (at most n - 1 ranks) and the payload
// into buf, which must be token_layout::bytes(n, payload.size()) bytes.
void encode_token(std::span<const seq_t> ln, std::span<const std::int32_t> queue,
                  std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;
void encode_token(const token& t, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept;

// Reads a token of n entries from buf into t (reusing t's storage) and copies
// payload.size() payload bytes out. Returns false when buf is not exactly
// token_layout::bytes(n, payload.size()) bytes or the queue length lies outside
// [0, n); t is then a token that token::well_formed rejects. A true return says
// nothing about the entries: the receiver checks well_formed.
bool decode_token(std::span<const std::byte> buf, std::size_t n, token& t, std::span<std::byte> payload);

}  // namespace tally::protocol
