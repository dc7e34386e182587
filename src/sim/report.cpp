// sim/report.cpp — tally-sim run's reports: JSON and a table (sim/run.hpp).
#include <cinttypes>
#include <cmath>
#include <sstream>

#include "sim/run.hpp"
#include "sim/text.hpp"

namespace tally::sim {

std::string duration_text(ps_t ps) {
  if (ps == 0) return "0";
  static const std::pair<ps_t, const char*> units[] = {
      {1'000'000'000'000, "s"}, {1'000'000'000, "ms"}, {1'000'000, "us"}, {1'000, "ns"}};
  for (const auto& [scale, unit] : units) {
    if (ps < scale && scale != 1'000) continue;
    // Shortest decimal that is exact at picosecond resolution.
    std::string digits = std::to_string(ps % scale);
    digits.insert(0, std::to_string(scale).size() - 1 - digits.size(), '0');
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    return std::to_string(ps / scale) + (digits.empty() ? "" : "." + digits) + unit;
  }
  return std::to_string(ps) + "ps";
}

namespace {

using text::fmt;
// Picoseconds as nanoseconds, exactly.
std::string ns(ps_t ps) {
  const char* sign = ps < 0 ? "-" : "";
  const auto a = static_cast<std::uint64_t>(ps < 0 ? -ps : ps);
  return fmt("%s%" PRIu64 ".%03" PRIu64, sign, a / 1000, a % 1000);
}
std::string ns(double ps) { return fmt("%.3f", ps / 1000.0); }
std::string per(std::uint64_t x, std::uint64_t n) {
  return fmt("%.4f", n ? static_cast<double>(x) / static_cast<double>(n) : 0.0);
}
// A duration for people: 1.5 us, 250 ns, 3.2 ms.
std::string human(double ps) {
  const double a = std::fabs(ps);
  if (a >= 1e12) return fmt("%.4g s", ps / 1e12);
  if (a >= 1e9) return fmt("%.4g ms", ps / 1e9);
  if (a >= 1e6) return fmt("%.4g us", ps / 1e6);
  return fmt("%.4g ns", ps / 1e3);
}
std::string describe(const duration_dist& d) {
  switch (d.kind) {
    case duration_dist::shape::fixed: return duration_text(d.a);
    case duration_dist::shape::exponential: return "exp:" + duration_text(d.a);
    case duration_dist::shape::uniform: return "uniform:" + duration_text(d.a) + ":" + duration_text(d.b);
  }
  return "?";
}
std::span<const msg_kind> kinds_of(const run_config& c) { return find_model(c.algorithm)->kinds; }

}  // namespace

std::string report_json(const run_config& c, const summary& s) {
  const workload& w = c.load;
  std::ostringstream o;
  o << "{\n  \"algorithm\": \"" << c.algorithm << "\",\n"
    << "  \"ranks\": " << w.ranks << ",\n  \"active\": " << w.active.size() << ",\n"
    << "  \"network\": {\"preset\": \"" << c.network_name << "\", \"latency_ns\": " << ns(c.net.latency)
    << ", \"overhead_ns\": " << ns(c.net.overhead) << ", \"gap_ns\": " << ns(c.net.gap)
    << ", \"byte_time_ns\": " << fmt("%.6f", c.net.byte_time / 1000) << ", \"eager_limit\": " << c.net.eager_limit
    << ", \"rendezvous_ns\": " << ns(c.net.rendezvous) << ", \"broadcast_window\": " << c.net.window
    << ", \"entry_time_ns\": " << ns(c.net.entry_time) << ", \"scan_time_ns\": " << ns(c.net.scan_time)
    << ", \"node_entry_time_ns\": " << ns(c.net.node_entry_time)
    << ", \"node_scan_time_ns\": " << ns(c.net.node_scan_time) << "},\n";
  if (c.ranks_per_node > 0) {
    o << "  \"nodes\": {\"ranks_per_node\": " << c.ranks_per_node << ", \"count\": " << w.ranks / c.ranks_per_node
      << ", \"intra_latency_ns\": " << ns(c.intra.latency);
    if (c.algorithm == "two-level")
      o << ", \"pass_bound\": " << c.pass_bound << ", \"local_grant_ns\": " << ns(c.local_grant)
        << ", \"node_token\": \"" << protocol::name_of(c.node_token) << "\"";
    o << "},\n";
  }
  o << "  \"workload\": {\"cs\": \"" << describe(w.cs) << "\", \"think\": \"" << describe(w.think)
    << "\", \"requests_per_rank\": " << w.requests_per_rank << ", \"total_requests\": " << w.total_requests
    << ", \"seed\": " << w.seed << "},\n"
    << "  \"results\": {\n"
    << "    \"entries\": " << s.entries << ",\n"
    << "    \"local_entries\": " << s.local_entries << ",\n"
    << "    \"simulated_seconds\": " << fmt("%.12f", static_cast<double>(s.end_time) / 1e12) << ",\n"
    << "    \"cs_per_second\": " << fmt("%.3f", s.cs_per_second) << ",\n"
    << "    \"messages\": {\"total\": " << s.total_messages << ", \"per_cs\": " << per(s.total_messages, s.entries);
  for (msg_kind k : kinds_of(c)) o << ", \"" << to_string(k) << "\": " << s.messages[static_cast<std::size_t>(k)];
  o << "},\n    \"bytes\": {\"total\": " << s.total_bytes << ", \"per_cs\": " << per(s.total_bytes, s.entries);
  for (msg_kind k : kinds_of(c)) o << ", \"" << to_string(k) << "\": " << s.bytes[static_cast<std::size_t>(k)];
  o << "},\n"
    << "    \"wait_ns\": {\"mean\": " << ns(s.wait_mean) << ", \"p50\": " << ns(s.wait_p50)
    << ", \"p99\": " << ns(s.wait_p99) << ", \"max\": " << ns(s.wait_max) << "},\n"
    << "    \"handoff_ns\": {\"count\": " << s.handoffs << ", \"mean\": " << ns(s.handoff_mean)
    << ", \"p50\": " << ns(s.handoff_p50) << ", \"p99\": " << ns(s.handoff_p99) << "},\n"
    << "    \"max_bypass\": " << s.max_bypass << ",\n"
    << "    \"jain_entries\": " << fmt("%.6f", s.jain_entries) << ",\n"
    << "    \"jain_wait\": " << fmt("%.6f", s.jain_wait) << ",\n"
    << "    \"events\": " << s.events << "\n  }\n}\n";
  return o.str();
}

std::string report_table(const run_config& c, const summary& s) {
  const workload& w = c.load;
  std::ostringstream o;
  auto row = [&](const char* k, const std::string& v) { o << fmt("  %-26s ", k) << v << '\n'; };
  o << "tally-sim run: " << c.algorithm << ", " << w.ranks << " ranks (" << w.active.size() << " requesting)\n";
  row("network", fmt("%s: L %s, o %s, g %s, G %s/B, R %s over %" PRIu64 " B, window %" PRIu64 ", e %s, s %s per entry",
                     c.network_name.c_str(), human(static_cast<double>(c.net.latency)).c_str(),
                     human(static_cast<double>(c.net.overhead)).c_str(), human(static_cast<double>(c.net.gap)).c_str(),
                     human(c.net.byte_time).c_str(), human(static_cast<double>(c.net.rendezvous)).c_str(),
                     c.net.eager_limit, c.net.window, human(static_cast<double>(c.net.entry_time)).c_str(),
                     human(static_cast<double>(c.net.scan_time)).c_str()));
  if (c.ranks_per_node > 0)
    row("nodes", fmt("%d of %d ranks, shm inside", w.ranks / c.ranks_per_node, c.ranks_per_node) +
                     (c.algorithm == "two-level" ? fmt(", pass bound %u, local grant %s", c.pass_bound,
                                                       human(static_cast<double>(c.local_grant)).c_str()) +
                                                       fmt(", token e %s, s %s per entry",
                                                           human(static_cast<double>(c.net.node_entry_time)).c_str(),
                                                           human(static_cast<double>(c.net.node_scan_time)).c_str())
                                                 : std::string()));
  row("workload", "cs " + describe(w.cs) + ", think " + describe(w.think) + ", " +
                      (w.requests_per_rank ? std::to_string(w.requests_per_rank) + " per rank"
                                           : std::to_string(w.total_requests) + " in total") +
                      ", seed " + std::to_string(w.seed));
  row("CS entries", std::to_string(s.entries) + " (" + std::to_string(s.local_entries) + " without messages)");
  row("simulated time", human(static_cast<double>(s.end_time)));
  row("throughput", fmt("%.6g CS/s", s.cs_per_second));
  std::string m = per(s.total_messages, s.entries), b = per(s.total_bytes, s.entries);
  const char* sep = " (";
  for (msg_kind k : kinds_of(c)) {
    const auto i = static_cast<std::size_t>(k);
    m += sep + std::string(to_string(k)) + " " + per(s.messages[i], s.entries);
    b += sep + std::string(to_string(k)) + " " + per(s.bytes[i], s.entries);
    sep = ", ";
  }
  row("messages per CS", m + ")");
  row("bytes per CS", b + ")");
  row("wait (request -> entry)", "mean " + human(s.wait_mean) + ", p50 " + human(static_cast<double>(s.wait_p50)) +
                                     ", p99 " + human(static_cast<double>(s.wait_p99)) + ", max " +
                                     human(static_cast<double>(s.wait_max)));
  row("handoff (exit -> entry)",
      "mean " + human(s.handoff_mean) + ", p50 " + human(static_cast<double>(s.handoff_p50)) + ", p99 " +
          human(static_cast<double>(s.handoff_p99)) + " (" + std::to_string(s.handoffs) + " handoffs)");
  row("max bypass", std::to_string(s.max_bypass) + " entries");
  row("Jain fairness", fmt("%.6f over entries, %.6f over mean wait", s.jain_entries, s.jain_wait));
  row("events", std::to_string(s.events));
  return o.str();
}

}  // namespace tally::sim
