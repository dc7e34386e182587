// runtime/flat_level.hpp — topology::flat: every rank a Suzuki–Kasami node.
//
// Contract. The level (runtime/level.hpp) of a mutex whose ranks each run a
// protocol::peer: its events go to the peer, whose actions (a REQUEST broadcast,
// the token's send) go out through the transport; the payload travels with the
// token and lives here while the token does.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/protocol.hpp"
#include "runtime/errors.hpp"
#include "runtime/level.hpp"

namespace tally::detail {

class flat_level final : public level {
 public:
  // Rank `rank` of `size`, the token starting on `owner` (whose payload is
  // `initial_payload` if given, else zero bytes).
  flat_level(transport& t, int rank, int size, int owner, std::size_t payload_bytes,
             std::span<const std::byte> initial_payload);
  // The transport's shape for this topology: the token's entries, the peers.
  static void describe(transport::shape& sh, int rank, int size);

  bool start(const char* call) override;
  bool entered() override { return peer_.mode() == protocol::mode::in_cs; }
  bool waiting() const override { return peer_.mode() == protocol::mode::requesting && !peer_.withdrawn(); }
  bool withdraw(const char* call) override;
  bool try_enter(const char* call) override;
  void leave(const char* call) override { execute(peer_.unlock(), call); }
  void abandon() noexcept override;
  void deliver(const transport::arrivals& a) override;
  // A withdrawn request: the token may still come, and must be passed on.
  bool needs_progress(bool) const noexcept override { return peer_.withdrawn(); }
  bool receives() const noexcept override { return true; }
  bool waiter_known() const noexcept override { return peer_.waiter_known(); }
  bool listens() const noexcept override { return token_idle_here(); }
  bool token_idle_here() const noexcept override { return peer_.holds_token() && peer_.mode() == protocol::mode::idle; }
  void enter_idle() override { (void)peer_.lock(); }
  bool drained(std::uint64_t total) const override;
  std::span<std::byte> payload() noexcept override { return payload_; }
  tally::stats stats() const override { return to_stats(peer_.counters()); }

 private:
  // Carries out a step's action; a refused event throws, naming `call`.
  void execute(const protocol::step& s, const char* call);

  transport& t_;
  protocol::peer peer_;
  std::vector<std::byte> payload_;  // the token's payload while held here
  protocol::token spare_;           // storage for unpacking, recycled from sent tokens
};

}  // namespace tally::detail
