// The token's byte codec (core/token_codec.hpp): a round trip at several sizes,
// queue lengths and receivers, in both topologies' framing, into a token or a
// caller's LN span; the layout's offsets;
// the exact little-endian bytes; and the inputs it must refuse (a length that is no token's, a queue naming the
// receiver, an entry out of range or one LN index twice, a queue that loops, padding
// that is not zero) by yielding a token that well_formed rejects. The node
// topology's token: a delta patches the receiver's LN copy exactly, the full body
// where no delta is exact or shorter, and what no sender writes is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace {

using tally::protocol::decode_node_token;
using tally::protocol::decode_token;
using tally::protocol::encode_node_token;
using tally::protocol::encode_token;
using tally::protocol::ln_t;
using tally::protocol::node_token;
using tally::protocol::node_token_form;
using tally::protocol::rank_t;
using tally::protocol::token;
using tally::protocol::token_form;
using tally::protocol::token_frame;
using tally::protocol::token_layout;

// n entries of LN; the queue: `queued` ranks counting down from n - 1, skipping `to`.
token make(std::size_t n, std::size_t queued, std::size_t to) {
  token t;
  for (std::size_t j = 0; j < n; ++j) t.ln.push_back(static_cast<ln_t>(1000 * j + 7));
  for (std::size_t j = n; j-- > 0 && t.queue.size() < queued;)
    if (j != to) t.queue.push_back(rank_t(static_cast<std::int32_t>(j)));
  return t;
}

// What the receiver sees: the carried entries as sent, the others 0.
token carried(token t, std::size_t to) {
  for (rank_t r : t.queue) t.ln[r.index()] = 0;
  t.ln[to] = 0;
  return t;
}

TEST(TokenCodec, RoundTripsAtSeveralSizesQueuesAndReceivers) {
  for (std::size_t n : {1u, 2u, 3u, 5u, 64u}) {
    std::vector<std::uint8_t> marks(n, 0);
    const token_frame f{n, {}};
    for (std::size_t p : {0u, 1u, 13u}) {
      for (std::size_t q : {std::size_t{0}, (n - 1) / 2, n - 1}) {
        for (std::size_t to : {std::size_t{0}, n - 1}) {
          const token t = make(n, q, to);
          ASSERT_EQ(t.queue.size(), q);
          std::vector<std::byte> payload(p), back(p);
          for (std::size_t i = 0; i < p; ++i) payload[i] = std::byte(i * 31 + 1);
          std::vector<std::byte> buf(token_layout::bytes(n, p));
          ASSERT_EQ(encode_token(f, t, to, payload, buf), buf.size());
          ASSERT_EQ(buf.size(), 4 * n + (p + 3) / 4 * 4);  // whatever q is
          token u;
          ASSERT_TRUE(decode_token(buf, f, to, u, back, marks)) << n << " " << p << " " << q << " " << to;
          EXPECT_EQ(u, carried(t, to));
          EXPECT_EQ(back, payload);
          EXPECT_TRUE(u.well_formed(static_cast<std::int32_t>(n), rank_t(static_cast<std::int32_t>(to))));
          EXPECT_EQ(marks, std::vector<std::uint8_t>(n, 0));
          std::vector<ln_t> ln(n, 9);  // the same into a caller's LN span
          std::vector<rank_t> queue;
          ASSERT_TRUE(decode_token(buf, f, to, ln, queue, back, marks));
          EXPECT_EQ(ln, u.ln);
          EXPECT_EQ(queue, u.queue);
        }
      }
    }
  }
}

// Node topology: LN by node, the queue names ranks; 3 nodes of 2 ranks.
TEST(TokenCodec, QueueEntriesStandForTheirNodesLn) {
  const std::vector<std::int32_t> node_of{0, 0, 1, 1, 2, 2};
  const token_frame f{3, node_of};
  std::vector<std::uint8_t> marks(3, 0);
  const std::vector<ln_t> ln{5, 6, 7};
  const std::vector<std::int32_t> queue{5};  // node 2's rank 5 waits; the token goes to node 1
  std::vector<std::byte> buf(token_layout::bytes(3));
  ASSERT_EQ(encode_token(f, ln, queue, 1, {}, buf), 12u);
  // The same from a token (the flat runtime's form) gives the same bytes.
  token t;
  t.ln = ln;
  t.queue = {rank_t(5)};
  std::vector<std::byte> flat_buf(buf.size());
  ASSERT_EQ(encode_token(f, t, 1, {}, flat_buf), 12u);
  EXPECT_EQ(flat_buf, buf);
  std::int32_t words[3];
  std::memcpy(words, buf.data(), sizeof words);
  EXPECT_EQ(words[0], 5);   // LN[0]: node 0's, the only one carried
  EXPECT_EQ(words[1], 5);   // the receiver's slot: the queue's head, rank 5
  EXPECT_EQ(words[2], -1);  // node 2's slot: nothing after rank 5
  token u;
  ASSERT_TRUE(decode_token(buf, f, 1, u, {}, marks));
  EXPECT_EQ(u.ln, (std::vector<ln_t>{5, 0, 0}));
  EXPECT_EQ(u.queue, t.queue);
  // Slots {node 0, node 1 (the receiver), node 2}: two ranks of one node, a rank of
  // the receiver's node, ranks out of range, a list that loops back on itself.
  for (std::vector<std::int32_t> w : {std::vector{0, 4, 5}, std::vector{0, 3, -1}, std::vector{0, 6, -1},
                                      std::vector{0, -2, -1}, std::vector{4, 0, 1}, std::vector{0, 4, 4}}) {
    std::vector<std::byte> bad(buf.size());
    std::memcpy(bad.data(), w.data(), 12);
    EXPECT_FALSE(decode_token(bad, f, 1, u, {}, marks)) << w[0] << " " << w[1] << " " << w[2];
    EXPECT_EQ(u.queue.size(), 3u);  // n entries: what cohort::on_token refuses
    EXPECT_EQ(marks, std::vector<std::uint8_t>(3, 0));
  }
}

TEST(TokenCodec, FieldsSitAtTheLayoutsOffsets) {
  token t = make(4, 2, 0);  // queue 3, 2; receiver 0: LN[1] alone is carried
  const std::byte payload[] = {std::byte{9}};
  std::vector<std::byte> buf(token_layout::bytes(4, 1));
  ASSERT_EQ(encode_token(token_frame{4, {}}, t, 0, payload, buf), 4 * 4 + 4u);
  std::int32_t slot[4];
  for (std::size_t j = 0; j < 4; ++j) std::memcpy(&slot[j], buf.data() + token_layout::slot_offset(j), 4);
  EXPECT_EQ(slot[0], 3);  // the receiver's slot: the head
  EXPECT_EQ(slot[3], 2);  // after 3 comes 2
  EXPECT_EQ(slot[2], token_layout::end);
  EXPECT_EQ(slot[1], 1007);  // LN[1]
  EXPECT_EQ(buf[token_layout::payload_offset(4)], std::byte{9});
}

// The wire is little-endian on every host: the exact bytes of one token.
TEST(TokenCodec, IntegersAreLittleEndianBytes) {
  token t;
  t.ln = {0x05060708u, 0xb0a09080u, 3};
  t.queue = {rank_t(2)};
  const std::byte payload[] = {std::byte{0xaa}};
  std::vector<std::uint8_t> marks(3, 0);
  std::vector<std::byte> buf(token_layout::bytes(3, 1));
  ASSERT_EQ(encode_token(token_frame{3, {}}, t, 1, payload, buf), buf.size());
  const std::vector<int> want = {0x08, 0x07, 0x06, 0x05,   // slot 0: LN[0]
                                 0x02, 0x00, 0x00, 0x00,   // slot 1, the receiver's: head 2
                                 0xff, 0xff, 0xff, 0xff,   // slot 2, queued: the end, -1
                                 0xaa, 0x00, 0x00, 0x00};  // payload, padded to 4
  ASSERT_EQ(buf.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(std::to_integer<int>(buf[i]), want[i]) << "byte " << i;
  token back;
  std::byte out[1];
  ASSERT_TRUE(decode_token(buf, token_frame{3, {}}, 1, back, out, marks));
  EXPECT_EQ(back.ln, (std::vector<ln_t>{0x05060708u, 0, 0}));
  EXPECT_EQ(back.queue, t.queue);
  EXPECT_EQ(out[0], std::byte{0xaa});
}

TEST(TokenCodec, RefusesWhatNoTokenIs) {
  const std::size_t n = 4;
  const token_frame f{n, {}};
  std::vector<std::uint8_t> marks(n, 0);
  std::vector<std::byte> buf(token_layout::bytes(n) + 8);
  const std::size_t len = encode_token(f, make(n, 1, 0), 0, {}, std::span(buf).first(token_layout::bytes(n)));
  token u;
  const auto refused = [&](std::span<const std::byte> b, std::span<std::byte> payload, std::size_t self = 0) {
    const bool r =
        !decode_token(b, f, self, u, payload, marks) && !u.well_formed(static_cast<std::int32_t>(n), rank_t(0));
    // The same into a caller's LN span (cohort::ln_inbox): all 0, and a queue of n
    // entries, more than any token's (cohort::on_token refuses it).
    std::vector<ln_t> ln(n, 9);
    std::vector<rank_t> queue;
    const bool into_span =
        !decode_token(b, f, self, ln, queue, payload, marks) && ln == std::vector<ln_t>(n, 0) && queue.size() == n;
    return r && into_span && marks == std::vector<std::uint8_t>(n, 0);
  };
  ASSERT_TRUE(decode_token(std::span(buf).first(len), f, 0, u, {}, marks));
  EXPECT_TRUE(refused(std::span(buf).first(len - 1), {}));  // not a whole entry
  EXPECT_TRUE(refused(std::span(buf).first(len - 4), {}));  // one entry short
  EXPECT_TRUE(refused(std::span(buf).first(len + 4), {}));  // one entry long
  EXPECT_TRUE(refused(std::span(buf).first(len), {}, n));   // a receiver out of range
  // The slots of a token for rank 0 whose queue is q, the others' LN 0.
  const auto with_queue = [&](std::vector<std::int32_t> q) {
    std::vector<std::int32_t> slot(n, 0);
    std::size_t link = 0;
    for (std::int32_t e : q) {
      slot[link] = e;
      link = static_cast<std::size_t>(e);
      if (link >= n) return slot;  // out of range: nothing follows it
    }
    slot[link] = token_layout::end;
    return slot;
  };
  const auto bytes_of = [&](std::vector<std::int32_t> slot) {
    std::vector<std::byte> b(token_layout::bytes(n));
    std::memcpy(b.data(), slot.data(), b.size());
    return b;
  };
  EXPECT_TRUE(refused(bytes_of({2, 0, 3, 1}), {}));            // 2, 3, 1, 0: back to the receiver
  EXPECT_TRUE(refused(bytes_of({1, 2, 3, 1}), {}));            // 1, 2, 3, 1: a loop
  EXPECT_TRUE(refused(bytes_of({2, 0, 2, 0}), {}));            // 2, 2: one rank twice
  EXPECT_TRUE(refused(bytes_of(with_queue({4})), {}));         // out of range
  EXPECT_TRUE(refused(bytes_of(with_queue({-2})), {}));        // negative, not the end
  EXPECT_FALSE(refused(bytes_of(with_queue({1, 2, 3})), {}));  // the longest queue
  EXPECT_FALSE(refused(bytes_of(with_queue({})), {}));
  // A one-byte payload pads to four; a pad byte that is not zero is refused.
  std::vector<std::byte> payload(1, std::byte{7}), with(token_layout::bytes(n, 1));
  ASSERT_EQ(encode_token(f, make(n, 0, 0), 0, payload, with), with.size());
  EXPECT_TRUE(decode_token(with, f, 0, u, payload, marks));
  with[token_layout::payload_offset(n) + 1] = std::byte{1};
  EXPECT_TRUE(refused(with, payload));
}

// The node topology's token (node_token): K = 64 nodes, one rank each. The receiver,
// node 3, keeps its LN copy from move 6; the token is at move 10, the last four
// moves sent by nodes 5, 1, 5 and 6, which changed their own entries; node 7 waits
// in the queue.
struct node_case {
  static constexpr std::size_t k = 64, to = 3;
  std::vector<std::int32_t> node_of = [] {
    std::vector<std::int32_t> v(k);
    for (std::size_t r = 0; r < k; ++r) v[r] = static_cast<std::int32_t>(r);
    return v;
  }();
  token_frame f{k, node_of};
  std::vector<ln_t> copy, now;
  std::vector<std::int32_t> queue{7};
  std::array<std::int32_t, node_token::route> route{};
  std::uint64_t hop = 10;
  std::vector<std::uint8_t> marks = std::vector<std::uint8_t>(k, 0);
  node_case() : copy(k), now(k) {
    for (std::size_t j = 0; j < k; ++j) copy[j] = static_cast<ln_t>(3 * j + 1);
    copy[to] = 0;  // not carried to it when it got the token last
    now = copy;
    now[5] += 2;
    now[1] += 1;
    now[6] += 1;
    now[7] = 0;   // queued
    now[to] = 0;  // the receiver
    route.fill(-1);
    const std::int32_t moves[] = {5, 1, 5, 6, 3, 2, 4, 9, 5, 1};  // moves 10, 9, ..., 1
    for (std::size_t i = 0; i < 10; ++i) route[i] = moves[i];
  }
  std::vector<std::byte> encode(std::uint64_t since, token_form form = token_form::shorter) const {
    std::vector<std::byte> b(node_token::bytes(k));
    b.resize(encode_node_token(f, now, queue, to, {hop, route}, since, {}, b, form));
    return b;
  }
  // Decodes b into the receiver's copy from move `at`; true iff it decoded to `now`.
  bool takes(const std::vector<std::byte>& b, std::uint64_t at = 6) {
    std::vector<ln_t> ln = copy;
    std::vector<rank_t> q;
    std::uint64_t h = 0;
    std::array<std::int32_t, node_token::route> r{};
    const bool ok = decode_node_token(b, f, to, at, ln, q, h, r, {}, marks);
    EXPECT_TRUE(std::all_of(marks.begin(), marks.end(), [](std::uint8_t m) { return m == 0; }));
    return ok && ln == now && q == std::vector<rank_t>{rank_t(7)} && h == hop && r == route;
  }
};

TEST(NodeToken, ADeltaCarriesTheSendersSinceTheReceiversCopyAndPatchesIt) {
  node_case c;
  const std::vector<std::byte> b = c.encode(6);
  EXPECT_EQ(node_token_form(b), 3);  // nodes 5, 1 and 6 (5 once)
  EXPECT_EQ(b.size(), node_token::delta_bytes(1, 3));
  EXPECT_LT(b.size(), node_token::full_bytes(node_case::k));
  EXPECT_TRUE(c.takes(b));
  // An older `since` (a REQUEST the sender has not seen yet) costs pairs, not
  // exactness: from move 2, nodes 5, 1, 6, 2, 4 and 9 (node 3 is the receiver).
  const std::vector<std::byte> older = c.encode(2);
  EXPECT_EQ(node_token_form(older), 6);
  EXPECT_TRUE(c.takes(older));
  // The trail's bytes: the hop, then the route, little-endian.
  EXPECT_EQ(std::to_integer<int>(b[0]), 10);
  EXPECT_EQ(std::to_integer<int>(b[8]), 5);
  EXPECT_EQ(std::to_integer<int>(b[12]), 1);
  EXPECT_EQ(std::to_integer<int>(b[8 + 4 * 10]), 0xff);  // move 0: -1
}

TEST(NodeToken, TheFullBodyWhereNoDeltaIsExactOrShorter) {
  node_case c;
  // The route remembers 16 moves: a copy from before them gets the whole LN.
  c.hop = 30;
  EXPECT_EQ(node_token_form(c.encode(13)), node_token::full);
  c.hop = 10;
  EXPECT_EQ(node_token_form(c.encode(6, token_form::full)), node_token::full);
  EXPECT_TRUE(c.takes(c.encode(6, token_form::full)));
  // The full body overwrites the copy, whatever it held.
  std::fill(c.copy.begin(), c.copy.end(), ln_t{99});
  EXPECT_TRUE(c.takes(c.encode(0, token_form::full), 0));
  // Few nodes: the delta is longer than LN itself, so `shorter` sends LN and
  // `delta` the delta.
  node_case small;
  small.f.n = 8;
  small.copy.resize(8);
  small.now.resize(8);
  small.node_of.resize(8);
  small.f.node_of = small.node_of;
  EXPECT_EQ(node_token_form(small.encode(6)), node_token::full);
  EXPECT_EQ(node_token_form(small.encode(6, token_form::delta)), 3);
}

TEST(NodeToken, RefusesWhatNoSenderWrites) {
  node_case c;
  const std::vector<std::byte> good = c.encode(6);
  ASSERT_TRUE(c.takes(good));
  EXPECT_FALSE(c.takes(good, 10));  // the receiver's copy is from this very move
  EXPECT_FALSE(c.takes(good, 5));   // its copy is older than the delta assumes
  const auto with = [&](std::size_t offset, std::int32_t v) {
    std::vector<std::byte> b = good;
    std::memcpy(b.data() + offset, &v, 4);
    return b;
  };
  const std::size_t pairs = node_token::trail_bytes + 12 + 4;   // after since, q, one rank
  EXPECT_FALSE(c.takes(with(pairs, 2)));                        // a node the window does not name
  EXPECT_FALSE(c.takes(with(pairs, 1)));                        // node 1 twice
  EXPECT_FALSE(c.takes(with(pairs, 3)));                        // the receiver
  EXPECT_FALSE(c.takes(with(8, 3)));                            // the receiver made the last move
  EXPECT_FALSE(c.takes(with(8, 64)));                           // a node out of range
  EXPECT_FALSE(c.takes(with(8 + 4 * 12, 2)));                   // a sender of a move before move 1
  EXPECT_FALSE(c.takes(with(8 + 4 * 16, 4)));                   // four pairs claimed, three there
  EXPECT_FALSE(c.takes(with(node_token::trail_bytes + 8, 2)));  // two queued, one there
  std::vector<std::byte> cut = good;
  cut.pop_back();
  EXPECT_FALSE(c.takes(cut));
  EXPECT_FALSE(c.takes(std::vector<std::byte>(8)));  // shorter than the trail
}

}  // namespace
