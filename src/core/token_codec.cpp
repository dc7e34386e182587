#include "core/token_codec.hpp"

#include <cstring>

#include "core/token_layout.hpp"

namespace tally::protocol {

namespace {
using layout = token_layout;

template <class QueueAt>
void encode_parts(std::span<const seq_t> ln, std::size_t len, QueueAt queue_at,
                  std::span<const std::byte> payload, std::byte* buf) noexcept {
  const std::size_t n = ln.size();
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t v = ln[j].value();
    std::memcpy(buf + layout::ln_offset(n) + layout::ln_entry * j, &v, sizeof v);
  }
  const auto length = static_cast<std::int32_t>(len);
  std::memcpy(buf + layout::length_offset(n), &length, sizeof length);
  for (std::size_t k = 0; k < len; ++k) {
    const std::int32_t r = queue_at(k);
    std::memcpy(buf + layout::queue_offset(n) + layout::queue_entry * k, &r, sizeof r);
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
    std::uint64_t v;
    std::memcpy(&v, p + layout::ln_offset(n) + layout::ln_entry * j, sizeof v);
    t.ln[j] = seq_t(v);
  }
  std::int32_t len;
  std::memcpy(&len, p + layout::length_offset(n), sizeof len);
  if (len < 0 || static_cast<std::size_t>(len) >= n) return malformed();
  t.queue.resize(static_cast<std::size_t>(len));
  for (std::size_t k = 0; k < t.queue.size(); ++k) {
    std::int32_t r;
    std::memcpy(&r, p + layout::queue_offset(n) + layout::queue_entry * k, sizeof r);
    t.queue[k] = rank_t(r);
  }
  if (!payload.empty()) std::memcpy(payload.data(), p + layout::payload_offset(n), payload.size());
  return true;
}

}  // namespace tally::protocol
