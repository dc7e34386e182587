// helpers/process_stats.hpp — what a process uses, from /proc/self: for the
// many-mutex test and benchmark.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdio>

namespace tally::helpers {

// Threads of this process (/proc/self/task).
inline int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Resident memory in bytes (/proc/self/statm).
inline double resident_bytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace tally::helpers
