#include "mpi/wire.hpp"

#include <cstdint>
#include <cstring>

namespace tally::detail {

wire_format::wire_format(int n, std::size_t payload_bytes)
    : n_(n),
      payload_bytes_(payload_bytes),
      payload_offset_(12 * static_cast<std::size_t>(n) + 4) {
  const std::size_t un = static_cast<std::size_t>(n);
  int lengths[3] = {n, n + 1, static_cast<int>(payload_bytes)};
  MPI_Aint displs[3] = {0, static_cast<MPI_Aint>(8 * un),
                        static_cast<MPI_Aint>(payload_offset_)};
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

void wire_format::pack(const protocol::token& t, std::span<const std::byte> payload,
                       std::byte* buf) const noexcept {
  const std::size_t un = static_cast<std::size_t>(n_);
  for (std::size_t j = 0; j < un; ++j) {
    const std::uint64_t v = t.ln[j].value();
    std::memcpy(buf + 8 * j, &v, 8);
  }
  const auto len = static_cast<std::int32_t>(t.queue.size());
  std::memcpy(buf + 8 * un, &len, 4);
  for (std::size_t k = 0; k < t.queue.size(); ++k) {
    const std::int32_t r = t.queue[k].value();
    std::memcpy(buf + 8 * un + 4 + 4 * k, &r, 4);
  }
  if (payload_bytes_ > 0) std::memcpy(buf + payload_offset_, payload.data(), payload_bytes_);
}

void wire_format::unpack(const std::byte* buf, std::span<std::byte> payload,
                         protocol::token& t) const {
  const std::size_t un = static_cast<std::size_t>(n_);
  t.ln.resize(un);
  for (std::size_t j = 0; j < un; ++j) {
    std::uint64_t v;
    std::memcpy(&v, buf + 8 * j, 8);
    t.ln[j] = protocol::seq_t(v);
  }
  std::int32_t len;
  std::memcpy(&len, buf + 8 * un, 4);
  if (len < 0 || len >= n_) {
    t.queue.assign(un, protocol::rank_t(-1));  // malformed on purpose: well_formed fails
    return;
  }
  t.queue.resize(static_cast<std::size_t>(len));
  for (std::size_t k = 0; k < t.queue.size(); ++k) {
    std::int32_t r;
    std::memcpy(&r, buf + 8 * un + 4 + 4 * k, 4);
    t.queue[k] = protocol::rank_t(r);
  }
  if (payload_bytes_ > 0) std::memcpy(payload.data(), buf + payload_offset_, payload_bytes_);
}

}  // namespace tally::detail
