// Fuzz target: the token decoder, token::well_formed and a requesting peer that
// receives the decoded token. The input chooses n, the owner and the payload size,
// and the rest is the buffer as it came off the wire. Whatever the bytes: no crash,
// a token that decodes is re-encoded to the same bytes and widens to the same low
// 32 bits of LN, a token well_formed accepts satisfies what it promises, and the
// peer either refuses it (bad_token, state unchanged) or holds exactly that token.
#include <cstdlib>
#include <vector>

#include "core/protocol.hpp"
#include "core/token_codec.hpp"
#include "core/token_layout.hpp"
#include "input.hpp"

using namespace tally::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tally::fuzz::input in(data, size);
  const std::int32_t n = 1 + static_cast<std::int32_t>(in.below(64));
  const rank_t self(static_cast<std::int32_t>(in.below(static_cast<std::uint32_t>(n))));
  const std::size_t payload_bytes = in.below(16);
  const bool exact = in.take<std::uint8_t>() % 8 != 0;  // mostly the right size
  constexpr std::size_t header = 4;  // the four bytes read above
  const std::uint8_t* rest = data + (size < header ? size : header);
  const std::size_t rest_size = size < header ? 0 : size - header;
  // Mostly a length some token has: its queue length from the next input byte.
  const std::size_t queued = (rest_size > 0 ? rest[0] : 0) % static_cast<std::size_t>(n);
  std::vector<std::byte> buf(exact ? token_layout::bytes(static_cast<std::size_t>(n), payload_bytes, queued)
                                   : rest_size);
  for (std::size_t i = 0; i < buf.size() && i < rest_size; ++i) buf[i] = std::byte(rest[i]);

  token t;
  std::vector<std::byte> payload(payload_bytes);
  const bool decoded = decode_token(buf, static_cast<std::size_t>(n), t, payload);
  const bool ok = t.well_formed(n, self);
  FUZZ_CHECK(decoded || !ok);  // a refused buffer never yields an acceptable token
  if (decoded) {
    std::vector<std::byte> again(token_layout::max_bytes(static_cast<std::size_t>(n), payload_bytes));
    again.resize(encode_token(t, payload, again));  // LN as it came: 32-bit values
    FUZZ_CHECK(again == buf);
  }
  if (ok) {
    FUZZ_CHECK(t.ln.size() == static_cast<std::size_t>(n) && t.queue.size() < static_cast<std::size_t>(n));
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (rank_t r : t.queue) {
      FUZZ_CHECK(r.value() >= 0 && r.value() < n && r != self && !seen[r.index()]);
      seen[r.index()] = true;
    }
  }

  // A peer that asked for the token: it enters with a well-formed one and refuses,
  // unchanged, anything else.
  const rank_t owner((self.value() + 1) % n);
  peer p(self, n, owner);
  if (self == owner) return 0;  // n == 1: nobody else could send it
  FUZZ_CHECK(p.lock().act.what == action::kind::broadcast_request);
  const peer before = p;
  if (decoded) {  // as the runtime does: LN widened against the receiver's RN
    const std::vector<seq_t> wire = t.ln;
    widen_ln(t.ln, p.rn());
    for (std::size_t j = 0; j < wire.size(); ++j)
      FUZZ_CHECK(static_cast<std::uint32_t>(t.ln[j].value()) == wire[j].value());
  }
  const step s = p.on_token(t);
  if (ok) {
    FUZZ_CHECK(s.ok() && p.mode() == mode::in_cs && p.held() && *p.held() == t);
  } else {
    FUZZ_CHECK(s.st == status::bad_token && p == before);
  }
  return 0;
}
