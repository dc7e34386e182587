// core/token_layout.hpp — the token and the REQUEST as bytes on the wire.
//
// The one definition of the message layout: the MPI runtime builds its committed
// datatype from it (runtime/wire.cpp) and the simulator charges message sizes by it
// (sim/network_model.hpp). For n ranks and p payload bytes, integers little-endian:
//   offset 0       LN[0..n)        n x 64-bit unsigned
//   offset 8n      queue length    1 x 32-bit signed
//   offset 8n+4    Q[0..n)         n x 32-bit signed (the first `length` are used)
//   offset 12n+4   payload         p bytes
// A REQUEST is one 64-bit unsigned sequence number (the sender is the MPI source);
// between nodes it is two: the sequence number and the asking rank. In the node
// topology n is the number of nodes and Q names the asking rank of each node.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tally::protocol {

struct token_layout {
  static constexpr std::size_t ln_entry = sizeof(std::uint64_t);
  static constexpr std::size_t queue_entry = sizeof(std::int32_t);
  static constexpr std::size_t length_field = sizeof(std::int32_t);

  static constexpr std::size_t ln_offset(std::size_t) noexcept { return 0; }
  static constexpr std::size_t length_offset(std::size_t n) noexcept { return ln_entry * n; }
  static constexpr std::size_t queue_offset(std::size_t n) noexcept {
    return length_offset(n) + length_field;
  }
  static constexpr std::size_t payload_offset(std::size_t n) noexcept {
    return queue_offset(n) + queue_entry * n;
  }
  // The whole token: 12n + 4 + p bytes.
  static constexpr std::size_t bytes(std::size_t n, std::size_t payload = 0) noexcept {
    return payload_offset(n) + payload;
  }
};
static_assert(token_layout::bytes(2) == 28 && token_layout::bytes(3, 5) == 45);

// A REQUEST message: one sequence number.
inline constexpr std::size_t request_bytes = sizeof(std::uint64_t);
// A REQUEST between nodes (topology::node, core/cohort.hpp): the sequence number and
// the global rank that asked, which the token goes to.
inline constexpr std::size_t node_request_bytes = 2 * sizeof(std::uint64_t);

}  // namespace tally::protocol
