#include "runtime/wire.hpp"

#include <cstdint>

#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace tally::detail {

using layout = protocol::token_layout;

wire_format::wire_format(int n, std::size_t payload_bytes)
    : n_(static_cast<std::size_t>(n)), payload_bytes_(payload_bytes) {
  check_mpi(MPI_Type_contiguous(static_cast<int>(bytes()), MPI_BYTE, type_.out()),
            "MPI_Type_contiguous(token)");
  check_mpi(MPI_Type_commit(type_.out()), "MPI_Type_commit(token)");
}

std::size_t wire_format::bytes() const noexcept { return layout::bytes(n_, payload_bytes_); }

void wire_format::pack(const protocol::token& t, std::span<const std::byte> payload,
                       std::byte* buf) const noexcept {
  protocol::encode_token(t, payload.first(payload_bytes_), {buf, bytes()});
}

void wire_format::pack(std::span<const protocol::seq_t> ln, std::span<const std::int32_t> queue,
                       std::span<const std::byte> payload, std::byte* buf) const noexcept {
  protocol::encode_token(ln.first(n_), queue, payload.first(payload_bytes_), {buf, bytes()});
}

void wire_format::unpack(const std::byte* buf, std::span<std::byte> payload,
                         protocol::token& t) const {
  protocol::decode_token({buf, bytes()}, n_, t, payload.first(payload_bytes_));
}

}  // namespace tally::detail
