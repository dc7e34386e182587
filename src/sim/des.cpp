#include "sim/des.hpp"

#include <algorithm>
#include <cmath>

namespace tally::sim {

const char* to_string(msg_kind k) noexcept {
  switch (k) {
    case msg_kind::request: return "request";
    case msg_kind::token: return "token";
    case msg_kind::reply: return "reply";
    case msg_kind::grant: return "grant";
    case msg_kind::release: return "release";
  }
  return "?";
}

namespace {
std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
}  // namespace

rng::rng(std::uint64_t seed) noexcept {
  for (auto& w : s_) w = splitmix64(seed);
}

std::uint64_t rng::next() noexcept {
  const std::uint64_t out = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return out;
}

ps_t duration_dist::sample(rng& r) const noexcept {
  switch (kind) {
    case shape::fixed: return a;
    case shape::exponential: return static_cast<ps_t>(std::llround(-static_cast<double>(a) * std::log1p(-r.uniform())));
    case shape::uniform: return a + static_cast<ps_t>(std::llround(r.uniform() * static_cast<double>(b - a)));
  }
  return a;
}

namespace detail {

void event_heap::push(const event& e) {
  h_.push_back(e);
  std::size_t i = h_.size() - 1;
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!before(e.t, e.tie, h_[parent].t, h_[parent].tie)) break;
    h_[i] = h_[parent];
    i = parent;
  }
  h_[i] = e;
}

event event_heap::pop() {
  const event top = h_.front();
  const event last = h_.back();
  h_.pop_back();
  const std::size_t n = h_.size();
  if (n == 0) return top;
  std::size_t i = 0;
  for (;;) {
    const std::size_t first = 4 * i + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = std::min(first + 4, n);
    for (std::size_t c = first + 1; c < end; ++c)
      if (before(h_[c].t, h_[c].tie, h_[best].t, h_[best].tie)) best = c;
    if (!before(h_[best].t, h_[best].tie, last.t, last.tie)) break;
    h_[i] = h_[best];
    i = best;
  }
  h_[i] = last;
  return top;
}

}  // namespace detail
}  // namespace tally::sim
