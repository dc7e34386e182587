// runtime/wire.hpp — the token as one MPI message.
//
// One committed datatype describes the token buffer laid out as
// protocol::token_layout says (core/token_layout.hpp): contiguous bytes, since the
// codec fixes the byte order itself. (A struct of MPI_UINT64_T, MPI_INT32_T and
// MPI_BYTE blocks cost MPICH 4.0.2 about 350 ns more per message than bytes;
// docs/design.md, "Transport".)
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/protocol.hpp"
#include "runtime/handles.hpp"

namespace tally::detail {

class wire_format {
 public:
  wire_format() = default;
  // Builds and commits the datatype. Throws tally::error(errc::mpi) on failure.
  wire_format(int n, std::size_t payload_bytes);

  MPI_Datatype type() const noexcept { return type_.get(); }
  std::size_t bytes() const noexcept;
  std::size_t payload_bytes() const noexcept { return payload_bytes_; }

  // Writes t and the payload (payload_bytes() bytes) into buf (bytes() bytes).
  void pack(const protocol::token& t, std::span<const std::byte> payload,
            std::byte* buf) const noexcept;
  // The same from parts: LN (n entries) and the queue as ranks (fewer than n).
  void pack(std::span<const protocol::seq_t> ln, std::span<const std::int32_t> queue,
            std::span<const std::byte> payload, std::byte* buf) const noexcept;
  // Reads a token from buf into t (reusing t's storage) and copies its payload
  // out. A queue length outside [0, n) yields a token that
  // protocol::token::well_formed rejects.
  void unpack(const std::byte* buf, std::span<std::byte> payload, protocol::token& t) const;

  void free() { type_.free("MPI_Type_free(token)"); }

 private:
  std::size_t n_ = 0;
  std::size_t payload_bytes_ = 0;
  type_handle type_;
};

}  // namespace tally::detail
