// A member read without its mutex: lint.thread_safety.catches runs clang-tidy on
// this with the same flags as lint.tidy.runtime and expects a finding, so that a
// silent analysis (flags gone, macros emptied) cannot pass for a clean one.
#include "runtime/thread_safety.hpp"

namespace {
struct counter {
  tally::detail::guarded_mutex mu;
  int value TALLY_GUARDED_BY(mu) = 0;
  int read_unlocked() const { return value; }  // the violation
};
}  // namespace

int main() { return counter{}.read_unlocked(); }
