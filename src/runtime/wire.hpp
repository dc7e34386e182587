// runtime/wire.hpp — the token as one MPI message.
//
// The token buffer is laid out as protocol::token_layout says
// (core/token_layout.hpp), a whole number of 4-byte units; one committed datatype
// describes the unit (four contiguous bytes, since the codec fixes the byte order
// itself), and a token is `count` of them. Every token of a lock is the same length
// (4n + P bytes: the queued entries' LN are not carried), so the receive posts
// exactly that and MPI_Get_count confirms it. (The token used to be a struct of
// MPI_UINT64_T, MPI_INT32_T and MPI_BYTE blocks: MPICH 4.0.2 took about 350 ns more
// per message for it than for bytes; docs/design.md, "Transport".)
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/cohort.hpp"
#include "core/protocol.hpp"
#include "core/token_codec.hpp"
#include "runtime/handles.hpp"

namespace tally::detail {

class wire_format {
 public:
  wire_format() = default;
  // Builds and commits the datatype for n LN entries. node_of: empty for the flat
  // topology (LN by rank), else each global rank's node (LN by node); self: this
  // rank's LN index. Throws tally::error(errc::mpi) on failure.
  // form: the node topology's token body (protocol::token_form).
  wire_format(int n, std::size_t payload_bytes, std::vector<std::int32_t> node_of, std::int32_t self,
              protocol::token_form form = protocol::token_form::shorter);

  MPI_Datatype type() const noexcept { return type_.get(); }
  // Every token in bytes (the receive and send buffers), and in units of type().
  std::size_t bytes() const noexcept;
  int count() const noexcept;
  std::size_t payload_bytes() const noexcept { return payload_bytes_; }

  // Writes t and the payload (payload_bytes() bytes) into buf (bytes() long) for
  // rank `to`; returns the message's length in units of type(). Not thread-safe.
  int pack(const protocol::token& t, protocol::rank_t to, std::span<const std::byte> payload, std::byte* buf);
  // The node topology's (protocol::node_token): the token node `c` holds, in this
  // lock's form (protocol::cohort::encode_token).
  int pack(const protocol::cohort& c, protocol::rank_t to, std::span<const std::byte> payload, std::byte* buf);
  // Reads a token of `count` units from buf into t (reusing t's storage) and copies
  // its payload out. LN is as the wire carries it (protocol::ln_t), the entries not
  // carried 0 until the protocol core sets them. A malformed message yields a token
  // that protocol::token::well_formed rejects.
  void unpack(const std::byte* buf, int count, std::span<std::byte> payload, protocol::token& t);
  // The node topology's: LN into `ln` (n entries, the receiving node's copy from move
  // `copy`: protocol::decode_node_token), the queue, the trail into `hop` and `route`.
  // A malformed message leaves a queue that protocol::cohort::on_token rejects.
  void unpack(const std::byte* buf, int count, std::span<std::byte> payload, std::uint64_t copy_hop,
              std::span<protocol::ln_t> ln, std::vector<protocol::rank_t>& queue, std::uint64_t& hop,
              std::span<std::int32_t> route);

  void free() { type_.free("MPI_Type_free(token)"); }

 private:
  protocol::token_frame frame() const noexcept { return {n_, node_of_}; }

  std::size_t n_ = 0;
  std::size_t payload_bytes_ = 0;
  std::vector<std::int32_t> node_of_;
  std::size_t self_ = 0;
  protocol::token_form form_ = protocol::token_form::shorter;
  std::vector<std::uint8_t> marks_;  // the codec's scratch: n zero bytes between calls
  type_handle type_;
};

}  // namespace tally::detail
