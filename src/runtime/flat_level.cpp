#include "runtime/flat_level.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "runtime/handles.hpp"

namespace tally::detail {

flat_level::flat_level(transport& t, int rank, int size, int owner, std::size_t payload_bytes,
                       std::span<const std::byte> initial_payload)
    : t_(t),
      peer_(build_core([&] { return protocol::peer(protocol::rank_t(rank), size, protocol::rank_t(owner)); })),
      payload_(payload_bytes, std::byte{0}) {
  if (rank == owner && !initial_payload.empty())
    std::copy(initial_payload.begin(), initial_payload.end(), payload_.begin());
}

void flat_level::describe(transport::shape& sh, int rank, int size) {
  sh.token_entries = size;
  sh.token_self = rank;
  for (int d = 1; d < size; ++d) sh.peers.push_back((rank + d) % size);
}

void flat_level::execute(const protocol::step& s, const char* call) {
  if (!s.ok()) refuse(s.st, call);
  switch (s.act.what) {
    case protocol::action::kind::none: return;
    case protocol::action::kind::broadcast_request: t_.broadcast(s.act.seq, peer_.self()); return;
    case protocol::action::kind::send_token: {
      std::optional<protocol::token> tok = peer_.take_token();
      t_.send_token(s.act.to, *tok, payload_);
      spare_ = std::move(*tok);  // its storage receives the next token
      return;
    }
  }
}

bool flat_level::start(const char* call) {
  execute(peer_.lock(), call);
  return entered();
}

bool flat_level::withdraw(const char* call) {
  if (entered()) return false;  // the token came meanwhile
  execute(peer_.withdraw(), call);
  return true;
}

bool flat_level::try_enter(const char* call) {
  const protocol::step s = peer_.try_lock();
  if (s.st == protocol::status::would_block) return false;
  execute(s, call);
  return true;
}

void flat_level::abandon() noexcept {
  if (waiting()) (void)peer_.withdraw();
}

void flat_level::deliver(const transport::arrivals& a) {
  // REQUESTs before the token: either order is a valid execution (channels are
  // unordered), and this one lets a just-arrived token be routed at once.
  for (const transport::request_arrival& r : a.requests) execute(peer_.on_request(r.from, r.seq), "REQUEST received");
  if (a.token) {
    t_.read_token(spare_, payload_);
    execute(peer_.on_token(std::move(spare_)), "token received");
  }
}

bool flat_level::drained(std::uint64_t total) const {
  const protocol::counters& c = peer_.counters();
  return c.requests_received >= total - c.broadcasts && peer_.mode() != protocol::mode::requesting &&
         !t_.sends_pending();
}

}  // namespace tally::detail
