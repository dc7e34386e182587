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
std::size_t encode_parts(const token_frame& f, std::span<const seq_t> ln, std::size_t len, QueueAt queue_at,
                         std::size_t to, std::span<const std::byte> payload, std::byte* buf,
                         std::span<std::uint8_t> marks) noexcept {
  const std::size_t n = f.n;
  put_le(buf, static_cast<std::uint32_t>(len));
  for (std::size_t k = 0; k < len; ++k) {
    const std::int32_t e = queue_at(k);
    put_le<std::int32_t>(buf + layout::queue_offset() + layout::queue_entry * k, e);
    marks[f.slot(e)] = 1;
  }
  marks[to] = 1;
  std::byte* at = buf + layout::ln_offset(len);
  for (std::size_t j = 0; j < n; ++j) {
    if (marks[j]) {
      marks[j] = 0;
      continue;
    }
    put_le(at, static_cast<std::uint32_t>(ln[j].value()));
    at += layout::ln_entry;
  }
  std::byte* pay = buf + layout::payload_offset(n);
  if (!payload.empty()) std::memcpy(pay, payload.data(), payload.size());
  std::memset(pay + payload.size(), 0, layout::padded(payload.size()) - payload.size());
  return layout::bytes(n, payload.size());
}
}  // namespace

std::size_t encode_token(const token_frame& f, std::span<const seq_t> ln, std::span<const std::int32_t> queue,
                         std::size_t to, std::span<const std::byte> payload, std::span<std::byte> buf,
                         std::span<std::uint8_t> marks) noexcept {
  return encode_parts(f, ln, queue.size(), [&](std::size_t k) { return queue[k]; }, to, payload, buf.data(), marks);
}

std::size_t encode_token(const token_frame& f, const token& t, std::size_t to, std::span<const std::byte> payload,
                         std::span<std::byte> buf, std::span<std::uint8_t> marks) noexcept {
  return encode_parts(f, t.ln, t.queue.size(), [&](std::size_t k) { return t.queue[k].value(); }, to, payload,
                      buf.data(), marks);
}

bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, token& t,
                  std::span<std::byte> payload, std::span<std::uint8_t> marks) {
  const std::size_t n = f.n;
  const auto malformed = [&] {
    t.ln.assign(n, seq_t(0));
    t.queue.assign(n, rank_t(-1));  // n entries and a negative id: well_formed fails
    return false;
  };
  if (buf.size() != layout::bytes(n, payload.size()) || self >= n) return malformed();
  const std::byte* p = buf.data();
  for (std::size_t b = layout::payload_offset(n) + payload.size(); b < buf.size(); ++b)
    if (p[b] != std::byte{0}) return malformed();
  const std::uint32_t len = get_le<std::uint32_t>(p);
  if (len >= n) return malformed();  // with self, at most n - 1 entries are not carried
  t.queue.resize(len);
  marks[self] = 1;
  bool ok = true;
  for (std::size_t k = 0; k < len; ++k) {
    const auto e = get_le<std::int32_t>(p + layout::queue_offset() + layout::queue_entry * k);
    t.queue[k] = rank_t(e);
    if (!ok || !f.valid(e) || f.slot(e) >= n || marks[f.slot(e)]) {
      ok = false;  // out of range, the receiver, or an index already named
      continue;
    }
    marks[f.slot(e)] = 1;
  }
  t.ln.resize(n);
  const std::byte* at = p + layout::ln_offset(len);
  for (std::size_t j = 0; j < n; ++j) {
    if (marks[j]) {  // not carried (and the marks left as they came: zero)
      marks[j] = 0;
      t.ln[j] = seq_t(0);
    } else if (ok) {  // a queue refused above: its LN count is unknown, read none
      t.ln[j] = seq_t(get_le<std::uint32_t>(at));
      at += layout::ln_entry;
    }
  }
  if (!ok) return malformed();
  if (!payload.empty()) std::memcpy(payload.data(), p + layout::payload_offset(n), payload.size());
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
