// Fuzz target: the token decoder, token::well_formed and a requesting peer that
// receives the decoded token. The input chooses n, the owner and the payload size,
// and the rest is the buffer as it came off the wire. Whatever the bytes: no crash,
// a token that decodes (in either topology's framing) is re-encoded to the same
// bytes, a token well_formed accepts satisfies what it promises, and the peer either
// refuses it (bad_token, state unchanged) or holds exactly that token, the entries
// not carried set; a node of the node topology takes in exactly the tokens that
// decode in its framing, LN as they carry it.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <vector>

#include "core/cohort.hpp"
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
  const std::uint64_t copy_hop = in.below(24);          // the node token's receiver: its copy's move
  constexpr std::size_t header = 5;                     // the five bytes read above
  const std::uint8_t* rest = data + (size < header ? size : header);
  const std::size_t rest_size = size < header ? 0 : size - header;
  // Mostly the length every token of n entries has.
  std::vector<std::byte> buf(exact ? token_layout::bytes(static_cast<std::size_t>(n), payload_bytes) : rest_size);
  for (std::size_t i = 0; i < buf.size() && i < rest_size; ++i) buf[i] = std::byte(rest[i]);

  const token_frame flat{static_cast<std::size_t>(n), {}};
  std::vector<std::uint8_t> marks(static_cast<std::size_t>(n), 0);
  token t;
  std::vector<std::byte> payload(payload_bytes);
  const bool decoded = decode_token(buf, flat, self.index(), t, payload, marks);
  const bool ok = t.well_formed(n, self);
  FUZZ_CHECK(decoded || !ok);  // a refused buffer never yields an acceptable token
  FUZZ_CHECK(decoded == ok);   // the decoder checks the queue as well_formed does
  FUZZ_CHECK(std::all_of(marks.begin(), marks.end(), [](std::uint8_t m) { return m == 0; }));
  if (decoded) {
    std::vector<std::byte> again(token_layout::bytes(static_cast<std::size_t>(n), payload_bytes));
    again.resize(encode_token(flat, t, self.index(), payload, again));  // LN as it came
    FUZZ_CHECK(again == buf);
    for (rank_t r : t.queue) FUZZ_CHECK(t.ln[r.index()] == 0);  // not carried
    FUZZ_CHECK(t.ln[self.index()] == 0);
  }
  if (ok) {
    FUZZ_CHECK(t.ln.size() == static_cast<std::size_t>(n) && t.queue.size() < static_cast<std::size_t>(n));
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (rank_t r : t.queue) {
      FUZZ_CHECK(r.value() >= 0 && r.value() < n && r != self && !seen[r.index()]);
      seen[r.index()] = true;
    }
  }
  // The same bytes framed for the node topology, two ranks per node: the queue's
  // ranks stand for distinct nodes other than the receiver's, and a decoded token
  // re-encodes to the same bytes.
  std::vector<std::int32_t> node_of(2 * static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < node_of.size(); ++r) node_of[r] = static_cast<std::int32_t>(r / 2);
  const token_frame by_node{static_cast<std::size_t>(n), node_of};
  token tn;
  const bool node_decoded = decode_token(buf, by_node, self.index(), tn, payload, marks);
  if (node_decoded) {
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (rank_t r : tn.queue) {
      FUZZ_CHECK(by_node.valid(r.value()) && by_node.slot(r.value()) != self.index() && !seen[by_node.slot(r.value())]);
      seen[by_node.slot(r.value())] = true;
    }
    std::vector<std::byte> again(buf.size());
    std::vector<std::int32_t> queue;
    for (rank_t r : tn.queue) queue.push_back(r.value());
    FUZZ_CHECK(encode_token(by_node, tn.ln, queue, self.index(), payload, again) == buf.size() && again == buf);
    FUZZ_CHECK(tn.ln[self.index()] == 0);
    for (rank_t r : tn.queue) FUZZ_CHECK(tn.ln[by_node.slot(r.value())] == 0);  // not carried
  }
  FUZZ_CHECK(std::all_of(marks.begin(), marks.end(), [](std::uint8_t m) { return m == 0; }));
  // Node `self` of n (two ranks each), its rank 0 waiting for the token: it takes in
  // exactly what decodes, LN as carried (the entries not carried read 0: queued, and
  // its own RN - 1 = 0), and refuses anything else without changing a byte.
  if (n >= 2) {
    const cohort_layout layout = cohort_layout::of(n, 2);
    std::vector<std::uint64_t> mem(layout.bytes / 8 + 1);
    const std::vector<std::int32_t> members{2 * self.value(), 2 * self.value() + 1};
    cohort c({n, self.value(), 2, 1}, cohort_view::at(mem.data(), layout), node_of, members);
    c.reset((self.value() + 1) % n);
    FUZZ_CHECK(c.lock(0).act.broadcast);
    const std::vector<std::uint64_t> held = mem;
    std::array<std::int32_t, node_token::route> route{};
    route.fill(-1);
    route[0] = static_cast<std::int32_t>((self.index() + 1) % static_cast<std::size_t>(n));
    const token_trail first{1, route};
    const cohort_step s = c.on_token(0, tn.ln, tn.queue, first);
    if (node_decoded) {
      FUZZ_CHECK(s.ok() && c.in_cs() == 0 && c.holds_token());
      FUZZ_CHECK(std::equal(tn.ln.begin(), tn.ln.end(), c.state().ln));
      FUZZ_CHECK(c.state().h->tq_len == static_cast<std::int32_t>(tn.queue.size()));
    } else {
      FUZZ_CHECK(s.st == status::bad_token && mem == held);
    }
    // As the runtime takes it in, LN decoded straight into the node's state
    // (cohort::ln_inbox): the same outcome, and when it enters the same state.
    std::vector<std::uint64_t> mem2(layout.bytes / 8 + 1);
    cohort c2({n, self.value(), 2, 1}, cohort_view::at(mem2.data(), layout), node_of, members);
    c2.reset((self.value() + 1) % n);
    FUZZ_CHECK(c2.lock(0).act.broadcast);
    std::vector<rank_t> queue2;
    FUZZ_CHECK(decode_token(buf, by_node, self.index(), c2.ln_inbox(), queue2, payload, marks) == node_decoded);
    const cohort_step s2 = c2.on_token(0, c2.ln_inbox(), queue2, first);
    FUZZ_CHECK(s2.st == s.st && (!node_decoded || mem2 == mem));
  }
  // The same bytes as a whole node token (trail first) to a node whose LN copy is
  // from move `copy`: whatever decodes names a later move, a route of one node per
  // move (none the receiver at its head), a well-formed queue, LN 0 where not
  // carried; a full token re-encodes to the same bytes.
  {
    std::vector<ln_t> ln(static_cast<std::size_t>(n), 7);
    std::vector<rank_t> queue;
    std::uint64_t hop = 0;
    std::array<std::int32_t, node_token::route> route{};
    const bool taken = decode_node_token(buf, by_node, self.index(), copy_hop, ln, queue, hop, route, payload, marks);
    FUZZ_CHECK(std::all_of(marks.begin(), marks.end(), [](std::uint8_t m) { return m == 0; }));
    if (taken) {
      FUZZ_CHECK(hop > copy_hop && route[0] != self.value() && queue.size() < static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < node_token::route; ++i)
        FUZZ_CHECK(i < hop ? route[i] >= 0 && route[i] < n : route[i] == -1);
      FUZZ_CHECK(ln[self.index()] == 0);
      for (rank_t r : queue) FUZZ_CHECK(by_node.valid(r.value()) && ln[by_node.slot(r.value())] == 0);
      if (node_token_form(buf) == node_token::full) {
        std::vector<std::int32_t> q;
        for (rank_t r : queue) q.push_back(r.value());
        std::vector<std::byte> again(node_token::bytes(static_cast<std::size_t>(n), payload_bytes));
        // since = hop + 1: no delta can serve it, so the encoder writes the full body.
        again.resize(encode_node_token(by_node, ln, q, self.index(), {hop, route}, hop + 1, payload, again));
        FUZZ_CHECK(again == buf);
      }
    }
  }

  // A peer that asked for the token: it enters with a well-formed one and refuses,
  // unchanged, anything else.
  const rank_t owner((self.value() + 1) % n);
  peer p(self, n, owner);
  if (self == owner) return 0;  // n == 1: nobody else could send it
  FUZZ_CHECK(p.lock().act.what == action::kind::broadcast_request);
  const peer before = p;
  token expect = t;  // the entries the wire does not carry, as the peer sets them
  if (ok) {
    for (rank_t r : expect.queue) expect.ln[r.index()] = 0;
    expect.ln[self.index()] = low32(p.rn(self)) - 1;
  }
  const step s = p.on_token(t);
  if (ok) {
    FUZZ_CHECK(s.ok() && p.mode() == mode::in_cs && p.held() && *p.held() == expect);
  } else {
    FUZZ_CHECK(s.st == status::bad_token && p == before);
  }
  return 0;
}
