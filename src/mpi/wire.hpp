// mpi/wire.hpp — the token as one MPI message.
//
// Layout of the token buffer (n ranks, p payload bytes), described by one committed
// struct datatype so that MPI converts each field on heterogeneous systems:
//   offset 0       LN[0..n)        n  x MPI_UINT64_T
//   offset 8n      queue length    1  x MPI_INT32_T
//   offset 8n+4    Q[0..n)         n  x MPI_INT32_T (first `length` entries used)
//   offset 12n+4   payload         p  x MPI_BYTE
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>

#include "mpi/handles.hpp"
#include "tally/protocol.hpp"

namespace tally::detail {

class wire_format {
 public:
  wire_format() = default;
  // Builds and commits the datatype. Throws tally::error(errc::mpi) on failure.
  wire_format(int n, std::size_t payload_bytes);

  MPI_Datatype type() const noexcept { return type_.get(); }
  std::size_t bytes() const noexcept { return payload_offset_ + payload_bytes_; }
  std::size_t payload_bytes() const noexcept { return payload_bytes_; }

  // Writes t and the payload (payload_bytes() bytes) into buf (bytes() bytes).
  void pack(const protocol::token& t, std::span<const std::byte> payload,
            std::byte* buf) const noexcept;
  // Reads a token from buf into t (reusing t's storage) and copies its payload
  // out. A queue length outside [0, n) yields a token that
  // protocol::token::well_formed rejects.
  void unpack(const std::byte* buf, std::span<std::byte> payload, protocol::token& t) const;

  void free() { type_.free("MPI_Type_free(token)"); }

 private:
  int n_ = 0;
  std::size_t payload_bytes_ = 0;
  std::size_t payload_offset_ = 0;
  type_handle type_;
};

}  // namespace tally::detail
