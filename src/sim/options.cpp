// sim/options.cpp — `tally-sim run`'s options (sim/options.hpp).
#include "sim/options.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>

#include "sim/text.hpp"

namespace tally::sim {

namespace {

using text::fmt;

double parse_time(const std::string& opt, const std::string& v) {
  if (v == "0") return 0;
  static const std::pair<const char*, double> units[] = {{"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  for (const auto& [u, scale] : units) {
    const std::string unit(u);
    if (v.size() > unit.size() && v.compare(v.size() - unit.size(), unit.size(), unit) == 0) {
      const std::string num = v.substr(0, v.size() - unit.size());
      char* end = nullptr;
      const double x = std::strtod(num.c_str(), &end);
      if (end == num.c_str() || *end != '\0' || !std::isfinite(x) || x < 0 || x * scale > 9e18) break;
      if (unit == "s" && !num.empty() && (num.back() == 'n' || num.back() == 'u' || num.back() == 'm')) break;
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
    if (colon == std::string::npos) throw usage_error(opt + ": expected uniform:LO:HI, got '" + v + "'");
    d.kind = duration_dist::shape::uniform;
    d.a = parse_ps(opt, rest.substr(0, colon));
    d.b = parse_ps(opt, rest.substr(colon + 1));
    if (d.b < d.a) throw usage_error(opt + ": uniform:LO:HI needs LO <= HI, got '" + v + "'");
  } else {
    d.a = parse_ps(opt, v);
  }
  return d;
}

std::uint64_t parse_uint(const std::string& opt, const std::string& v, std::uint64_t lo, std::uint64_t hi) {
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
    throw usage_error(opt + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                      v + "'");
  return x;
}

// What the command line said, before the options are checked against each other.
struct given {
  options* o = nullptr;
  std::optional<std::uint64_t> ranks, per_rank, total, active;
  std::optional<ps_t> latency, overhead, gap;
  std::optional<double> byte_time;
  std::optional<std::uint64_t> eager;
  std::optional<ps_t> rendezvous, entry_time, scan_time, node_entry_time, node_scan_time;
  std::optional<std::uint64_t> window;
  std::string algo = "suzuki-kasami";
  duration_dist cs{duration_dist::shape::fixed, 1'000'000, 0}, think;
  std::uint64_t seed = 1;
  std::optional<std::uint64_t> per_node, bound;
  std::optional<ps_t> local_grant;
  std::optional<std::string> node_token;
};

// Every option once: its name, its value's name (none: a flag), its help (a new
// line continues it) and what it sets. The help text and the parser both read this.
struct option_spec {
  const char* name;
  const char* arg;  // nullptr: a flag
  const char* help;
  void (*set)(given& g, const std::string& opt, const std::string& v);
  const char* old_name = nullptr;  // a deprecated spelling, accepted with a note
};

constexpr std::uint64_t max_ranks = 1u << 24;

const option_spec option_table[] = {
    {"--ranks", "N", "ranks in the group (2 .. 16777216), required",
     [](given& g, const std::string& o, const std::string& v) { g.ranks = parse_uint(o, v, 2, max_ranks); }, "--nodes"},
    {"--algorithm", "A",
     "the lock model (default the first):", [](given& g, const std::string&, const std::string& v) { g.algo = v; }},
    {"--requests-per-rank", "R", "critical sections per requesting rank (default 100)",
     [](given& g, const std::string& o, const std::string& v) { g.per_rank = parse_uint(o, v, 1, 1ull << 40); },
     "--requests-per-node"},
    {"--total-requests", "C", "or: critical sections in total, whoever asks first",
     [](given& g, const std::string& o, const std::string& v) { g.total = parse_uint(o, v, 1, 1ull << 40); }},
    {"--active", "K",
     "only K ranks ever request: rank (a+1)N/K - 1 for\na = 0..K-1 (default all); the others only receive",
     [](given& g, const std::string& o, const std::string& v) { g.active = parse_uint(o, v, 1, max_ranks); }},
    {"--cs-time", "DIST", "time inside the critical section (default 1us)",
     [](given& g, const std::string& o, const std::string& v) { g.cs = parse_dist(o, v); }},
    {"--think-time", "DIST", "time before each request (default 0: saturation)",
     [](given& g, const std::string& o, const std::string& v) { g.think = parse_dist(o, v); }},
    {"--network", "NAME",
     "LogGP parameters calibrated on the development machine:\nshm (Open MPI shared memory; the default)",
     [](given& g, const std::string&, const std::string& v) { g.o->cfg.network_name = v; }},
    {"--latency", "T", "L: wire latency",
     [](given& g, const std::string& o, const std::string& v) { g.latency = parse_ps(o, v); }},
    {"--overhead", "T", "o: CPU time per message, at sender and receiver",
     [](given& g, const std::string& o, const std::string& v) { g.overhead = parse_ps(o, v); }},
    {"--gap", "T", "g: minimum time between two sends of one rank",
     [](given& g, const std::string& o, const std::string& v) { g.gap = parse_ps(o, v); }},
    {"--byte-time", "T", "G: time per payload byte (the token is 4N bytes)",
     [](given& g, const std::string& o, const std::string& v) { g.byte_time = parse_time(o, v); }},
    {"--eager-limit", "BYTES", "E: larger messages take the rendezvous protocol",
     [](given& g, const std::string& o, const std::string& v) { g.eager = parse_uint(o, v, 0, UINT64_MAX); }},
    {"--rendezvous", "T", "R: extra latency of a message over E bytes",
     [](given& g, const std::string& o, const std::string& v) { g.rendezvous = parse_ps(o, v); }},
    {"--entry-time", "T", "e: CPU per LN entry of a token, at the sender\n(encoding) and at the receiver (decoding)",
     [](given& g, const std::string& o, const std::string& v) { g.entry_time = parse_ps(o, v); }},
    {"--scan-time", "T", "s: CPU per LN entry of a release's scan for fresh\nrequests, before the token it sends",
     [](given& g, const std::string& o, const std::string& v) { g.scan_time = parse_ps(o, v); }},
    {"--node-entry-time", "T",
     "two-level: e of the node topology's token (its own\nhop: LN is copied into the node's shared state)",
     [](given& g, const std::string& o, const std::string& v) { g.node_entry_time = parse_ps(o, v); }},
    {"--node-scan-time", "T", "two-level: s of the node topology's token",
     [](given& g, const std::string& o, const std::string& v) { g.node_scan_time = parse_ps(o, v); }},
    {"--broadcast-window", "W",
     "a token sent during the sender's own broadcast leaves\nafter the current window of W REQUESTs (default 16,\n"
     "as the runtime's); 0: after the whole broadcast",
     [](given& g, const std::string& o, const std::string& v) { g.window = parse_uint(o, v, 0, 1u << 30); }},
    {"--ranks-per-node", "R",
     "ranks [kR, (k+1)R) share node k: a message between two\nof them costs the shm preset's, not the network's\n"
     "(default: one rank per node); two-level needs it",
     [](given& g, const std::string& o, const std::string& v) { g.per_node = parse_uint(o, v, 1, max_ranks); }},
    {"--pass-bound", "B", "two-level: local grants in a row while another node\nwaits (default 16, as the runtime's)",
     [](given& g, const std::string& o, const std::string& v) { g.bound = parse_uint(o, v, 1, 1u << 20); }},
    {"--local-grant", "T",
     "two-level: a grant inside a node, unlock to the\nwaiter's entry (default: the calibrated shm value)",
     [](given& g, const std::string& o, const std::string& v) { g.local_grant = parse_ps(o, v); }},
    {"--node-token", "FORM",
     "two-level: the token's body, shorter (default: a\ndelta of the LN entries the receiver's copy lacks\n"
     "where that is shorter), delta or full",
     [](given& g, const std::string&, const std::string& v) { g.node_token = v; }},
    {"--seed", "S", "random seed (default 1)",
     [](given& g, const std::string& o, const std::string& v) { g.seed = parse_uint(o, v, 0, UINT64_MAX); }},
    {"--json", nullptr, "JSON report instead of a table",
     [](given& g, const std::string&, const std::string&) { g.o->json = true; }},
    {"--progress", nullptr, "progress bar on stderr (default: only on a terminal)",
     [](given& g, const std::string&, const std::string&) { g.o->progress = true; }},
    {"--no-progress", nullptr, "no progress bar",
     [](given& g, const std::string&, const std::string&) { g.o->progress = false; }},
    {"--help", nullptr, "this text", [](given& g, const std::string&, const std::string&) { g.o->help = true; }, "-h"},
};

}  // namespace

std::string help_text() {
  std::string h =
      "usage: tally-sim run --ranks N [options]\n\n"
      "Simulates N ranks taking a distributed lock over a LogGP-style network and reports\n"
      "throughput, messages and bytes per critical section, wait, handoff, bypass and\n"
      "fairness. The same arguments give the same report. See docs/simulator.md.\n\n";
  constexpr std::size_t column = 28;
  const auto lines = [&](const std::string& left, const std::string& text) {
    std::string rest = text;
    for (bool at_first = true;; at_first = false) {
      const auto nl = rest.find('\n');
      const std::string line = rest.substr(0, nl);
      std::string head = at_first ? left : "";
      head.resize(std::max(column, head.size() + 1), ' ');
      h += head + line + "\n";
      if (nl == std::string::npos) break;
      rest = rest.substr(nl + 1);
    }
  };
  for (const option_spec& s : option_table) {
    lines("  " + std::string(s.name) + (s.arg ? std::string(" ") + s.arg : ""), s.help);
    if (s.old_name && std::string(s.old_name).rfind("--", 0) == 0)
      lines("", std::string("(") + s.old_name + (s.arg ? std::string(" ") + s.arg : "") +
                    ": the old spelling, deprecated)");
    if (std::string(s.name) == "--algorithm")
      for (const model_entry& m : models()) h += fmt("                              %-16s %s\n", m.name, m.about);
  }
  return h +
         "\nT is a duration with a unit: 0, 250ns, 1.5us, 2ms, 1s.\n"
         "DIST is T (fixed), exp:T (exponential with mean T) or uniform:T:T.\n"
         "Exit status: 0 done, 1 a simulator invariant failed, 2 bad usage.\n";
}

options parse_options(const std::vector<std::string>& args) {
  options o;
  given g;
  g.o = &o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string opt = args[i], val;
    bool has_val = false;
    if (const auto eq = opt.find('='); opt.rfind("--", 0) == 0 && eq != std::string::npos) {
      val = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
      has_val = true;
    }
    const auto spec = std::find_if(std::begin(option_table), std::end(option_table), [&](const option_spec& s) {
      return opt == s.name || (s.old_name && opt == s.old_name);
    });
    if (spec == std::end(option_table)) throw usage_error("unknown option '" + args[i] + "'");
    if (spec->old_name && opt == spec->old_name && opt.rfind("--", 0) == 0)
      o.notes.push_back(opt + " is deprecated; it is now " + spec->name);
    if (!spec->arg) {
      if (has_val) throw usage_error(opt + ": takes no value");
    } else if (!has_val) {
      if (i + 1 >= args.size()) throw usage_error(opt + ": missing value");
      val = args[++i];
    }
    spec->set(g, opt, val);
  }
  // The checks below read what was given by name.
  auto& ranks = g.ranks;
  auto& per_rank = g.per_rank;
  auto& total = g.total;
  auto& active = g.active;
  auto& latency = g.latency;
  auto& overhead = g.overhead;
  auto& gap = g.gap;
  auto& byte_time = g.byte_time;
  auto& eager = g.eager;
  auto& rendezvous = g.rendezvous;
  auto& entry_time = g.entry_time;
  auto& scan_time = g.scan_time;
  auto& node_entry_time = g.node_entry_time;
  auto& node_scan_time = g.node_scan_time;
  auto& window = g.window;
  auto& algo = g.algo;
  auto& cs = g.cs;
  auto& think = g.think;
  auto& seed = g.seed;
  auto& per_node = g.per_node;
  auto& bound = g.bound;
  auto& local_grant = g.local_grant;
  auto& node_token = g.node_token;
  if (o.help) return o;
  if (!ranks) throw usage_error("--ranks is required");
  if (per_rank && total) throw usage_error("--requests-per-rank and --total-requests exclude each other");

  run_config& c = o.cfg;
  if (!find_model(algo)) {
    std::string names;
    for (const model_entry& m : models()) names += (names.empty() ? "" : ", ") + std::string(m.name);
    throw usage_error("--algorithm: expected one of " + names + ", got '" + algo + "'");
  }
  c.algorithm = algo;

  const auto& presets = network_presets();
  const auto p =
      std::find_if(presets.begin(), presets.end(), [&](const network_preset& x) { return c.network_name == x.name; });
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
  if (window) c.net.window = *window;
  if (entry_time) c.net.entry_time = *entry_time;
  if (scan_time) c.net.scan_time = *scan_time;
  if (node_entry_time) c.net.node_entry_time = *node_entry_time;
  if (node_scan_time) c.net.node_scan_time = *node_scan_time;

  if (per_node) {
    if (*ranks % *per_node != 0)
      throw usage_error("--ranks-per-node " + std::to_string(*per_node) + " does not divide --ranks " +
                        std::to_string(*ranks));
    c.ranks_per_node = static_cast<std::int32_t>(*per_node);
    c.intra = presets.front().params;
  } else if (c.algorithm == "two-level") {
    throw usage_error("two-level needs --ranks-per-node");
  }
  if ((bound || local_grant || node_token) && c.algorithm != "two-level")
    throw usage_error("--pass-bound, --local-grant and --node-token apply to --algorithm two-level only");
  if (node_token) {
    const auto f = protocol::parse_token_form(*node_token);
    if (!f) throw usage_error("--node-token: expected shorter, delta or full, got '" + *node_token + "'");
    c.node_token = *f;
  }
  c.pass_bound = static_cast<std::uint32_t>(bound.value_or(16));
  c.local_grant = local_grant.value_or(shm_local_grant);

  workload& w = c.load;
  w.ranks = static_cast<std::int32_t>(*ranks);
  const std::uint64_t k = active.value_or(*ranks);
  if (k > *ranks) throw usage_error("--active: " + std::to_string(k) + " exceeds --ranks " + std::to_string(*ranks));
  for (std::uint64_t a = 1; a <= k; ++a)  // evenly spread, the last rank always among them
    w.active.push_back(static_cast<std::int32_t>(a * *ranks / k - 1));
  w.cs = cs;
  w.think = think;
  w.seed = seed;
  if (total)
    w.total_requests = *total;
  else
    w.requests_per_rank = per_rank.value_or(100);

  if (c.algorithm == "suzuki-kasami") {
    // Each instantiated rank holds RN[n] (8 bytes each) and n bytes of scratch.
    const double need = 9.0 * static_cast<double>(*ranks) * static_cast<double>(k + 1);
    const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
    if (have > 0 && need > 0.75 * have)
      throw usage_error(fmt("suzuki-kasami with %" PRIu64 " ranks, %" PRIu64
                            " requesting, needs about %.1f GiB of RN rows (9 x N x active "
                            "bytes); this machine has %.1f GiB. Lower --active.",
                            *ranks, k, need / 1073741824.0, have / 1073741824.0));
  }
  return o;
}

}  // namespace tally::sim
