// Built with MPI initialized at MPI_THREAD_FUNNELED: thread progress must be
// refused with a clear error on every rank, progress in calls must work.
#include <gtest/gtest.h>

#include <string>

#include "support.hpp"
#include "tally/tally.h"

namespace {

TEST(ThreadLevel, ThreadProgressNeedsThreadMultiple) {
  int provided = 0;
  MPI_Query_thread(&provided);
  ASSERT_LT(provided, MPI_THREAD_MULTIPLE);
  tally::options o;
  o.progress = tally::progress_mode::thread;
  try {
    tally::mutex m(MPI_COMM_WORLD, o);
    ADD_FAILURE() << "thread progress accepted without MPI_THREAD_MULTIPLE";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), tally::errc::thread_level);
    EXPECT_NE(std::string(e.what()).find("MPI_THREAD_MULTIPLE"), std::string::npos) << e.what();
  }
  tally_options co;
  tally_options_init(&co);
  co.progress = TALLY_PROGRESS_THREAD;
  tally_mutex cm = nullptr;
  EXPECT_EQ(tally_mutex_create(MPI_COMM_WORLD, &co, &cm), TALLY_ERR_THREAD_LEVEL);
  EXPECT_EQ(cm, nullptr);
}

TEST(ThreadLevel, InlineProgressWorks) {
  tally::mutex m(MPI_COMM_WORLD);
  for (int i = 0; i < 20; ++i) {
    m.lock();
    m.unlock();
  }
  EXPECT_EQ(m.stats().acquisitions, 20u);
}

}  // namespace
