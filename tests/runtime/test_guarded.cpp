// tally::guarded<T> is exception-safe: when the guard cannot be built (T's
// constructor throws as the value arrives), the lock is released, so that this
// thread and every other rank can take it again.
#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

#include "support.hpp"
#include "tally/guarded.hpp"

namespace {

using tally::test::world_rank;
using tally::test::world_size;

// Trivially copyable, with a default constructor that throws while armed: the
// guard default-constructs its copy of the value before loading it.
struct bomb {
  static inline bool armed = false;
  int value = 0;
  bomb() {
    if (armed) throw std::runtime_error("bomb: constructor armed");
  }
};
static_assert(std::is_trivially_copyable_v<bomb>);

// Arms the bomb for the current scope.
struct armed_scope {
  armed_scope() { bomb::armed = true; }
  ~armed_scope() { bomb::armed = false; }
};

TEST(Guarded, LockReleasesWhenTheGuardCannotBeBuilt) {
  tally::guarded<bomb> g(MPI_COMM_WORLD);
  for (int turn = 0; turn < world_size(); ++turn) {
    if (world_rank() == turn) {
      {
        armed_scope a;
        EXPECT_THROW(g.lock(), std::runtime_error);
      }
      // Still held, this would be errc::deadlock; on other ranks, a hang.
      auto gd = g.lock();
      ++gd->value;
    }
    tally::test::progress_barrier(MPI_COMM_WORLD, g.mutex());
  }
  {
    auto gd = g.lock();  // every rank takes it once more
    ++gd->value;
  }
  tally::test::progress_barrier(MPI_COMM_WORLD, g.mutex());
  if (world_rank() == 0) {
    auto gd = g.lock();
    EXPECT_EQ(gd->value, 2 * world_size());  // no increment lost, none counted twice
  }
  tally::test::progress_barrier(MPI_COMM_WORLD, g.mutex());
}

TEST(Guarded, TryLockReleasesWhenTheGuardCannotBeBuilt) {
  tally::options o;
  o.initial_owner = world_size() - 1;
  tally::guarded<bomb> g(MPI_COMM_WORLD, bomb{}, o);
  if (world_rank() == world_size() - 1) {
    {
      armed_scope a;
      EXPECT_THROW((void)g.try_lock(), std::runtime_error);
    }
    // The token is idle here again: try_lock succeeds and sends nothing.
    auto gd = g.try_lock();
    ASSERT_TRUE(gd.has_value());
    ++(*gd)->value;
  }
  tally::test::progress_barrier(MPI_COMM_WORLD, g.mutex());
  const tally::stats s = g.mutex().stats();
  if (world_rank() == world_size() - 1) {
    EXPECT_EQ(s.acquisitions, 3u);  // the store of the initial value, the failed guard, the last
    EXPECT_EQ(s.local_acquisitions, 3u);
  }
  EXPECT_EQ(s.tokens_sent, 0u);
}

}  // namespace
