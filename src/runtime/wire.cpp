#include "runtime/wire.hpp"

#include <cstdint>
#include <cstring>

#include "core/token_layout.hpp"

namespace tally::detail {

using layout = protocol::token_layout;

wire_format::wire_format(int n, std::size_t payload_bytes)
    : n_(static_cast<std::size_t>(n)), payload_bytes_(payload_bytes) {
  // The length field and Q are contiguous: one block of n + 1 MPI_INT32_T.
  int lengths[3] = {n, n + 1, static_cast<int>(payload_bytes)};
  MPI_Aint displs[3] = {static_cast<MPI_Aint>(layout::ln_offset(n_)),
                        static_cast<MPI_Aint>(layout::length_offset(n_)),
                        static_cast<MPI_Aint>(layout::payload_offset(n_))};
  MPI_Datatype types[3] = {MPI_UINT64_T, MPI_INT32_T, MPI_BYTE};
  const int blocks = payload_bytes > 0 ? 3 : 2;
  type_handle raw;
  check_mpi(MPI_Type_create_struct(blocks, lengths, displs, types, raw.out()),
            "MPI_Type_create_struct(token)");
  // Pin the extent to the buffer size, so the layout needs no padding assumptions.
  check_mpi(MPI_Type_create_resized(raw.get(), 0, static_cast<MPI_Aint>(bytes()), type_.out()),
            "MPI_Type_create_resized(token)");
  check_mpi(MPI_Type_commit(type_.out()), "MPI_Type_commit(token)");
}

std::size_t wire_format::bytes() const noexcept { return layout::bytes(n_, payload_bytes_); }

namespace {
// Writes LN, the queue (length, then the ranks that queue_at(k) gives) and the
// payload at the offsets of the layout.
template <class QueueAt>
void pack_parts(std::size_t n, std::span<const protocol::seq_t> ln, std::size_t len, QueueAt queue_at,
                std::span<const std::byte> payload, std::size_t payload_bytes, std::byte* buf) noexcept {
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t v = ln[j].value();
    std::memcpy(buf + layout::ln_offset(n) + layout::ln_entry * j, &v, sizeof v);
  }
  const auto length = static_cast<std::int32_t>(len);
  std::memcpy(buf + layout::length_offset(n), &length, sizeof length);
  for (std::size_t k = 0; k < len; ++k) {
    const std::int32_t r = queue_at(k);
    std::memcpy(buf + layout::queue_offset(n) + layout::queue_entry * k, &r, sizeof r);
  }
  if (payload_bytes > 0) std::memcpy(buf + layout::payload_offset(n), payload.data(), payload_bytes);
}
}  // namespace

void wire_format::pack(const protocol::token& t, std::span<const std::byte> payload,
                       std::byte* buf) const noexcept {
  pack_parts(n_, t.ln, t.queue.size(), [&](std::size_t k) { return t.queue[k].value(); }, payload,
             payload_bytes_, buf);
}

void wire_format::pack(std::span<const protocol::seq_t> ln, std::span<const std::int32_t> queue,
                       std::span<const std::byte> payload, std::byte* buf) const noexcept {
  pack_parts(n_, ln, queue.size(), [&](std::size_t k) { return queue[k]; }, payload, payload_bytes_, buf);
}

void wire_format::unpack(const std::byte* buf, std::span<std::byte> payload,
                         protocol::token& t) const {
  t.ln.resize(n_);
  for (std::size_t j = 0; j < n_; ++j) {
    std::uint64_t v;
    std::memcpy(&v, buf + layout::ln_offset(n_) + layout::ln_entry * j, sizeof v);
    t.ln[j] = protocol::seq_t(v);
  }
  std::int32_t len;
  std::memcpy(&len, buf + layout::length_offset(n_), sizeof len);
  if (len < 0 || static_cast<std::size_t>(len) >= n_) {
    t.queue.assign(n_, protocol::rank_t(-1));  // malformed on purpose: well_formed fails
    return;
  }
  t.queue.resize(static_cast<std::size_t>(len));
  for (std::size_t k = 0; k < t.queue.size(); ++k) {
    std::int32_t r;
    std::memcpy(&r, buf + layout::queue_offset(n_) + layout::queue_entry * k, sizeof r);
    t.queue[k] = protocol::rank_t(r);
  }
  if (payload_bytes_ > 0) std::memcpy(payload.data(), buf + layout::payload_offset(n_), payload_bytes_);
}

}  // namespace tally::detail
