// tally::guarded<T> for types Boost.Serialization can serialize (tally/boost.hpp):
// values that change size between entries travel with the token, whole, to every
// rank; a value over the capacity is refused with errc::arg, never truncated, and
// the lock is neither lost nor left held.
#include <gtest/gtest.h>

#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <map>
#include <string>
#include <vector>

#include "support.hpp"
#include "tally/boost.hpp"

namespace {

using tally::errc;
using tally::test::progress_barrier;
using tally::test::world_rank;
using tally::test::world_size;

constexpr int rounds = 12;

// A user type with its own serialize().
struct journal {
  std::string title;
  std::vector<int> entries;  // the ranks, in the order they entered
  template <class Archive>
  void serialize(Archive& a, unsigned /*version*/) {
    a& title& entries;
  }
};

// The value the token ends with, read where it rests after everyone is done.
template <class T, class Check>
void check_final(tally::guarded<T>& g, Check&& check) {
  progress_barrier(MPI_COMM_WORLD, g.mutex());
  int checked = 0;
  if (auto v = g.try_lock()) {
    check(**v);
    checked = 1;
  }
  int total = 0;
  MPI_Allreduce(&checked, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_GE(total, 1) << "no rank held the token idle at the end";
  progress_barrier(MPI_COMM_WORLD, g.mutex());
}

TEST(BoostPayload, AVectorThatGrowsAndShrinks) {
  const int n = world_size(), me = world_rank();
  tally::guarded<std::vector<double>> g(MPI_COMM_WORLD, {0.5}, 16 * 1024);
  EXPECT_EQ(g.capacity(), 16u * 1024u);
  for (int k = 0; k < rounds; ++k) {
    auto v = g.lock();
    ASSERT_FALSE(v->empty());
    EXPECT_EQ(v->front(), 0.5);
    // Even rounds add three values, odd rounds remove one of them: the packed size
    // changes at every entry.
    if (k % 2 == 0) {
      v->insert(v->end(), {double(me), double(me), double(me)});
    } else {
      const auto it = std::find(v->begin(), v->end(), double(me));
      ASSERT_NE(it, v->end()) << "rank " << me << " lost its own value";
      v->erase(it);
    }
  }
  check_final(g, [&](const std::vector<double>& v) {
    ASSERT_EQ(v.size(), 1u + static_cast<std::size_t>(n) * (rounds / 2) * 2);
    for (int r = 0; r < n; ++r) EXPECT_EQ(std::count(v.begin(), v.end(), double(r)), (rounds / 2) * 2) << "rank " << r;
  });
}

TEST(BoostPayload, AMapOfStrings) {
  const int n = world_size(), me = world_rank();
  tally::guarded<std::map<std::string, int>> g(MPI_COMM_WORLD, {{"start", 1}}, 4096);
  const std::string mine = "rank " + std::to_string(me) + std::string(static_cast<std::size_t>(me), '*');
  for (int k = 0; k < rounds; ++k) {
    auto m = g.lock();
    ++(*m)[mine];
    ++(*m)["all"];
  }
  check_final(g, [&](const std::map<std::string, int>& m) {
    EXPECT_EQ(m.at("start"), 1);
    EXPECT_EQ(m.at("all"), n * rounds);
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(m.at("rank " + std::to_string(r) + std::string(static_cast<std::size_t>(r), '*')), rounds);
    EXPECT_EQ(m.size(), static_cast<std::size_t>(n) + 2);
  });
}

TEST(BoostPayload, AUserTypeWithSerialize) {
  const int n = world_size(), me = world_rank();
  tally::guarded<journal> g(MPI_COMM_WORLD, journal{"entries", {}}, 8 * 1024);
  for (int k = 0; k < rounds; ++k) g.lock()->entries.push_back(me);
  check_final(g, [&](const journal& j) {
    EXPECT_EQ(j.title, "entries");
    ASSERT_EQ(j.entries.size(), static_cast<std::size_t>(n * rounds));
    for (int r = 0; r < n; ++r) EXPECT_EQ(std::count(j.entries.begin(), j.entries.end(), r), rounds);
  });
}

TEST(BoostPayload, AValueOverTheCapacityIsRefusedNotTruncated) {
  const int n = world_size();
  tally::guarded<std::vector<char>> g(MPI_COMM_WORLD, {}, 64);
  {
    // unlock() refuses and keeps the critical section: shrink and unlock again.
    auto v = g.lock();
    const std::size_t before = v->size();
    v->resize(before + 1000, 'x');
    try {
      v.unlock();
      ADD_FAILURE() << "a 1000-byte value fitted a 64-byte capacity";
    } catch (const tally::error& e) {
      EXPECT_EQ(e.code(), errc::arg);
      EXPECT_NE(std::string(e.what()).find("over its capacity of 64 bytes"), std::string::npos) << e.what();
    }
    v->resize(before + 1);
    v.unlock();
  }
  bool refused = false;
  try {
    // The destructor: the token keeps the value it came with, the lock is released,
    // and then the error.
    auto v = g.lock();
    v->assign(1000, 'y');
  } catch (const tally::error& e) {
    refused = true;
    EXPECT_EQ(e.code(), errc::arg);
    EXPECT_NE(std::string(e.what()).find("the token keeps its previous value"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(refused) << "the guard's destructor stored or dropped a value over the capacity silently";
  // The lock was released: this rank can enter again.
  g.lock()->push_back('z');
  check_final(g, [&](const std::vector<char>& v) {
    EXPECT_EQ(v.size(), 2u * static_cast<std::size_t>(n)) << "two bytes per rank, nothing of the refused values";
    EXPECT_EQ(std::count(v.begin(), v.end(), 'y'), 0);
  });
}

TEST(BoostPayload, AnInitialValueOverTheCapacityFailsOnEveryRank) {
  try {
    tally::guarded<std::vector<char>> g(MPI_COMM_WORLD, std::vector<char>(1000, 'z'), 64);
    ADD_FAILURE() << "created";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), errc::arg);
    EXPECT_NE(std::string(e.what()).find("initial value"), std::string::npos) << e.what();
  }
  // A capacity beyond the payload limit is the mutex's own errc::arg.
  try {
    tally::guarded<std::vector<char>> g(MPI_COMM_WORLD, {}, tally::max_payload_bytes);
    ADD_FAILURE() << "created";
  } catch (const tally::error& e) {
    EXPECT_EQ(e.code(), errc::arg);
  }
}

}  // namespace
