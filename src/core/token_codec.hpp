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
#include <optional>
#include <span>
#include <string_view>
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

// The node topology's token (core/token_layout.hpp, node_token) carries a trail:
// how many moves between nodes it has made and which nodes sent the last
// node_token::route of them. A node keeps its LN after it sends the token (its copy
// is then that move's LN); a token to it need only carry the entries changed since,
// which are the senders' own (each node changes only its own entry, while it holds
// the token). docs/design.md ("Two-level lock", delta tokens) gives the argument.
struct token_trail {
  std::uint64_t hop = 0;                // moves between nodes, the one carrying it included
  std::span<const std::int32_t> route;  // node_token::route entries: route[i] sent move hop - i
};

// Which body encode_node_token writes. `shorter` (the default): the delta where it
// is exact and no longer than the full body (from about 5 + q + 2d nodes on, q
// queued and d pairs); `delta`: wherever it is exact (the model check and tests use
// it, so that small shapes take the delta's path); `full`: never a delta.
// $TALLY_NODE_TOKEN in the runtime, --node-token in tally-sim: these names.
enum class token_form : std::uint8_t {
  shorter,
  delta,
  full
};
std::optional<token_form> parse_token_form(std::string_view name) noexcept;
const char* name_of(token_form f) noexcept;

// Writes the node token for the receiver with LN index `to`, whose LN copy is from
// move `since` or later (what its REQUEST said; 0 is always safe): a delta when the
// route reaches back to `since` and `form` allows it, else the full body. `ln` is the sender's LN as the core keeps it
// (0 where queued and at `to`); buf holds node_token::bytes(f.n, payload.size()). The trail must hold hop >= 1 and a
// route as the core keeps it (not checked). Returns the message's length.
std::size_t encode_node_token(const token_frame& f, std::span<const ln_t> ln, std::span<const std::int32_t> queue,
                              std::size_t to, token_trail trail, std::uint64_t since,
                              std::span<const std::byte> payload, std::span<std::byte> buf,
                              token_form form = token_form::shorter) noexcept;

// A node token's form word: node_token::full, or the delta's pair count d >= 0;
// node_token::full also for a message too short to have one.
std::int32_t node_token_form(std::span<const std::byte> buf) noexcept;

// Reads a node token for the receiver `self` whose LN copy, in `ln`, is from move
// `copy_hop`: a full body overwrites it, a delta patches it. The queue goes into
// `queue`, the trail into `hop` and `route` (node_token::route entries). Returns
// false when the message is malformed: wrong length, a route that is not one node
// per move since move 1 or names `self` as the sender, a hop not after `copy_hop`,
// a delta from after `copy_hop` or older than the route, one that does not carry
// exactly the route's senders since then (but `self`), or a queue as decode_token
// rejects it. `ln` is unspecified then. marks: f.n bytes, zero on entry and return.
bool decode_node_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, std::uint64_t copy_hop,
                       std::span<ln_t> ln, std::vector<rank_t>& queue, std::uint64_t& hop,
                       std::span<std::int32_t> route, std::span<std::byte> payload, std::span<std::uint8_t> marks);

}  // namespace tally::protocol
