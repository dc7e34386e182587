// Ordered append to one shared file, with the next free offset carried in the
// token (tally::guarded). Used by examples/shared_append.cpp, its test and the
// benchmark BM_SharedAppend.
//
// A record is a 24-byte header {magic, rank, sequence, length, checksum of the
// body} followed by `length` body bytes. Appending reserves [offset, offset+size)
// inside the critical section and writes outside it, so ranks write in parallel
// and the critical section is a few nanoseconds of arithmetic plus the handoff.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tally/guarded.hpp"

namespace tally::example {

struct record_header {
  std::uint32_t magic;
  std::int32_t rank;
  std::uint32_t sequence;
  std::uint32_t length;
  std::uint64_t checksum;
};
static_assert(sizeof(record_header) == 24);

inline constexpr std::uint32_t record_magic = 0x7a11e7a1;

// FNV-1a over the body.
inline std::uint64_t checksum(const std::byte* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

// A deterministic variable-size record: 1 to max_body (> 0) body bytes.
inline std::vector<std::byte> make_record(int rank, std::uint32_t sequence, std::uint32_t max_body = 4000) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) << 32 | sequence) * 0x9e3779b97f4a7c15ull + 1;
  const std::uint32_t length = 1 + static_cast<std::uint32_t>((x >> 40) % max_body);
  std::vector<std::byte> rec(sizeof(record_header) + length);
  for (std::uint32_t i = 0; i < length; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    rec[sizeof(record_header) + i] = static_cast<std::byte>(x);
  }
  const record_header h{record_magic, rank, sequence, length, checksum(rec.data() + sizeof(record_header), length)};
  std::memcpy(rec.data(), &h, sizeof h);
  return rec;
}

// Appends rec at the next free offset; returns the offset it was written at.
inline std::uint64_t append(tally::guarded<std::uint64_t>& next, MPI_File fh, const std::vector<std::byte>& rec) {
  std::uint64_t at = 0;
  {
    auto g = next.lock();  // the offset arrives with the token
    at = *g;
    *g += rec.size();  // and leaves with it
  }
  MPI_Status st;
  if (MPI_File_write_at(fh, static_cast<MPI_Offset>(at), rec.data(), static_cast<int>(rec.size()), MPI_BYTE, &st) !=
      MPI_SUCCESS)
    throw std::runtime_error("MPI_File_write_at failed");
  return at;
}

// Parses a whole file of records. Returns "" if it is exactly back-to-back intact
// records, `expected_per_rank` from each of `ranks` ranks with sequences 0..k-1
// each appearing once; else a description of the first problem.
inline std::string verify(const std::vector<std::byte>& file, int ranks, std::uint32_t expected_per_rank) {
  std::vector<std::vector<bool>> seen(static_cast<std::size_t>(ranks), std::vector<bool>(expected_per_rank, false));
  std::size_t at = 0;
  std::uint64_t records = 0;
  while (at < file.size()) {
    record_header h;
    if (file.size() - at < sizeof h) return "truncated header at offset " + std::to_string(at);
    std::memcpy(&h, file.data() + at, sizeof h);
    if (h.magic != record_magic) return "gap or overlap: no record header at offset " + std::to_string(at);
    if (h.rank < 0 || h.rank >= ranks || h.sequence >= expected_per_rank)
      return "bad rank or sequence at offset " + std::to_string(at);
    if (file.size() - at - sizeof h < h.length) return "truncated body at offset " + std::to_string(at);
    if (checksum(file.data() + at + sizeof h, h.length) != h.checksum)
      return "corrupt body at offset " + std::to_string(at);
    auto&& slot = seen[static_cast<std::size_t>(h.rank)][h.sequence];
    if (slot) return "duplicate record at offset " + std::to_string(at);
    slot = true;
    at += sizeof h + h.length;
    ++records;
  }
  if (records != static_cast<std::uint64_t>(ranks) * expected_per_rank)
    return "found " + std::to_string(records) + " records, expected " +
           std::to_string(static_cast<std::uint64_t>(ranks) * expected_per_rank);
  return "";
}

}  // namespace tally::example
