// The DRAM model's request queues (models/dram/queues.hpp) against std::deque / std::vector driven
// by the same random operations.
#include "models/dram/queues.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

namespace npusim::dram {
namespace {

TEST(RingQueue, FifoOrderThroughGrowthAndWrapAround) {
  RingQueue<int> q;
  std::deque<int> ref;
  std::mt19937 rng(7);
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    // Pushes outnumber pops early (growth while wrapped), then pops catch up (empty again).
    const bool push = ref.empty() || rng() % 100 < (step < 10000 ? 60u : 40u);
    if (push) {
      q.push_back(next);
      ref.push_back(next);
      ++next;
    } else {
      ASSERT_EQ(q.front(), ref.front());
      q.pop_front();
      ref.pop_front();
    }
    ASSERT_EQ(q.size(), ref.size());
    ASSERT_EQ(q.empty(), ref.empty());
  }
  EXPECT_THROW(RingQueue<int>().pop_front(), InternalError);
}

TEST(FrontErasingVector, EraseAnywhereKeepsOrder) {
  FrontErasingVector<int> v;
  std::vector<int> ref;
  std::mt19937 rng(11);
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    if (ref.empty() || rng() % 100 < 52) {
      v.push_back(next);
      ref.push_back(next);
      ++next;
    } else {
      // Mostly the front, as a scheduler serving its oldest request.
      const size_t i = rng() % 4 == 0 ? rng() % ref.size() : 0;
      v.erase(i);
      ref.erase(ref.begin() + std::ptrdiff_t(i));
    }
    ASSERT_EQ(v.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(v[i], ref[i]);
  }
  EXPECT_THROW(v.erase(v.size()), InternalError);
}

}  // namespace
}  // namespace npusim::dram
