// The token's byte codec (core/token_codec.hpp): a round trip at several sizes, the
// layout's offsets, the exact little-endian bytes, and the inputs it must refuse
// (wrong buffer size, a queue length outside [0, n)) by yielding a token that
// well_formed rejects.
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

token make(std::size_t n, std::size_t queued) {
  token t;
  for (std::size_t j = 0; j < n; ++j) t.ln.push_back(seq_t(1000 * j + 7));
  for (std::size_t k = 0; k < queued; ++k) t.queue.push_back(rank_t(static_cast<std::int32_t>(n - 1 - k)));
  return t;
}

TEST(TokenCodec, RoundTripsAtSeveralSizes) {
  for (std::size_t n : {1u, 2u, 3u, 5u, 64u}) {
    for (std::size_t p : {0u, 1u, 13u}) {
      const token t = make(n, n - 1);
      std::vector<std::byte> payload(p), back(p);
      for (std::size_t i = 0; i < p; ++i) payload[i] = std::byte(i * 31 + 1);
      std::vector<std::byte> buf(token_layout::bytes(n, p));
      encode_token(t, payload, buf);
      token u;
      ASSERT_TRUE(decode_token(buf, n, u, back)) << n << " " << p;
      EXPECT_EQ(u, t);
      EXPECT_EQ(back, payload);
      EXPECT_TRUE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0)));
    }
  }
}

TEST(TokenCodec, FieldsSitAtTheLayoutsOffsets) {
  const token t = make(3, 2);
  std::vector<std::byte> buf(token_layout::bytes(3));
  encode_token(t, {}, buf);
  std::uint64_t ln1;
  std::int32_t len, q0;
  std::memcpy(&ln1, buf.data() + token_layout::ln_entry, sizeof ln1);
  std::memcpy(&len, buf.data() + token_layout::length_offset(3), sizeof len);
  std::memcpy(&q0, buf.data() + token_layout::queue_offset(3), sizeof q0);
  EXPECT_EQ(ln1, 1007u);
  EXPECT_EQ(len, 2);
  EXPECT_EQ(q0, 2);
}

// The wire is little-endian on every host: the exact bytes of one token.
TEST(TokenCodec, IntegersAreLittleEndianBytes) {
  token t;
  t.ln = {seq_t(0x0102030405060708u), seq_t(0xf0e0d0c0b0a09080u)};
  t.queue = {rank_t(-2)};
  const std::byte payload[] = {std::byte{0xaa}};
  std::vector<std::byte> buf(token_layout::bytes(2, 1));
  encode_token(t, payload, buf);
  const std::vector<int> want = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,   // LN[0]
                                 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,   // LN[1]
                                 0x01, 0x00, 0x00, 0x00,                           // length 1
                                 0xfe, 0xff, 0xff, 0xff,                           // Q[0] = -2
                                 0x00, 0x00, 0x00, 0x00,                           // Q[1], unused
                                 0xaa};                                            // payload
  ASSERT_EQ(buf.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(std::to_integer<int>(buf[i]), want[i]) << "byte " << i;
  token back;
  std::byte out[1];
  ASSERT_TRUE(decode_token(buf, 2, back, out));
  EXPECT_EQ(back.ln, t.ln);
  EXPECT_EQ(back.queue, t.queue);
  EXPECT_EQ(out[0], std::byte{0xaa});
}

TEST(TokenCodec, RefusesWrongSizesAndQueueLengths) {
  const std::size_t n = 4;
  std::vector<std::byte> buf(token_layout::bytes(n));
  encode_token(make(n, 1), {}, buf);
  token u;
  EXPECT_FALSE(decode_token(std::span(buf).first(buf.size() - 1), n, u, {}));
  EXPECT_FALSE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0)));
  std::vector<std::byte> payload(1);
  EXPECT_FALSE(decode_token(buf, n, u, payload));  // the buffer has no payload byte
  for (std::int32_t len : {-1, 4, 1 << 30}) {
    std::memcpy(buf.data() + token_layout::length_offset(n), &len, sizeof len);
    EXPECT_FALSE(decode_token(buf, n, u, {})) << len;
    EXPECT_FALSE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0))) << len;
  }
  // A length in range with a duplicate id decodes, and well_formed rejects it.
  const std::int32_t two = 2, three = 3;
  std::memcpy(buf.data() + token_layout::length_offset(n), &two, sizeof two);
  std::memcpy(buf.data() + token_layout::queue_offset(n), &three, sizeof three);
  std::memcpy(buf.data() + token_layout::queue_offset(n) + 4, &three, sizeof three);
  EXPECT_TRUE(decode_token(buf, n, u, {}));
  EXPECT_FALSE(u.well_formed(static_cast<std::int32_t>(n), rank_t(0)));
}

}  // namespace
