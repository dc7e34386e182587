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
std::size_t encode_parts(std::span<const seq_t> ln, std::size_t len, QueueAt queue_at,
                         std::span<const std::byte> payload, std::byte* buf) noexcept {
  const std::size_t n = ln.size();
  for (std::size_t j = 0; j < n; ++j)
    put_le(buf + layout::ln_offset(n) + layout::ln_entry * j, static_cast<std::uint32_t>(ln[j].value()));
  std::byte* pay = buf + layout::payload_offset(n);
  if (!payload.empty()) std::memcpy(pay, payload.data(), payload.size());
  std::memset(pay + payload.size(), 0, layout::padded(payload.size()) - payload.size());
  const std::size_t q = layout::queue_offset(n, payload.size());
  for (std::size_t k = 0; k < len; ++k) put_le<std::int32_t>(buf + q + layout::queue_entry * k, queue_at(k));
  return layout::bytes(n, payload.size(), len);
}
}  // namespace

std::size_t encode_token(std::span<const seq_t> ln, std::span<const std::int32_t> queue,
                         std::span<const std::byte> payload, std::span<std::byte> buf) noexcept {
  return encode_parts(ln, queue.size(), [&](std::size_t k) { return queue[k]; }, payload, buf.data());
}

std::size_t encode_token(const token& t, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept {
  return encode_parts(t.ln, t.queue.size(), [&](std::size_t k) { return t.queue[k].value(); }, payload,
                      buf.data());
}

bool decode_token(std::span<const std::byte> buf, std::size_t n, token& t, std::span<std::byte> payload) {
  const auto malformed = [&] {
    t.ln.assign(n, seq_t(0));
    t.queue.assign(n, rank_t(-1));  // n entries and a negative id: well_formed fails
    return false;
  };
  const std::size_t fixed = layout::bytes(n, payload.size(), 0);
  if (buf.size() < fixed || (buf.size() - fixed) % layout::queue_entry != 0) return malformed();
  const std::size_t len = (buf.size() - fixed) / layout::queue_entry;
  if (len >= n) return malformed();
  const std::byte* p = buf.data();
  for (std::size_t b = layout::payload_offset(n) + payload.size(); b < fixed; ++b)
    if (p[b] != std::byte{0}) return malformed();
  t.ln.resize(n);
  for (std::size_t j = 0; j < n; ++j)
    t.ln[j] = seq_t(get_le<std::uint32_t>(p + layout::ln_offset(n) + layout::ln_entry * j));
  if (!payload.empty()) std::memcpy(payload.data(), p + layout::payload_offset(n), payload.size());
  t.queue.resize(len);
  for (std::size_t k = 0; k < len; ++k)
    t.queue[k] = rank_t(get_le<std::int32_t>(p + fixed + layout::queue_entry * k));
  return true;
}

void widen_ln(std::span<seq_t> ln, std::span<const seq_t> rn) noexcept {
  for (std::size_t j = 0; j < ln.size(); ++j) {
    const std::uint64_t r = rn[j].value();
    // The signed distance from RN's low 32 bits to the wire's, in [-2^31, 2^31).
    const auto d = static_cast<std::int32_t>(static_cast<std::uint32_t>(ln[j].value()) - static_cast<std::uint32_t>(r));
    // Below zero only for a token that breaks the bound above: keep the wire value.
    ln[j] = d < 0 && r < static_cast<std::uint64_t>(-static_cast<std::int64_t>(d))
                ? seq_t(static_cast<std::uint32_t>(ln[j].value()))
                : seq_t(r + static_cast<std::uint64_t>(static_cast<std::int64_t>(d)));
  }
}

}  // namespace tally::protocol
