#include "sim/models/suzuki_kasami.hpp"

#include "core/protocol.hpp"

namespace tally::sim {

suzuki_kasami::suzuki_kasami(std::int32_t n, const std::vector<std::int32_t>& active)
    : n_(n), slot_(static_cast<std::size_t>(n), -1) {
  if (n < 1) throw protocol::bad_argument("need at least 1 rank");
  std::vector<std::int32_t> ids{0};  // the initial owner always exists
  for (std::int32_t i : active)
    if (i != 0) ids.push_back(i);
  peers_.reserve(ids.size());
  for (std::int32_t i : ids) {
    if (i < 0 || i >= n) throw protocol::bad_argument("active rank out of range");
    slot_[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(peers_.size());
    peers_.emplace_back(protocol::rank_t(i), n, protocol::rank_t(0));
  }
  peer_of_.assign(static_cast<std::size_t>(n), &peers_[0]);
  rn_of_.assign(static_cast<std::size_t>(n), peers_[0].rn().data());
  for (const protocol::peer& nd : peers_) {
    peer_of_[nd.self().index()] = &nd;
    rn_of_[nd.self().index()] = nd.rn().data();
  }
}

void suzuki_kasami::check(const protocol::step& s, const protocol::peer& nd, const char* what) {
  if (!s.ok())
    fail(std::string(what) + " at rank " + std::to_string(nd.self().value()) +
         " refused by the protocol core: " + protocol::describe(s.st));
}

void suzuki_kasami::fail(const std::string& why) { throw invariant_violation("suzuki-kasami: " + why); }

std::uint64_t suzuki_kasami::local_entries(const raw_results&) const noexcept {
  std::uint64_t k = 0;
  for (const protocol::peer& nd : peers_) k += nd.counters().local_acquisitions;
  return k;
}

void suzuki_kasami::finish_checks(std::uint64_t requests, std::uint64_t tokens, std::uint64_t entries) const {
  if (flight_) fail("the run ended with the token in flight");
  std::size_t owners = 0;
  protocol::counters sum{};
  for (const protocol::peer& nd : peers_) {
    if (nd.mode() != protocol::mode::idle)
      fail("rank " + std::to_string(nd.self().value()) + " is not idle at the end");
    if (nd.holds_token()) {
      ++owners;
      if (nd.self().value() != holder_) fail("the token is not where it was last sent");
    }
    const protocol::counters& c = nd.counters();
    protocol::accumulate(sum, c);
  }
  if (owners != 1) fail(std::to_string(owners) + " ranks hold the token at the end");
  const auto others = static_cast<std::uint64_t>(n_ - 1);
  if (sum.acquisitions != entries)
    fail("the peers count " + std::to_string(sum.acquisitions) + " entries, the scheduler " + std::to_string(entries));
  if (sum.requests_sent != requests || sum.requests_sent != others * sum.broadcasts)
    fail("REQUEST accounting: " + std::to_string(requests) + " on the network, " + std::to_string(sum.requests_sent) +
         " counted by the ranks, " + std::to_string(sum.broadcasts) + " broadcasts");
  if (sum.tokens_sent != tokens || sum.tokens_received != tokens)
    fail("token accounting: " + std::to_string(tokens) + " on the network, " + std::to_string(sum.tokens_sent) +
         " sent, " + std::to_string(sum.tokens_received) + " received");
  // Every remote entry is one broadcast and one token; local entries cost nothing.
  if (sum.broadcasts != tokens || sum.local_acquisitions + tokens != entries)
    fail("entries: " + std::to_string(sum.local_acquisitions) + " local + " + std::to_string(tokens) +
         " tokens != " + std::to_string(entries) + ", or " + std::to_string(sum.broadcasts) + " broadcasts != tokens");
}

}  // namespace tally::sim
