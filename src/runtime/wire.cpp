#include "runtime/wire.hpp"

#include <cstdint>

#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace tally::detail {

using layout = protocol::token_layout;

wire_format::wire_format(int n, std::size_t payload_bytes)
    : n_(static_cast<std::size_t>(n)), payload_bytes_(payload_bytes) {
  check_mpi(MPI_Type_contiguous(static_cast<int>(layout::unit), MPI_BYTE, type_.out()),
            "MPI_Type_contiguous(token)");
  check_mpi(MPI_Type_commit(type_.out()), "MPI_Type_commit(token)");
}

std::size_t wire_format::max_bytes() const noexcept { return layout::max_bytes(n_, payload_bytes_); }
int wire_format::max_count() const noexcept { return static_cast<int>(max_bytes() / layout::unit); }

int wire_format::pack(const protocol::token& t, std::span<const std::byte> payload,
                      std::byte* buf) const noexcept {
  return static_cast<int>(protocol::encode_token(t, payload.first(payload_bytes_), {buf, max_bytes()}) /
                          layout::unit);
}

int wire_format::pack(std::span<const protocol::seq_t> ln, std::span<const std::int32_t> queue,
                      std::span<const std::byte> payload, std::byte* buf) const noexcept {
  return static_cast<int>(
      protocol::encode_token(ln.first(n_), queue, payload.first(payload_bytes_), {buf, max_bytes()}) / layout::unit);
}

void wire_format::unpack(const std::byte* buf, int count, std::span<std::byte> payload,
                         protocol::token& t) const {
  const std::size_t bytes = count < 0 ? 0 : static_cast<std::size_t>(count) * layout::unit;
  protocol::decode_token({buf, bytes}, n_, t, payload.first(payload_bytes_));
}

}  // namespace tally::detail
