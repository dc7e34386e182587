#include "runtime/wire.hpp"

#include <cstdint>

#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace tally::detail {

using layout = protocol::token_layout;

wire_format::wire_format(int n, std::size_t payload_bytes, std::vector<std::int32_t> node_of, std::int32_t self,
                         protocol::token_form form)
    : n_(static_cast<std::size_t>(n)),
      payload_bytes_(payload_bytes),
      node_of_(std::move(node_of)),
      self_(static_cast<std::size_t>(self)),
      form_(form),
      marks_(n_, 0) {
  check_mpi(MPI_Type_contiguous(static_cast<int>(layout::unit), MPI_BYTE, type_.out()), "MPI_Type_contiguous(token)");
  check_mpi(MPI_Type_commit(type_.out()), "MPI_Type_commit(token)");
}

std::size_t wire_format::bytes() const noexcept {
  return node_of_.empty() ? layout::bytes(n_, payload_bytes_) : protocol::node_token::bytes(n_, payload_bytes_);
}
int wire_format::count() const noexcept { return static_cast<int>(bytes() / layout::unit); }

int wire_format::pack(const protocol::token& t, protocol::rank_t to, std::span<const std::byte> payload,
                      std::byte* buf) {
  const protocol::token_frame f = frame();
  return static_cast<int>(
      protocol::encode_token(f, t, f.slot(to.value()), payload.first(payload_bytes_), {buf, bytes()}) / layout::unit);
}

int wire_format::pack(const protocol::cohort& c, protocol::rank_t to, std::span<const std::byte> payload,
                      std::byte* buf) {
  return static_cast<int>(c.encode_token(to, payload.first(payload_bytes_), {buf, bytes()}, form_) / layout::unit);
}

void wire_format::unpack(const std::byte* buf, int count, std::span<std::byte> payload, protocol::token& t) {
  const std::size_t len = count < 0 ? 0 : static_cast<std::size_t>(count) * layout::unit;
  protocol::decode_token({buf, len}, frame(), self_, t, payload.first(payload_bytes_), marks_);
}

void wire_format::unpack(const std::byte* buf, int count, std::span<std::byte> payload, std::uint64_t copy_hop,
                         std::span<protocol::ln_t> ln, std::vector<protocol::rank_t>& queue, std::uint64_t& hop,
                         std::span<std::int32_t> route) {
  const std::size_t len = count < 0 ? 0 : static_cast<std::size_t>(count) * layout::unit;
  protocol::decode_node_token({buf, len}, frame(), self_, copy_hop, ln, queue, hop, route,
                              payload.first(payload_bytes_), marks_);
}

}  // namespace tally::detail
