// sim/command.cpp — `tally-sim run`: its progress bar, reports and exit status
// (sim/run.hpp; its options: sim/options.hpp).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "sim/options.hpp"
#include "sim/run.hpp"
#include "sim/text.hpp"

namespace tally::sim {

namespace {

using text::fmt;

// Draws the progress bar on a terminal, or prints a line every 10% elsewhere.
class progress_bar {
 public:
  progress_bar(std::ostream& err, bool tty, std::uint64_t target)
      : err_(err),
        tty_(tty),
        target_(std::max<std::uint64_t>(target, 1)),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}
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
           << fmt("%5.1f%%  %" PRIu64 "/%" PRIu64 " CS  %.3g events/s ", pct, entries, target_, rate) << std::flush;
      drawn_ = true;
    } else {
      if (pct < next_pct_) return;
      while (next_pct_ <= pct) next_pct_ += 10;
      err_ << fmt("tally-sim: %.0f%% (%" PRIu64 "/%" PRIu64 " CS), %.3g events/s\n", pct, entries, target_, rate)
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

int run_command(std::span<const std::string_view> args, std::ostream& out, std::ostream& err, bool err_is_tty) {
  options o;
  try {
    o = parse_options(std::vector<std::string>(args.begin(), args.end()));
  } catch (const usage_error& e) {
    err << "tally-sim run: " << e.what() << "\nTry 'tally-sim run --help'.\n";
    return 2;
  }
  if (o.help) {
    out << help_text();
    return 0;
  }
  for (const std::string& note : o.notes) err << "tally-sim run: note: " << note << '\n';
  const workload& w = o.cfg.load;
  const std::uint64_t target = w.total_requests ? w.total_requests : w.requests_per_rank * w.active.size();
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
    err << "tally-sim run: invariant violated: " << e.what() << '\n';
    return 1;
  } catch (const protocol::bad_argument& e) {  // a configuration the options did not catch
    bar.clear();
    err << "tally-sim run: " << e.what() << '\n';
    return 2;
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
