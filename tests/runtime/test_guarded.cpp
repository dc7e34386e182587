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

class GuardedStart : public ::testing::TestWithParam<tally::progress_mode> {};

TEST_P(GuardedStart, InitialValueIsInPlaceBeforeAnyRankCanAsk) {
  // Every rank asks the moment its constructor returns; the owner's progress thread
  // may hand the token away before the owner's own constructor has returned. The
  // initial value must travel anyway.
  constexpr int rounds = 20;
  tally::options o;
  o.progress = GetParam();
  o.initial_owner = world_size() - 1;
  for (int trial = 0; trial < 10; ++trial) {
    tally::guarded<long> g(MPI_COMM_WORLD, 1000L, o);
    for (int k = 0; k < rounds; ++k) ++*g.lock();
    tally::test::progress_barrier(MPI_COMM_WORLD, g.mutex());
    if (auto v = g.try_lock()) {  // wherever the token rests
      EXPECT_EQ(**v, 1000L + static_cast<long>(rounds) * world_size()) << "trial " << trial;
    }
    tally::test::progress_barrier(MPI_COMM_WORLD, g.mutex());
  }
}

INSTANTIATE_TEST_SUITE_P(Progress, GuardedStart,
                         ::testing::Values(tally::progress_mode::in_calls, tally::progress_mode::thread),
                         tally::test::progress_name{});

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
    EXPECT_EQ(s.acquisitions, 2u);  // the failed guard, the last
    EXPECT_EQ(s.local_acquisitions, 2u);
  }
  EXPECT_EQ(s.tokens_sent, 0u);
}

}  // namespace
