#include "core/token_codec.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "core/per_entry.hpp"
#include "core/token_layout.hpp"

namespace tally::protocol {

namespace {
using layout = token_layout;

// Fixed-width integers go on the wire little-endian whatever the host: a plain copy
// on a little-endian host (which compilers vectorize in the LN loops), bytes shifted
// into place elsewhere.
template <class T>
void put_le(std::byte* at, T v) noexcept {
  auto u = static_cast<std::make_unsigned_t<T>>(v);
  if constexpr (std::endian::native != std::endian::little) {
    for (std::size_t b = 0; b < sizeof u; ++b) at[b] = static_cast<std::byte>((u >> (8 * b)) & 0xffu);
  } else {
    std::memcpy(at, &u, sizeof u);
  }
}
template <class T>
T get_le(const std::byte* at) noexcept {
  std::make_unsigned_t<T> u = 0;
  if constexpr (std::endian::native != std::endian::little) {
    for (std::size_t b = 0; b < sizeof u; ++b)
      u |= static_cast<std::make_unsigned_t<T>>(std::to_integer<unsigned>(at[b])) << (8 * b);
  } else {
    std::memcpy(&u, at, sizeof u);
  }
  return static_cast<T>(u);
}

// Every slot as an LN entry: one straight copy each way, which vectorizes.
TALLY_PER_ENTRY void write_slots(const ln_t* ln, std::byte* buf, std::size_t n) noexcept {
  for (std::size_t j = 0; j < n; ++j) put_le(buf + layout::slot_offset(j), ln[j]);
}
TALLY_PER_ENTRY void read_slots(const std::byte* buf, ln_t* ln, std::size_t n) noexcept {
  for (std::size_t j = 0; j < n; ++j) ln[j] = get_le<ln_t>(buf + layout::slot_offset(j));
}

template <class QueueAt>
std::size_t encode_parts(const token_frame& f, std::span<const ln_t> ln, std::size_t len, QueueAt queue_at,
                         std::size_t to, std::span<const std::byte> payload, std::byte* buf) noexcept {
  const std::size_t n = f.n;
  write_slots(ln.data(), buf, n);
  // Then the queue's links over the slots it does not carry: the receiver's, the queued.
  std::size_t link = to;
  for (std::size_t k = 0; k < len; ++k) {
    const std::int32_t e = queue_at(k);
    put_le<std::int32_t>(buf + layout::slot_offset(link), e);
    link = f.slot(e);
  }
  put_le<std::int32_t>(buf + layout::slot_offset(link), layout::end);
  std::byte* pay = buf + layout::payload_offset(n);
  if (!payload.empty()) std::memcpy(pay, payload.data(), payload.size());
  std::memset(pay + payload.size(), 0, layout::padded(payload.size()) - payload.size());
  return layout::bytes(n, payload.size());
}
}  // namespace

std::size_t encode_token(const token_frame& f, std::span<const ln_t> ln, std::span<const std::int32_t> queue,
                         std::size_t to, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept {
  return encode_parts(f, ln, queue.size(), [&](std::size_t k) { return queue[k]; }, to, payload, buf.data());
}

std::size_t encode_token(const token_frame& f, const token& t, std::size_t to, std::span<const std::byte> payload,
                         std::span<std::byte> buf) noexcept {
  return encode_parts(f, t.ln, t.queue.size(), [&](std::size_t k) { return t.queue[k].value(); }, to, payload,
                      buf.data());
}

bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, std::span<ln_t> ln,
                  std::vector<rank_t>& queue, std::span<std::byte> payload, std::span<std::uint8_t> marks) {
  const std::size_t n = f.n;
  const auto malformed = [&] {
    std::fill(ln.begin(), ln.end(), ln_t{0});
    queue.assign(n, rank_t(-1));  // n entries and a negative id: well_formed fails
    return false;
  };
  if (ln.size() != n || buf.size() != layout::bytes(n, payload.size()) || self >= n) return malformed();
  const std::byte* p = buf.data();
  for (std::size_t b = layout::payload_offset(n) + payload.size(); b < buf.size(); ++b)
    if (p[b] != std::byte{0}) return malformed();
  read_slots(p, ln.data(), n);
  // Follow the queue from the receiver's slot. Each entry must be in range and take
  // a slot not yet taken (the receiver's included), so the walk ends within n - 1.
  queue.clear();
  marks[self] = 1;
  bool ok = true;
  for (auto e = get_le<std::int32_t>(p + layout::slot_offset(self)); e != layout::end;) {
    if (!f.valid(e) || f.slot(e) >= n || marks[f.slot(e)]) {
      ok = false;  // out of range, the receiver, or a slot already named
      break;
    }
    marks[f.slot(e)] = 1;
    queue.push_back(rank_t(e));
    e = get_le<std::int32_t>(p + layout::slot_offset(f.slot(e)));
  }
  // The slots not carrying LN read 0 (the core sets them); the marks go back to 0.
  ln[self] = 0;
  marks[self] = 0;
  for (rank_t r : queue) {
    ln[f.slot(r.value())] = 0;
    marks[f.slot(r.value())] = 0;
  }
  if (!ok) return malformed();
  if (!payload.empty()) std::memcpy(payload.data(), p + layout::payload_offset(n), payload.size());
  return true;
}

bool decode_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, token& t,
                  std::span<std::byte> payload, std::span<std::uint8_t> marks) {
  t.ln.resize(f.n);
  return decode_token(buf, f, self, t.ln, t.queue, payload, marks);
}

}  // namespace tally::protocol
