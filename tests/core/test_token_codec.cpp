// The token's byte codec (core/token_codec.hpp): a round trip at several sizes and
// queue lengths, the layout's offsets, the exact little-endian bytes, LN restored
// from 32 bits across the 2^32 boundary, and the inputs it must refuse (a length
// that is no token's, a queue of n or more, padding that is not zero) by yielding a
// token that well_formed rejects.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace {

using tally::protocol::decode_token;
using tally::protocol::encode_token;
using tally::protocol::rank_t;
using tally::protocol::seq_t;
using tally::protocol::token;
using tally::protocol::token_layout;
using tally::protocol::widen_ln;

token make(std::size_t n, std::size_t queued) {
  token t;
  for (std::size_t j = 0; j < n; ++j) t.ln.push_back(seq_t(1000 * j + 7));
  for (std::size_t k = 0; k < queued; ++k) t.queue.push_back(rank_t(static_cast<std::int32_t>(n - 1 - k)));
  return t;
}

TEST(TokenCodec, RoundTripsAtSeveralSizes) {
  for (std::size_t n : {1u, 2u, 3u, 5u, 64u}) {
    for (std::size_t p : {0u, 1u, 13u}) {
      for (std::size_t q : {std::size_t{0}, n / 2, n - 1}) {
        const token t = make(n, q);
        std::vector<std::byte> payload(p), back(p);
        for (std::size_t i = 0; i < p; ++i) payload[i] = std::byte(i * 31 + 1);
        std::vector<std::byte> buf(token_layout::max_bytes(n, p));
        const std::size_t len = encode_token(t, payload, buf);
        ASSERT_EQ(len, token_layout::bytes(n, p, q));
        ASSERT_EQ(len % token_layout::unit, 0u);
        token u;
        ASSERT_TRUE(decode_token(std::span(buf).first(len), n, u, back)) << n << " " << p << " " << q;
        widen_ln(u.ln, t.ln);  // a receiver whose RN equals LN
        EXPECT_EQ(u, t);
        EXPECT_EQ(back, payload);
        EXPECT_TRUE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0)));
      }
    }
  }
}

TEST(TokenCodec, FieldsSitAtTheLayoutsOffsets) {
  const token t = make(3, 2);
  const std::byte payload[] = {std::byte{9}};
  std::vector<std::byte> buf(token_layout::max_bytes(3, 1));
  ASSERT_EQ(encode_token(t, payload, buf), 3 * 4 + 4 + 2 * 4u);
  std::uint32_t ln1;
  std::int32_t q0;
  std::memcpy(&ln1, buf.data() + token_layout::ln_entry, sizeof ln1);
  std::memcpy(&q0, buf.data() + token_layout::queue_offset(3, 1), sizeof q0);
  EXPECT_EQ(ln1, 1007u);
  EXPECT_EQ(buf[token_layout::payload_offset(3)], std::byte{9});
  EXPECT_EQ(q0, 2);
}

// The wire is little-endian on every host: the exact bytes of one token.
TEST(TokenCodec, IntegersAreLittleEndianBytes) {
  token t;
  t.ln = {seq_t(0x0102030405060708u), seq_t(0xf0e0d0c0b0a09080u)};
  t.queue = {rank_t(-2)};
  const std::byte payload[] = {std::byte{0xaa}};
  std::vector<std::byte> buf(token_layout::max_bytes(2, 1));
  ASSERT_EQ(encode_token(t, payload, buf), buf.size());
  const std::vector<int> want = {0x08, 0x07, 0x06, 0x05,   // LN[0], its low 32 bits
                                 0x80, 0x90, 0xa0, 0xb0,   // LN[1]
                                 0xaa, 0x00, 0x00, 0x00,   // payload, padded to 4
                                 0xfe, 0xff, 0xff, 0xff};  // Q[0] = -2
  ASSERT_EQ(buf.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(std::to_integer<int>(buf[i]), want[i]) << "byte " << i;
  token back;
  std::byte out[1];
  ASSERT_TRUE(decode_token(buf, 2, back, out));
  EXPECT_EQ(back.ln, (std::vector{seq_t(0x05060708u), seq_t(0xb0a09080u)}));
  widen_ln(back.ln, t.ln);
  EXPECT_EQ(back.ln, t.ln);
  EXPECT_EQ(back.queue, t.queue);
  EXPECT_EQ(out[0], std::byte{0xaa});
}

// LN[j] is within [RN[j] - 1, RN[j] + 2^31) at the receiver: widening restores it
// exactly on both sides of every 2^32 boundary.
TEST(TokenCodec, WidensLnAgainstRnAcrossTheWrap) {
  constexpr std::uint64_t wrap = std::uint64_t{1} << 32;
  for (std::uint64_t base : {std::uint64_t{0}, wrap - 2, wrap, 5 * wrap - 1, 7 * wrap + 12345}) {
    for (std::int64_t lead : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}, std::int64_t{3},
                              (std::int64_t{1} << 31) - 1}) {
      if (base == 0 && lead < 0) continue;  // LN is never negative
      const seq_t rn(base), ln(base + static_cast<std::uint64_t>(lead));
      std::vector<seq_t> got{seq_t(ln.value() & (wrap - 1))};
      const std::vector<seq_t> ref{rn};
      widen_ln(got, ref);
      EXPECT_EQ(got[0], ln) << base << " " << lead;
    }
  }
  // A wire value that would lie below zero (a broken token): kept as it came.
  std::vector<seq_t> low{seq_t(wrap - 1)};
  const std::vector<seq_t> zero{seq_t(0)};
  widen_ln(low, zero);
  EXPECT_EQ(low[0], seq_t(wrap - 1));
}

TEST(TokenCodec, RefusesLengthsNoTokenHasAndLongQueues) {
  const std::size_t n = 4;
  std::vector<std::byte> buf(token_layout::max_bytes(n) + 8);
  const std::size_t len = encode_token(make(n, 1), {}, buf);
  token u;
  const auto refused = [&](std::size_t bytes, std::span<std::byte> payload) {
    return !decode_token(std::span(buf).first(bytes), n, u, payload) &&
           !u.well_formed(static_cast<std::int32_t>(n), rank_t(0));
  };
  EXPECT_TRUE(refused(len - 1, {}));                        // not a whole entry
  EXPECT_TRUE(refused(token_layout::bytes(n, 0, 0) - 4, {}));  // shorter than LN
  EXPECT_TRUE(refused(token_layout::bytes(n, 0, n), {}));    // n queued: one too many
  EXPECT_TRUE(refused(token_layout::bytes(n, 0, n + 1), {}));
  // A one-byte payload pads to four; a pad byte that is not zero is refused.
  std::vector<std::byte> payload(1, std::byte{7}), with(token_layout::max_bytes(n, 1));
  const std::size_t plen = encode_token(make(n, 0), payload, with);
  ASSERT_EQ(plen, token_layout::bytes(n, 1, 0));
  EXPECT_TRUE(decode_token(std::span(with).first(plen), n, u, payload));
  with[token_layout::payload_offset(n) + 1] = std::byte{1};
  EXPECT_FALSE(decode_token(std::span(with).first(plen), n, u, payload));
  EXPECT_FALSE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0)));
  // A length in range with a duplicate id decodes, and well_formed rejects it.
  const std::int32_t three = 3;
  std::memcpy(buf.data() + token_layout::queue_offset(n, 0), &three, sizeof three);
  std::memcpy(buf.data() + token_layout::queue_offset(n, 0) + 4, &three, sizeof three);
  EXPECT_TRUE(decode_token(std::span(buf).first(token_layout::bytes(n, 0, 2)), n, u, {}));
  EXPECT_FALSE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0)));
}

}  // namespace
