#include "core/token_codec.hpp"

#include <algorithm>
#include <array>
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

// The payload, then zeros up to a whole unit; returns the bytes written.
std::size_t put_payload(std::span<const std::byte> payload, std::byte* p) noexcept {
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  std::memset(p + payload.size(), 0, layout::padded(payload.size()) - payload.size());
  return layout::padded(payload.size());
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
  put_payload(payload, buf + layout::payload_offset(n));
  return layout::bytes(n, payload.size());
}
}  // namespace

std::size_t encode_token(const token_frame& f, std::span<const ln_t> ln, std::span<const std::int32_t> queue,
                         std::size_t to, std::span<const std::byte> payload, std::span<std::byte> buf) noexcept {
  return encode_parts(
      f, ln, queue.size(), [&](std::size_t k) { return queue[k]; }, to, payload, buf.data());
}

std::size_t encode_token(const token_frame& f, const token& t, std::size_t to, std::span<const std::byte> payload,
                         std::span<std::byte> buf) noexcept {
  return encode_parts(
      f, t.ln, t.queue.size(), [&](std::size_t k) { return t.queue[k].value(); }, to, payload, buf.data());
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

namespace {
using node_layout = node_token;
constexpr std::size_t form_offset = layout::unit * (2 + node_layout::route);

std::size_t put_trail(token_trail trail, std::int32_t form, std::byte* p) noexcept {
  put_le<std::uint64_t>(p, trail.hop);
  for (std::size_t i = 0; i < node_layout::route; ++i) put_le<std::int32_t>(p + layout::unit * (2 + i), trail.route[i]);
  put_le<std::int32_t>(p + form_offset, form);
  return node_layout::trail_bytes;
}

}  // namespace

std::optional<token_form> parse_token_form(std::string_view name) noexcept {
  for (const token_form f : {token_form::shorter, token_form::delta, token_form::full})
    if (name == name_of(f)) return f;
  return std::nullopt;
}

const char* name_of(token_form f) noexcept {
  switch (f) {
    case token_form::shorter: return "shorter";
    case token_form::delta: return "delta";
    case token_form::full: return "full";
  }
  return "?";
}

std::size_t encode_node_token(const token_frame& f, std::span<const ln_t> ln, std::span<const std::int32_t> queue,
                              std::size_t to, token_trail trail, std::uint64_t since,
                              std::span<const std::byte> payload, std::span<std::byte> buf, token_form form) noexcept {
  // The distinct senders of moves since+1..hop but the receiver, if the route
  // remembers them all.
  std::array<std::int32_t, node_layout::route> pairs{};
  std::size_t d = 0;
  bool delta = form != token_form::full && since <= trail.hop && trail.hop - since <= node_layout::route;
  for (std::size_t i = 0; delta && i < trail.hop - since; ++i) {
    const std::int32_t j = trail.route[i];
    delta = j >= 0;
    if (delta && static_cast<std::size_t>(j) != to &&
        std::find(pairs.begin(), pairs.begin() + d, j) == pairs.begin() + d)
      pairs[d++] = j;
  }
  delta = delta && (form == token_form::delta || node_layout::delta_bytes(queue.size(), d, payload.size()) <=
                                                     node_layout::full_bytes(f.n, payload.size()));
  std::byte* p = buf.data();
  if (!delta) {
    p += put_trail(trail, node_layout::full, p);
    return node_layout::trail_bytes + encode_token(f, ln, queue, to, payload, buf.subspan(node_layout::body_offset));
  }
  p += put_trail(trail, static_cast<std::int32_t>(d), p);
  put_le<std::uint64_t>(p, since);
  put_le<std::uint32_t>(p + 8, static_cast<std::uint32_t>(queue.size()));
  p += 12;
  for (const std::int32_t r : queue) {
    put_le<std::int32_t>(p, r);
    p += layout::unit;
  }
  for (std::size_t k = 0; k < d; ++k) {
    put_le<std::int32_t>(p, pairs[k]);
    put_le<ln_t>(p + layout::unit, ln[static_cast<std::size_t>(pairs[k])]);
    p += 2 * layout::unit;
  }
  p += put_payload(payload, p);
  return static_cast<std::size_t>(p - buf.data());
}

std::int32_t node_token_form(std::span<const std::byte> buf) noexcept {
  return buf.size() < node_layout::trail_bytes ? node_layout::full : get_le<std::int32_t>(buf.data() + form_offset);
}

bool decode_node_token(std::span<const std::byte> buf, const token_frame& f, std::size_t self, std::uint64_t copy_hop,
                       std::span<ln_t> ln, std::vector<rank_t>& queue, std::uint64_t& hop,
                       std::span<std::int32_t> route, std::span<std::byte> payload, std::span<std::uint8_t> marks) {
  const std::size_t n = f.n;
  const auto malformed = [&] {
    std::fill(ln.begin(), ln.end(), ln_t{0});
    queue.assign(n, rank_t(-1));
    return false;
  };
  if (ln.size() != n || self >= n || route.size() != node_layout::route || buf.size() < node_layout::trail_bytes)
    return malformed();
  const std::byte* p = buf.data();
  hop = get_le<std::uint64_t>(p);
  if (hop <= copy_hop) return malformed();  // the token moved since this node sent it
  for (std::size_t i = 0; i < node_layout::route; ++i) {
    const auto j = get_le<std::int32_t>(p + layout::unit * (2 + i));
    const bool moved = i < hop;  // move hop - i >= 1 had a sender
    if (moved ? (j < 0 || static_cast<std::size_t>(j) >= n || (i == 0 && static_cast<std::size_t>(j) == self))
              : j != -1)
      return malformed();
    route[i] = j;
  }
  const auto form = get_le<std::int32_t>(p + form_offset);
  if (form == node_layout::full)
    return decode_token(buf.subspan(node_layout::body_offset), f, self, ln, queue, payload, marks);
  if (form < 0 || static_cast<std::size_t>(form) > node_layout::route || buf.size() < node_layout::trail_bytes + 12)
    return malformed();
  const auto d = static_cast<std::size_t>(form);
  p += node_layout::trail_bytes;
  const auto since = get_le<std::uint64_t>(p);
  const auto q = get_le<std::uint32_t>(p + 8);
  if (q >= n || buf.size() != node_layout::delta_bytes(q, d, payload.size()) || since > copy_hop ||
      hop - since > node_layout::route)
    return malformed();
  p += 12;
  const std::byte* pairs = p + layout::unit * q;
  const std::byte* pay = pairs + 2 * layout::unit * d;
  for (std::size_t b = payload.size(); b < layout::padded(payload.size()); ++b)
    if (pay[b] != std::byte{0}) return malformed();
  // Marks: 1 queued, 2 carried by a pair, 4 a sender in the window; self is 1.
  marks[self] = 1;
  bool ok = true;
  queue.clear();
  for (std::uint32_t k = 0; ok && k < q; ++k) {
    const auto e = get_le<std::int32_t>(p + layout::unit * k);
    ok = f.valid(e) && f.slot(e) < n && !(marks[f.slot(e)] & 1);
    if (ok) {
      marks[f.slot(e)] |= 1;
      queue.push_back(rank_t(e));
    }
  }
  for (std::size_t k = 0; ok && k < d; ++k) {
    const auto j = get_le<std::int32_t>(pairs + 2 * layout::unit * k);
    ok = j >= 0 && static_cast<std::size_t>(j) < n && static_cast<std::size_t>(j) != self &&
         !(marks[static_cast<std::size_t>(j)] & 2);
    if (ok) marks[static_cast<std::size_t>(j)] |= 2;
  }
  std::size_t senders = 0;
  for (std::size_t i = 0; ok && i < hop - since; ++i) {
    const auto j = static_cast<std::size_t>(route[i]);
    if (j == self || (marks[j] & 4)) continue;
    ok = (marks[j] & 2) != 0;
    marks[j] |= 4;
    ++senders;
  }
  ok = ok && senders == d;
  // Clear the marks: every one set is at self, a queued slot, a pair or the route.
  marks[self] = 0;
  for (rank_t r : queue) marks[f.slot(r.value())] = 0;
  for (std::size_t k = 0; k < d; ++k) {
    const auto j = get_le<std::int32_t>(pairs + 2 * layout::unit * k);
    if (j >= 0 && static_cast<std::size_t>(j) < n) marks[static_cast<std::size_t>(j)] = 0;
  }
  for (std::size_t i = 0; i < hop - since; ++i) marks[static_cast<std::size_t>(route[i])] = 0;
  if (!ok) return malformed();
  for (std::size_t k = 0; k < d; ++k)
    ln[static_cast<std::size_t>(get_le<std::int32_t>(pairs + 2 * layout::unit * k))] =
        get_le<ln_t>(pairs + 2 * layout::unit * k + layout::unit);
  for (rank_t r : queue) ln[f.slot(r.value())] = 0;
  ln[self] = 0;
  if (!payload.empty()) std::memcpy(payload.data(), pay, payload.size());
  return true;
}

}  // namespace tally::protocol
