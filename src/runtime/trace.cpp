#include "runtime/trace.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "runtime/handles.hpp"

namespace tally::detail {

namespace {
const char* name_of(trace_log::kind k) {
  switch (k) {
    case trace_log::kind::request: return "request";
    case trace_log::kind::token_in: return "token_in";
    case trace_log::kind::token_out: return "token_out";
    case trace_log::kind::enter: return "enter";
    case trace_log::kind::exit: return "exit";
  }
  return "?";
}

// The mutex's name as a file-name part: letters, digits, '-', '_' and '.' kept,
// anything else a '-'.
std::string file_part(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    out += keep ? c : '-';
  }
  return out;
}

// A JSON string literal of s.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
}  // namespace

void trace_log::open(const std::string& dir, const std::string& mutex_name, int rank, int size, std::size_t capacity) {
  if (dir.empty()) return;
  name_ = mutex_name;
  rank_ = rank;
  size_ = size;
  path_ = dir + "/tally-" + file_part(mutex_name) + "-rank" + std::to_string(rank) + ".jsonl";
  events_.resize(capacity);
  used_ = 0;
  dropped_ = 0;
  clock_ = trace_clock(rank);
  sampled_ = 0;
  domain_ = -1;
  on_ = true;
}

void trace_log::add_sample(const clock_sample& s, int domain) noexcept {
  if (!on_ || sampled_ == 2) return;
  samples_[sampled_++] = s;
  domain_ = domain;
}

void trace_log::flush() noexcept {
  if (!on_) return;
  on_ = false;
  std::error_code ec;  // a directory that does not exist yet is made (as mkdir -p)
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  std::FILE* f = std::fopen(path_.c_str(), "w");
  if (!f) {
    warn("cannot write the trace %s: %s\n", path_.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(f, "{\"tally_trace\":2,\"mutex\":%s,\"rank\":%d,\"size\":%d,\"events\":%zu,\"dropped\":%llu,",
               json_string(name_).c_str(), rank_, size_, used_, static_cast<unsigned long long>(dropped_));
  std::fprintf(f, "\"clock\":{\"source\":\"monotonic\",\"domain\":%d,\"samples\":[", domain_);
  for (int i = 0; i < sampled_; ++i)
    std::fprintf(f, "%s{\"at\":%lld,\"offset\":%lld,\"rtt\":%lld}", i ? "," : "",
                 static_cast<long long>(samples_[i].at), static_cast<long long>(samples_[i].offset),
                 static_cast<long long>(samples_[i].rtt));
  std::fprintf(f, "]");
  if (clock_.skewed())
    std::fprintf(f, ",\"injected_skew\":{\"ns\":%lld,\"ppm\":%.17g}", static_cast<long long>(clock_.skew_ns()),
                 clock_.skew_ppm());
  std::fprintf(f, "}}\n");
  for (std::size_t i = 0; i < used_; ++i) {
    const event& e = events_[i];
    std::fprintf(f, "{\"t\":%lld,\"ev\":\"%s\",\"peer\":%d,\"seq\":%llu}\n", static_cast<long long>(e.t),
                 name_of(e.what), e.peer, static_cast<unsigned long long>(e.seq));
  }
  if (std::fclose(f) != 0) warn("cannot write the trace %s: %s\n", path_.c_str(), std::strerror(errno));
}

}  // namespace tally::detail
