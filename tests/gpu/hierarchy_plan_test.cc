// CPU-only tests of the host-side planning behind hierarchical GPU
// allreduce (core/dataplane/gpu_hierarchy_plan.h): runs in every build.
#include <gtest/gtest.h>

#include "core/dataplane/gpu_hierarchy_plan.h"

namespace hvd {
namespace {

TEST(HierarchyPlan, BlockPlacedTwoHosts) {
  std::vector<std::string> hosts = {"a", "a", "b", "b"};
  HierarchyPlan p = PlanHierarchy(hosts, 3);
  ASSERT_TRUE(p.usable) << p.reason;
  EXPECT_EQ(p.local_ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(p.cross_ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.host_index, 1);
}

TEST(HierarchyPlan, RoundRobinPlacementGivesAscendingGroups) {
  std::vector<std::string> hosts = {"a", "b", "a", "b", "a", "b"};
  HierarchyPlan p = PlanHierarchy(hosts, 4);
  ASSERT_TRUE(p.usable) << p.reason;
  EXPECT_EQ(p.local_ranks, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(p.local_rank, 2);
  EXPECT_EQ(p.cross_ranks, (std::vector<int>{4, 5}));
  // Every rank lands in exactly one cross group, and all members agree on it.
  for (int r = 0; r < 6; ++r) {
    HierarchyPlan q = PlanHierarchy(hosts, r);
    for (int m : q.cross_ranks) EXPECT_EQ(PlanHierarchy(hosts, m).cross_ranks, q.cross_ranks);
  }
}

TEST(HierarchyPlan, UnusableCases) {
  EXPECT_FALSE(PlanHierarchy({"a", "a", "b"}, 0).usable);       // uneven hosts
  EXPECT_FALSE(PlanHierarchy({"a", "a", "a", "a"}, 1).usable);  // one host
  EXPECT_FALSE(PlanHierarchy({"a", "b", "c"}, 1).usable);       // one rank per host
  EXPECT_FALSE(PlanHierarchy({"a", "b"}, 5).usable);
}

TEST(HierarchyPlan, SplitCount) {
  EXPECT_EQ(SplitCount(10, 4), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(SplitCount(8, 4), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(SplitCount(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(SplitCount(0, 3), (std::vector<int64_t>{0, 0, 0}));
}

}  // namespace
}  // namespace hvd
