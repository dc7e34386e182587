// Fuzz target: one protocol::peer fed an arbitrary sequence of calls and messages,
// fabricated ones included (REQUESTs from any id with any sequence number, tokens
// of any shape, take_token without an action). The core must refuse what it cannot
// accept and never break its own contract: a refused call changes nothing, every
// action is one the caller can carry out, RN and the counters never go back, the
// token is held exactly in the states that say so, and one take per send_token.
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/protocol.hpp"
#include "input.hpp"

using namespace tally::protocol;

namespace {

token fabricate(tally::fuzz::input& in, std::int32_t n) {
  token t;
  const std::int32_t len = n - 1 + static_cast<std::int32_t>(in.below(3));  // n-1, n, n+1
  for (std::int32_t j = 0; j < len; ++j) t.ln.push_back(in.take<std::uint8_t>() % 8);
  const std::uint32_t q = in.below(static_cast<std::uint32_t>(n) + 1);
  for (std::uint32_t k = 0; k < q; ++k)
    t.queue.push_back(rank_t(static_cast<std::int32_t>(in.below(static_cast<std::uint32_t>(n) + 2)) - 1));
  return t;
}

bool counters_grew(const counters& a, const counters& b) {  // b later than a
  return b.acquisitions >= a.acquisitions && b.local_acquisitions >= a.local_acquisitions &&
         b.requests_sent >= a.requests_sent && b.requests_received >= a.requests_received &&
         b.tokens_sent >= a.tokens_sent && b.tokens_received >= a.tokens_received && b.broadcasts >= a.broadcasts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tally::fuzz::input in(data, size);
  const std::int32_t n = 1 + static_cast<std::int32_t>(in.below(6));
  const rank_t self(static_cast<std::int32_t>(in.below(static_cast<std::uint32_t>(n))));
  const rank_t owner(static_cast<std::int32_t>(in.below(static_cast<std::uint32_t>(n))));
  peer p(self, n, owner);
  std::optional<rank_t> dest;  // of a send_token action not yet taken
  for (int steps = 0; steps < 256 && !in.empty(); ++steps) {
    const peer before = p;
    std::optional<step> s;
    switch (in.below(7)) {
      case 0: s = p.lock(); break;
      case 1: s = p.try_lock(); break;
      case 2: s = p.withdraw(); break;
      case 3: s = p.unlock(); break;
      case 4: {
        const rank_t from(static_cast<std::int32_t>(in.below(static_cast<std::uint32_t>(n) + 2)) - 1);
        s = p.on_request(from, seq_t(in.take<std::uint8_t>() % 8));
        break;
      }
      case 5: s = p.on_token(fabricate(in, n)); break;
      default: {
        const std::optional<token> t = p.take_token();
        FUZZ_CHECK(t.has_value() == dest.has_value());
        if (t) FUZZ_CHECK(t->well_formed(n, *dest));  // as its receiver will check it
        dest.reset();
        FUZZ_CHECK(!p.outgoing());
        continue;
      }
    }
    if (!s->ok()) {
      FUZZ_CHECK(p == before);  // "Everything but ok means the call changed nothing."
      continue;
    }
    switch (s->act.what) {
      case action::kind::none: break;
      case action::kind::broadcast_request: FUZZ_CHECK(p.mode() == mode::requesting && s->act.seq == p.rn(self)); break;
      case action::kind::send_token:
        FUZZ_CHECK(s->act.to != self && s->act.to.value() >= 0 && s->act.to.value() < n);
        FUZZ_CHECK(p.outgoing() && !p.holds_token() && !dest);
        dest = s->act.to;
        break;
    }
    // The token is here in the CS, never in flight and here at once.
    FUZZ_CHECK(p.mode() != mode::in_cs || p.holds_token());
    FUZZ_CHECK(!(p.holds_token() && p.outgoing()));
    if (p.holds_token()) FUZZ_CHECK(p.held()->well_formed(n, self));
    for (std::int32_t j = 0; j < n; ++j) {
      const rank_t r(j);
      FUZZ_CHECK(p.rn(r).value() >= before.rn(r).value());
    }
    FUZZ_CHECK(counters_grew(before.counters(), p.counters()));
  }
  return 0;
}
