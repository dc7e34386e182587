#include "sim/models/two_level.hpp"

#include "core/protocol.hpp"

namespace tally::sim {

two_level::two_level(std::int32_t n, const std::vector<std::int32_t>&, const run_config& cfg)
    : r_(cfg.ranks_per_node > 0 ? cfg.ranks_per_node : 1), k_(0), local_grant_(cfg.local_grant), form_(cfg.node_token) {
  if (n % r_ != 0)
    throw protocol::bad_argument("two-level needs --ranks-per-node to divide --ranks (" + std::to_string(n) +
                                 " ranks, " + std::to_string(r_) + " per node)");
  if (cfg.pass_bound < 1) throw protocol::bad_argument("two-level needs --pass-bound >= 1");
  k_ = n / r_;
  node_of_.resize(static_cast<std::size_t>(n));
  ranks_.resize(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    node_of_[static_cast<std::size_t>(i)] = i / r_;
    ranks_[static_cast<std::size_t>(i)] = i;
  }
  const protocol::cohort_layout layout = protocol::cohort_layout::of(k_, r_);
  blocks_.resize(static_cast<std::size_t>(k_));
  nodes_.reserve(static_cast<std::size_t>(k_));
  for (std::int32_t k = 0; k < k_; ++k) {
    std::vector<std::uint64_t>& b = blocks_[static_cast<std::size_t>(k)];
    b.assign((layout.bytes + 7) / 8, 0);
    const std::span<const std::int32_t> members(ranks_.data() + static_cast<std::ptrdiff_t>(k) * r_,
                                                static_cast<std::size_t>(r_));
    nodes_.emplace_back(protocol::cohort_shape{k_, k, r_, cfg.pass_bound}, protocol::cohort_view::at(b.data(), layout),
                        node_of_, members);
    nodes_.back().reset(0);
  }
  news_.resize(static_cast<std::size_t>(k_));
  marks_.assign(static_cast<std::size_t>(k_), 0);
}

std::uint64_t two_level::local_entries(const raw_results&) const noexcept {
  std::uint64_t x = 0;
  for (const protocol::cohort& c : nodes_)
    for (std::int32_t l = 0; l < r_; ++l) x += c.counters_of(l).local_acquisitions;  // grants included
  return x;
}

void two_level::check(const protocol::cohort_step& s, std::int32_t rank, const char* what) const {
  if (!s.ok())
    fail(std::string(what) + " at rank " + std::to_string(rank) +
         " refused by the protocol core: " + protocol::describe(s.st));
}

void two_level::fail(const std::string& why) { throw invariant_violation("two-level: " + why); }

void two_level::finish_checks(std::uint64_t requests, std::uint64_t tokens, std::uint64_t entries) const {
  if (flight_to_ >= 0) fail("the run ended with the token in flight");
  std::int32_t holders = 0;
  protocol::counters sum{};
  for (std::int32_t k = 0; k < k_; ++k) {
    const protocol::cohort& c = nodes_[static_cast<std::size_t>(k)];
    if (c.in_cs() >= 0 || c.requesting() || c.queued_count() != 0)
      fail("node " + std::to_string(k) + " is not idle at the end");
    holders += c.holds_token() ? 1 : 0;
    for (std::int32_t l = 0; l < r_; ++l) {
      const protocol::counters& t = c.counters_of(l);
      protocol::accumulate(sum, t);
    }
  }
  if (holders != 1) fail(std::to_string(holders) + " nodes hold the token at the end");
  if (sum.acquisitions != entries)
    fail("the nodes count " + std::to_string(sum.acquisitions) + " entries, the scheduler " + std::to_string(entries));
  const auto others = static_cast<std::uint64_t>(k_ - 1);
  if (sum.requests_sent != requests || sum.requests_sent != others * sum.broadcasts)
    fail("REQUEST accounting: " + std::to_string(requests) + " on the network, " + std::to_string(sum.requests_sent) +
         " counted by the nodes, " + std::to_string(sum.broadcasts) + " broadcasts");
  if (sum.tokens_sent != tokens || sum.tokens_received != tokens)
    fail("token accounting: " + std::to_string(tokens) + " on the network, " + std::to_string(sum.tokens_sent) +
         " sent, " + std::to_string(sum.tokens_received) + " received");
  if (sum.local_handoffs_sent != sum.local_handoffs_received)
    fail("local grants: " + std::to_string(sum.local_handoffs_sent) + " given, " +
         std::to_string(sum.local_handoffs_received) + " received");
  // Each entry is a re-entry or a local grant (both local_acquisitions) or follows a
  // token (no withdrawals here); no more tokens than node requests.
  if (sum.local_acquisitions + sum.tokens_received != entries)
    fail(std::to_string(sum.local_acquisitions) + " local entries + " + std::to_string(sum.tokens_received) +
         " tokens != " + std::to_string(entries) + " entries");
  if (sum.tokens_sent > sum.broadcasts)
    fail(std::to_string(sum.tokens_sent) + " tokens for " + std::to_string(sum.broadcasts) + " node requests");
}

}  // namespace tally::sim
