#include "core/token_codec.hpp"

#include <cstring>
#include <type_traits>

#include "core/token_layout.hpp"

namespace tally::protocol {

namespace {
using layout = token_layout;

// Fixed-width integers go on the wire little-endian whatever the host (compilers
// turn these loops into one load or store on little-endian machines).
template <class T>
void put_le(std::byte* at, T v) noexcept {
  const auto u = static_cast<std::make_unsigned_t<T>>(v);
  for (std::size_t b = 0; b < sizeof u; ++b) at[b] = static_cast<std::byte>((u >> (8 * b)) & 0xffu);
}
template <class T>
T get_le(const std::byte* at) noexcept {
  std::make_unsigned_t<T> u = 0;
  for (std::size_t b = 0; b < sizeof u; ++b)
    u |= static_cast<std::make_unsigned_t<T>>(std::to_integer<unsigned>(at[b])) << (8 * b);
  return static_cast<T>(u);
}

template <class QueueAt>
void encode_parts(std::span<const seq_t> ln, std::size_t len, QueueAt queue_at,
                  std::span<const std::byte> payload, std::byte* buf) noexcept {
  const std::size_t n = ln.size();
  for (std::size_t j = 0; j < n; ++j) {
    put_le<std::uint64_t>(buf + layout::ln_offset(n) + layout::ln_entry * j, ln[j].value());
  }
  put_le(buf + layout::length_offset(n), static_cast<std::int32_t>(len));
  for (std::size_t k = 0; k < len; ++k) {
    put_le<std::int32_t>(buf + layout::queue_offset(n) + layout::queue_entry * k, queue_at(k));
  }
  if (!payload.empty()) std::memcpy(buf + layout::payload_offset(n), payload.data(), payload.size());
}
}  // namespace

void encode_token(std::span<const seq_t> ln, std::span<const std::int32_t> queue,
                  std::span<const std::byte> payload, std::span<std::byte> buf) noexcept {
  encode_parts(ln, queue.size(), [&](std::size_t k) { return queue[k]; }, payload, buf.data());
}

void encode_token(const token& t, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept {
  encode_parts(t.ln, t.queue.size(), [&](std::size_t k) { return t.queue[k].value(); }, payload, buf.data());
}

bool decode_token(std::span<const std::byte> buf, std::size_t n, token& t, std::span<std::byte> payload) {
  const auto malformed = [&] {
    t.ln.assign(n, seq_t(0));
    t.queue.assign(n, rank_t(-1));  // n entries and a negative id: well_formed fails
    return false;
  };
  if (buf.size() != layout::bytes(n, payload.size())) return malformed();
  const std::byte* p = buf.data();
  t.ln.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    t.ln[j] = seq_t(get_le<std::uint64_t>(p + layout::ln_offset(n) + layout::ln_entry * j));
  }
  const auto len = get_le<std::int32_t>(p + layout::length_offset(n));
  if (len < 0 || static_cast<std::size_t>(len) >= n) return malformed();
  t.queue.resize(static_cast<std::size_t>(len));
  for (std::size_t k = 0; k < t.queue.size(); ++k) {
    t.queue[k] = rank_t(get_le<std::int32_t>(p + layout::queue_offset(n) + layout::queue_entry * k));
  }
  if (!payload.empty()) std::memcpy(payload.data(), p + layout::payload_offset(n), payload.size());
  return true;
}

}  // namespace tally::protocol
