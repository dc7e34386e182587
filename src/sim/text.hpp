// sim/text.hpp — number formatting shared by tally-sim run's reports and its
// command line.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>

namespace tally::sim::text {

// printf into a std::string.
template <class... Args>
std::string fmt(const char* f, Args... v) {
  const int len = std::snprintf(nullptr, 0, f, v...);
  std::string s(static_cast<std::size_t>(std::max(len, 0)) + 1, '\0');
  std::snprintf(s.data(), s.size(), f, v...);
  s.pop_back();
  return s;
}

}  // namespace tally::sim::text
