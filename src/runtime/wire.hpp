// runtime/wire.hpp — the token as one MPI message.
//
// The token buffer is laid out as protocol::token_layout says
// (core/token_layout.hpp), a whole number of 4-byte units; one committed datatype
// describes the unit (four contiguous bytes, since the codec fixes the byte order
// itself), and a token is `count` of them: as many as its queue needs, so a short
// queue sends a short message. The receive posts the longest token; MPI_Get_count
// says how long the one that came is. (A struct of MPI_UINT32_T, MPI_INT32_T and
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
  // The longest token in bytes (a receive or send buffer), and in units of type().
  std::size_t max_bytes() const noexcept;
  int max_count() const noexcept;
  std::size_t payload_bytes() const noexcept { return payload_bytes_; }

  // Writes t and the payload (payload_bytes() bytes) into buf (max_bytes() bytes);
  // returns the message's length in units of type().
  int pack(const protocol::token& t, std::span<const std::byte> payload, std::byte* buf) const noexcept;
  // The same from parts: LN (n entries) and the queue as ranks (fewer than n).
  int pack(std::span<const protocol::seq_t> ln, std::span<const std::int32_t> queue,
           std::span<const std::byte> payload, std::byte* buf) const noexcept;
  // Reads a token of `count` units from buf into t (reusing t's storage) and copies
  // its payload out. LN is left as the wire's 32-bit values: the caller widens it
  // against its RN (protocol::widen_ln). A malformed message yields a token that
  // protocol::token::well_formed rejects.
  void unpack(const std::byte* buf, int count, std::span<std::byte> payload, protocol::token& t) const;

  void free() { type_.free("MPI_Type_free(token)"); }

 private:
  std::size_t n_ = 0;
  std::size_t payload_bytes_ = 0;
  type_handle type_;
};

}  // namespace tally::detail
