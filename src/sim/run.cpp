#include "sim/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "sim/algorithms/central.hpp"
#include "sim/algorithms/ricart_agrawala.hpp"
#include "sim/algorithms/suzuki_kasami.hpp"

namespace tally::sim {

const char* to_string(algorithm a) noexcept {
  switch (a) {
    case algorithm::suzuki_kasami: return suzuki_kasami::name;
    case algorithm::ricart_agrawala: return ricart_agrawala::name;
    case algorithm::central: return central::name;
  }
  return "?";
}

const std::vector<network_preset>& network_presets() {
  // scripts/calibrate-sim on the development machine (Open MPI 4.1 shared memory,
  // 2 ranks); the run and its inputs: docs/simulator.md#calibration.
  static const std::vector<network_preset> presets{
      //        L        o       g       G (ps/B)  E     R
      {"shm", {145'600, 24'000, 41'900, 66.45, 4096, 1'737'000}},
  };
  return presets;
}

// ---------------------------------------------------------------------------------
// Summary

ps_t percentile(std::vector<ps_t>& v, double p) {
  if (v.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const auto k = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::uint64_t max_bypass(const std::vector<ps_t>& issued) {
  // Inversions per element, with a Fenwick tree over the ranks of the issue times.
  std::vector<ps_t> times(issued);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::vector<std::uint64_t> tree(times.size() + 1, 0);
  std::uint64_t best = 0, seen = 0;
  for (ps_t t : issued) {
    const auto rank =
        static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin()) + 1;
    std::uint64_t at_or_before = 0;  // earlier entries issued at or before t
    for (std::size_t i = rank; i > 0; i -= i & (~i + 1)) at_or_before += tree[i];
    best = std::max(best, seen - at_or_before);
    for (std::size_t i = rank; i < tree.size(); i += i & (~i + 1)) ++tree[i];
    ++seen;
  }
  return best;
}

double jain(const std::vector<double>& x) {
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  if (x.empty() || sq == 0) return 1.0;
  return sum * sum / (static_cast<double>(x.size()) * sq);
}

namespace {
double mean(const std::vector<ps_t>& v) {
  if (v.empty()) return 0;
  long double s = 0;
  for (ps_t x : v) s += static_cast<long double>(x);
  return static_cast<double>(s / static_cast<long double>(v.size()));
}
}  // namespace

summary summarize(raw_results r, const workload& w) {
  summary s;
  s.entries = r.entries;
  s.end_time = r.end_time;
  const ps_t span = r.end_time - r.first_entry;
  s.cs_per_second = span > 0 ? static_cast<double>(r.entries) * 1e12 / static_cast<double>(span) : 0;
  s.messages = r.messages;
  s.bytes = r.bytes;
  for (std::size_t k = 0; k < msg_kinds; ++k) {
    s.total_messages += r.messages[k];
    s.total_bytes += r.bytes[k];
  }
  s.max_bypass = max_bypass(r.issue_times);
  s.wait_mean = mean(r.waits);
  s.wait_max = r.waits.empty() ? 0 : *std::max_element(r.waits.begin(), r.waits.end());
  s.wait_p50 = percentile(r.waits, 50);
  s.wait_p99 = percentile(r.waits, 99);
  s.handoffs = r.handoffs.size();
  s.handoff_mean = mean(r.handoffs);
  s.handoff_p50 = percentile(r.handoffs, 50);
  s.handoff_p99 = percentile(r.handoffs, 99);
  std::vector<double> entries, waits;
  for (std::int32_t i : w.active) {
    const auto k = static_cast<std::size_t>(i);
    entries.push_back(static_cast<double>(r.entries_per_node[k]));
    if (r.entries_per_node[k] > 0)
      waits.push_back(static_cast<double>(r.wait_sum_per_node[k]) /
                      static_cast<double>(r.entries_per_node[k]));
  }
  s.jain_entries = jain(entries);
  s.jain_wait = jain(waits);
  s.events = r.events;
  return s;
}

namespace {
template <class Model>
summary run_model(const run_config& cfg, const progress_fn& progress, std::uint64_t every,
                  std::uint64_t& local) {
  engine<Model> e(cfg.net, cfg.load);
  raw_results r = e.run(progress, every);
  if constexpr (std::is_same_v<Model, suzuki_kasami>)
    local = e.model().local_entries();
  else if constexpr (std::is_same_v<Model, central>)
    local = r.entries_per_node.empty() ? 0 : r.entries_per_node[0];
  return summarize(std::move(r), cfg.load);
}
}  // namespace

summary simulate(const run_config& cfg, const progress_fn& progress, std::uint64_t every) {
  std::uint64_t local = 0;
  summary s;
  switch (cfg.algo) {
    case algorithm::suzuki_kasami: s = run_model<suzuki_kasami>(cfg, progress, every, local); break;
    case algorithm::ricart_agrawala: s = run_model<ricart_agrawala>(cfg, progress, every, local); break;
    case algorithm::central: s = run_model<central>(cfg, progress, every, local); break;
  }
  s.local_entries = local;
  return s;
}

// ---------------------------------------------------------------------------------
// Reports

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

std::string fmt(const char* f, auto... v) {
  const int len = std::snprintf(nullptr, 0, f, v...);
  std::string s(static_cast<std::size_t>(std::max(len, 0)) + 1, '\0');
  std::snprintf(s.data(), s.size(), f, v...);
  s.pop_back();
  return s;
}
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
    case duration_dist::shape::uniform:
      return "uniform:" + duration_text(d.a) + ":" + duration_text(d.b);
  }
  return "?";
}
std::vector<msg_kind> kinds_of(algorithm a) {
  switch (a) {
    case algorithm::suzuki_kasami: return {msg_kind::request, msg_kind::token};
    case algorithm::ricart_agrawala: return {msg_kind::request, msg_kind::reply};
    case algorithm::central: return {msg_kind::request, msg_kind::grant, msg_kind::release};
  }
  return {};
}

}  // namespace

std::string report_json(const run_config& c, const summary& s) {
  const workload& w = c.load;
  std::ostringstream o;
  o << "{\n  \"algorithm\": \"" << to_string(c.algo) << "\",\n"
    << "  \"nodes\": " << w.nodes << ",\n  \"active\": " << w.active.size() << ",\n"
    << "  \"network\": {\"preset\": \"" << c.network_name << "\", \"latency_ns\": "
    << ns(c.net.latency) << ", \"overhead_ns\": " << ns(c.net.overhead)
    << ", \"gap_ns\": " << ns(c.net.gap) << ", \"byte_time_ns\": " << fmt("%.6f", c.net.byte_time / 1000)
    << ", \"eager_limit\": " << c.net.eager_limit << ", \"rendezvous_ns\": " << ns(c.net.rendezvous)
    << "},\n"
    << "  \"workload\": {\"cs\": \"" << describe(w.cs) << "\", \"think\": \"" << describe(w.think)
    << "\", \"requests_per_node\": " << w.requests_per_node
    << ", \"total_requests\": " << w.total_requests << ", \"seed\": " << w.seed << "},\n"
    << "  \"results\": {\n"
    << "    \"entries\": " << s.entries << ",\n"
    << "    \"local_entries\": " << s.local_entries << ",\n"
    << "    \"simulated_seconds\": " << fmt("%.12f", static_cast<double>(s.end_time) / 1e12) << ",\n"
    << "    \"cs_per_second\": " << fmt("%.3f", s.cs_per_second) << ",\n"
    << "    \"messages\": {\"total\": " << s.total_messages
    << ", \"per_cs\": " << per(s.total_messages, s.entries);
  for (msg_kind k : kinds_of(c.algo))
    o << ", \"" << to_string(k) << "\": " << s.messages[static_cast<std::size_t>(k)];
  o << "},\n    \"bytes\": {\"total\": " << s.total_bytes
    << ", \"per_cs\": " << per(s.total_bytes, s.entries);
  for (msg_kind k : kinds_of(c.algo))
    o << ", \"" << to_string(k) << "\": " << s.bytes[static_cast<std::size_t>(k)];
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
  o << "tally-sim run: " << to_string(c.algo) << ", " << w.nodes << " nodes (" << w.active.size()
    << " requesting)\n";
  row("network", fmt("%s: L %s, o %s, g %s, G %s/B, R %s over %" PRIu64 " B", c.network_name.c_str(),
                     human(static_cast<double>(c.net.latency)).c_str(),
                     human(static_cast<double>(c.net.overhead)).c_str(),
                     human(static_cast<double>(c.net.gap)).c_str(), human(c.net.byte_time).c_str(),
                     human(static_cast<double>(c.net.rendezvous)).c_str(), c.net.eager_limit));
  row("workload", "cs " + describe(w.cs) + ", think " + describe(w.think) + ", " +
                      (w.requests_per_node ? std::to_string(w.requests_per_node) + " per node"
                                           : std::to_string(w.total_requests) + " in total") +
                      ", seed " + std::to_string(w.seed));
  row("CS entries", std::to_string(s.entries) + " (" + std::to_string(s.local_entries) +
                        " without messages)");
  row("simulated time", human(static_cast<double>(s.end_time)));
  row("throughput", fmt("%.6g CS/s", s.cs_per_second));
  std::string m = per(s.total_messages, s.entries), b = per(s.total_bytes, s.entries);
  const char* sep = " (";
  for (msg_kind k : kinds_of(c.algo)) {
    const auto i = static_cast<std::size_t>(k);
    m += sep + std::string(to_string(k)) + " " + per(s.messages[i], s.entries);
    b += sep + std::string(to_string(k)) + " " + per(s.bytes[i], s.entries);
    sep = ", ";
  }
  row("messages per CS", m + ")");
  row("bytes per CS", b + ")");
  row("wait (request -> entry)", "mean " + human(s.wait_mean) + ", p50 " +
                                     human(static_cast<double>(s.wait_p50)) + ", p99 " +
                                     human(static_cast<double>(s.wait_p99)) + ", max " +
                                     human(static_cast<double>(s.wait_max)));
  row("handoff (exit -> entry)", "mean " + human(s.handoff_mean) + ", p50 " +
                                     human(static_cast<double>(s.handoff_p50)) + ", p99 " +
                                     human(static_cast<double>(s.handoff_p99)) + " (" +
                                     std::to_string(s.handoffs) + " handoffs)");
  row("max bypass", std::to_string(s.max_bypass) + " entries");
  row("Jain fairness", fmt("%.6f over entries, %.6f over mean wait", s.jain_entries, s.jain_wait));
  row("events", std::to_string(s.events));
  return o.str();
}

// ---------------------------------------------------------------------------------
// Command line

namespace {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* help_text = R"(usage: tally-sim run --nodes N [options]

Simulates N ranks taking a distributed lock over a LogGP-style network and reports
throughput, messages and bytes per critical section, wait, handoff, bypass and
fairness. The same arguments give the same report. See docs/simulator.md.

  --nodes N                 ranks in the group (2 .. 16777216), required
  --algorithm A             suzuki-kasami (default; the real protocol core),
                            ricart-agrawala, or central (lock server on rank 0)
  --requests-per-node R     critical sections per requesting rank (default 100)
  --total-requests C        or: critical sections in total, whoever asks first
  --active K                only K ranks ever request: rank (a+1)N/K - 1 for
                            a = 0..K-1 (default all); the others only receive
  --cs-time DIST            time inside the critical section (default 1us)
  --think-time DIST         time before each request (default 0: saturation)
  --network NAME            LogGP parameters calibrated on the development machine:
                            shm (Open MPI shared memory; the default)
  --latency T               L: wire latency
  --overhead T              o: CPU time per message, at sender and receiver
  --gap T                   g: minimum time between two sends of one rank
  --byte-time T             G: time per payload byte (the token is 12N+4 bytes)
  --eager-limit BYTES       E: larger messages take the rendezvous protocol
  --rendezvous T            R: extra latency of a message over E bytes
  --seed S                  random seed (default 1)
  --json                    JSON report instead of a table
  --progress, --no-progress progress bar on stderr (default: only on a terminal)
  --help                    this text

T is a duration with a unit: 0, 250ns, 1.5us, 2ms, 1s.
DIST is T (fixed), exp:T (exponential with mean T) or uniform:T:T.
Exit status: 0 done, 1 a simulator invariant failed, 2 bad usage.
)";

double parse_time(const std::string& opt, const std::string& v) {
  if (v == "0") return 0;
  static const std::pair<const char*, double> units[] = {
      {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  for (const auto& [u, scale] : units) {
    const std::string unit(u);
    if (v.size() > unit.size() && v.compare(v.size() - unit.size(), unit.size(), unit) == 0) {
      const std::string num = v.substr(0, v.size() - unit.size());
      char* end = nullptr;
      const double x = std::strtod(num.c_str(), &end);
      if (end == num.c_str() || *end != '\0' || !std::isfinite(x) || x < 0 || x * scale > 9e18)
        break;
      if (unit == "s" && !num.empty() && (num.back() == 'n' || num.back() == 'u' || num.back() == 'm'))
        break;
      return x * scale;
    }
  }
  throw usage_error(opt + ": expected a duration such as 0, 250ns, 1.5us, 2ms or 1s, got '" + v + "'");
}

ps_t parse_ps(const std::string& opt, const std::string& v) {
  return static_cast<ps_t>(std::llround(parse_time(opt, v)));
}

duration_dist parse_dist(const std::string& opt, const std::string& v) {
  duration_dist d;
  if (v.rfind("exp:", 0) == 0) {
    d.kind = duration_dist::shape::exponential;
    d.a = parse_ps(opt, v.substr(4));
  } else if (v.rfind("uniform:", 0) == 0) {
    const std::string rest = v.substr(8);
    const auto colon = rest.find(':');
    if (colon == std::string::npos)
      throw usage_error(opt + ": expected uniform:LO:HI, got '" + v + "'");
    d.kind = duration_dist::shape::uniform;
    d.a = parse_ps(opt, rest.substr(0, colon));
    d.b = parse_ps(opt, rest.substr(colon + 1));
    if (d.b < d.a) throw usage_error(opt + ": uniform:LO:HI needs LO <= HI, got '" + v + "'");
  } else {
    d.a = parse_ps(opt, v);
  }
  return d;
}

std::uint64_t parse_uint(const std::string& opt, const std::string& v, std::uint64_t lo,
                         std::uint64_t hi) {
  std::uint64_t x = 0;
  bool ok = !v.empty() && v.size() <= 20;
  for (char ch : v) {
    if (ch < '0' || ch > '9' || x > (UINT64_MAX - 9) / 10) {
      ok = false;
      break;
    }
    x = x * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  if (!ok || x < lo || x > hi)
    throw usage_error(opt + ": expected an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got '" + v + "'");
  return x;
}

struct options {
  run_config cfg;
  bool json = false;
  std::optional<bool> progress;
  bool help = false;
};

options parse(const std::vector<std::string>& args) {
  options o;
  std::optional<std::uint64_t> nodes, per_node, total, active;
  std::optional<ps_t> latency, overhead, gap;
  std::optional<double> byte_time;
  std::optional<std::uint64_t> eager;
  std::optional<ps_t> rendezvous;
  std::string algo = "suzuki-kasami";
  duration_dist cs{duration_dist::shape::fixed, 1'000'000, 0}, think;
  std::uint64_t seed = 1;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string opt = args[i], val;
    bool has_val = false;
    if (const auto eq = opt.find('='); opt.rfind("--", 0) == 0 && eq != std::string::npos) {
      val = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
      has_val = true;
    }
    auto value = [&]() -> const std::string& {
      if (!has_val) {
        if (i + 1 >= args.size()) throw usage_error(opt + ": missing value");
        val = args[++i];
        has_val = true;
      }
      return val;
    };
    auto flag = [&]() {
      if (has_val) throw usage_error(opt + ": takes no value");
    };
    if (opt == "--help" || opt == "-h") { flag(); o.help = true; }
    else if (opt == "--json") { flag(); o.json = true; }
    else if (opt == "--progress") { flag(); o.progress = true; }
    else if (opt == "--no-progress") { flag(); o.progress = false; }
    else if (opt == "--nodes") nodes = parse_uint(opt, value(), 2, 1u << 24);
    else if (opt == "--algorithm") algo = value();
    else if (opt == "--requests-per-node") per_node = parse_uint(opt, value(), 1, 1ull << 40);
    else if (opt == "--total-requests") total = parse_uint(opt, value(), 1, 1ull << 40);
    else if (opt == "--active") active = parse_uint(opt, value(), 1, 1u << 24);
    else if (opt == "--cs-time") cs = parse_dist(opt, value());
    else if (opt == "--think-time") think = parse_dist(opt, value());
    else if (opt == "--network") o.cfg.network_name = value();
    else if (opt == "--latency") latency = parse_ps(opt, value());
    else if (opt == "--overhead") overhead = parse_ps(opt, value());
    else if (opt == "--gap") gap = parse_ps(opt, value());
    else if (opt == "--byte-time") byte_time = parse_time(opt, value());
    else if (opt == "--eager-limit") eager = parse_uint(opt, value(), 0, UINT64_MAX);
    else if (opt == "--rendezvous") rendezvous = parse_ps(opt, value());
    else if (opt == "--seed") seed = parse_uint(opt, value(), 0, UINT64_MAX);
    else throw usage_error("unknown option '" + args[i] + "'");
  }
  if (o.help) return o;
  if (!nodes) throw usage_error("--nodes is required");
  if (per_node && total) throw usage_error("--requests-per-node and --total-requests exclude each other");

  run_config& c = o.cfg;
  if (algo == "suzuki-kasami") c.algo = algorithm::suzuki_kasami;
  else if (algo == "ricart-agrawala") c.algo = algorithm::ricart_agrawala;
  else if (algo == "central") c.algo = algorithm::central;
  else throw usage_error("--algorithm: expected suzuki-kasami, ricart-agrawala or central, got '" + algo + "'");

  const auto& presets = network_presets();
  const auto p = std::find_if(presets.begin(), presets.end(),
                              [&](const network_preset& x) { return c.network_name == x.name; });
  if (p == presets.end()) {
    std::string names;
    for (const network_preset& x : presets) names += (names.empty() ? "" : " or ") + std::string(x.name);
    throw usage_error("--network: expected " + names + ", got '" + c.network_name + "'");
  }
  c.net = p->params;
  if (latency) c.net.latency = *latency;
  if (overhead) c.net.overhead = *overhead;
  if (gap) c.net.gap = *gap;
  if (byte_time) c.net.byte_time = *byte_time;
  if (eager) c.net.eager_limit = *eager;
  if (rendezvous) c.net.rendezvous = *rendezvous;

  workload& w = c.load;
  w.nodes = static_cast<std::int32_t>(*nodes);
  const std::uint64_t k = active.value_or(*nodes);
  if (k > *nodes)
    throw usage_error("--active: " + std::to_string(k) + " exceeds --nodes " + std::to_string(*nodes));
  for (std::uint64_t a = 1; a <= k; ++a)  // evenly spread, the last rank always among them
    w.active.push_back(static_cast<std::int32_t>(a * *nodes / k - 1));
  w.cs = cs;
  w.think = think;
  w.seed = seed;
  if (total)
    w.total_requests = *total;
  else
    w.requests_per_node = per_node.value_or(100);

  if (c.algo == algorithm::suzuki_kasami) {
    // Each instantiated node holds RN[n] (8 bytes each) and n bytes of scratch.
    const double need = 9.0 * static_cast<double>(*nodes) * static_cast<double>(k + 1);
    const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<double>(sysconf(_SC_PAGE_SIZE));
    if (have > 0 && need > 0.75 * have)
      throw usage_error(fmt("suzuki-kasami with %" PRIu64 " nodes, %" PRIu64
                            " requesting, needs about %.1f GiB of RN rows (9 x N x active "
                            "bytes); this machine has %.1f GiB. Lower --active.",
                            *nodes, k, need / 1073741824.0, have / 1073741824.0));
  }
  return o;
}

// Draws the progress bar on a terminal, or prints a line every 10% elsewhere.
class progress_bar {
 public:
  progress_bar(std::ostream& err, bool tty, std::uint64_t target)
      : err_(err), tty_(tty), target_(std::max<std::uint64_t>(target, 1)),
        start_(std::chrono::steady_clock::now()), last_(start_) {}
  void operator()(std::uint64_t entries, std::uint64_t events) {
    const auto now = std::chrono::steady_clock::now();
    const double pct = 100.0 * static_cast<double>(entries) / static_cast<double>(target_);
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? static_cast<double>(events) / secs : 0;
    if (tty_) {
      if (now - last_ < std::chrono::milliseconds(200)) return;
      const int filled = static_cast<int>(pct / 100.0 * 30);
      err_ << '\r' << '[' << std::string(static_cast<std::size_t>(std::clamp(filled, 0, 30)), '#')
           << std::string(static_cast<std::size_t>(30 - std::clamp(filled, 0, 30)), '.') << "] "
           << fmt("%5.1f%%  %" PRIu64 "/%" PRIu64 " CS  %.3g events/s ", pct, entries, target_, rate)
           << std::flush;
      drawn_ = true;
    } else {
      if (pct < next_pct_) return;
      while (next_pct_ <= pct) next_pct_ += 10;
      err_ << fmt("tally-sim: %.0f%% (%" PRIu64 "/%" PRIu64 " CS), %.3g events/s\n", pct, entries,
                  target_, rate)
           << std::flush;
    }
    last_ = now;
  }
  void clear() {
    if (drawn_) err_ << "\r\033[K" << std::flush;
  }

 private:
  std::ostream& err_;
  bool tty_;
  std::uint64_t target_;
  std::chrono::steady_clock::time_point start_, last_;
  double next_pct_ = 10;
  bool drawn_ = false;
};

}  // namespace

int run_command(std::span<const std::string_view> args, std::ostream& out, std::ostream& err,
                bool err_is_tty) {
  options o;
  try {
    o = parse(std::vector<std::string>(args.begin(), args.end()));
  } catch (const usage_error& e) {
    err << "tally-sim run: " << e.what() << "\nTry 'tally-sim run --help'.\n";
    return 2;
  }
  if (o.help) {
    out << help_text;
    return 0;
  }
  const workload& w = o.cfg.load;
  const std::uint64_t target =
      w.total_requests ? w.total_requests : w.requests_per_node * w.active.size();
  const bool show = o.progress.value_or(err_is_tty);
  progress_bar bar(err, err_is_tty, target);
  progress_fn fn;
  if (show) fn = [&bar](std::uint64_t entries, std::uint64_t events) { bar(entries, events); };

  const auto t0 = std::chrono::steady_clock::now();
  summary s;
  try {
    s = simulate(o.cfg, fn, 1u << 18);
  } catch (const invariant_violation& e) {
    bar.clear();
    err << e.what() << '\n';
    return 1;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bar.clear();
  out << (o.json ? report_json(o.cfg, s) : report_table(o.cfg, s)) << std::flush;
  err << fmt("tally-sim: %" PRIu64 " events in %.3f s wall, %.4g events/s\n", s.events, wall,
             wall > 0 ? static_cast<double>(s.events) / wall : 0.0);
  return 0;
}

int run::main(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  return run_command(args, out, err, &err == &std::cerr && isatty(STDERR_FILENO) == 1);
}

}  // namespace tally::sim
