// PlanHosts: which ranks share a host and who carries which share of a
// hierarchical CPU allreduce across hosts (core/dataplane).
#include "core/dataplane/host_plan.h"

#include <gtest/gtest.h>

namespace hvd {
namespace {

using V = std::vector<int>;

TEST(HostPlan, TwoHostsTwoRanksEach) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  HostPlan p = PlanHosts(hosts, 3);
  ASSERT_TRUE(p.usable) << p.reason;
  EXPECT_EQ(p.hosts, 2);
  EXPECT_EQ(p.shares, 2);
  EXPECT_EQ(p.local_ranks, (V{2, 3}));
  EXPECT_EQ(p.local_index, 1);
  EXPECT_EQ(p.host_index, 1);
  EXPECT_TRUE(p.carrier());
  EXPECT_EQ(p.cross_ranks, (V{1, 3}));
}

TEST(HostPlan, UnevenHostsCarryTheFewestRanksShares) {
  // np=6 over 3 hosts as 3+2+1: one share per host, carried by local rank 0.
  const std::vector<std::string> hosts = {"a", "a", "a", "b", "b", "c"};
  for (int r = 0; r < 6; ++r) {
    HostPlan p = PlanHosts(hosts, r);
    ASSERT_TRUE(p.usable) << p.reason;
    EXPECT_EQ(p.shares, 1);
    EXPECT_EQ(p.carrier(), r == 0 || r == 3 || r == 5) << r;
    if (p.carrier()) {
      EXPECT_EQ(p.cross_ranks, (V{0, 3, 5}));
    } else {
      EXPECT_TRUE(p.cross_ranks.empty());
    }
  }
  EXPECT_EQ(PlanHosts(hosts, 4).local_ranks, (V{3, 4}));
  EXPECT_EQ(PlanHosts(hosts, 5).local_ranks, (V{5}));
  EXPECT_EQ(PlanHosts(hosts, 5).host_index, 2);
}

TEST(HostPlan, UnevenTwoHostsThreeAndTwo) {
  // Two shares: local ranks 0 and 1 of both hosts carry one each; rank 2
  // (local rank 2 of host a) only takes part inside its host.
  const std::vector<std::string> hosts = {"a", "a", "a", "b", "b"};
  EXPECT_EQ(PlanHosts(hosts, 1).cross_ranks, (V{1, 4}));
  EXPECT_EQ(PlanHosts(hosts, 3).cross_ranks, (V{0, 3}));
  HostPlan p = PlanHosts(hosts, 2);
  EXPECT_TRUE(p.usable);
  EXPECT_EQ(p.shares, 2);
  EXPECT_FALSE(p.carrier());
}

TEST(HostPlan, RoundRobinPlacementGivesAscendingGroups) {
  const std::vector<std::string> hosts = {"a", "b", "a", "b", "a", "b"};
  HostPlan p = PlanHosts(hosts, 4);
  EXPECT_EQ(p.local_ranks, (V{0, 2, 4}));
  EXPECT_EQ(p.local_index, 2);
  EXPECT_EQ(p.cross_ranks, (V{4, 5}));
  // Every member of a cross group computes the same group.
  for (int r = 0; r < 6; ++r) {
    HostPlan q = PlanHosts(hosts, r);
    for (int m : q.cross_ranks) EXPECT_EQ(PlanHosts(hosts, m).cross_ranks, q.cross_ranks);
  }
}

TEST(HostPlan, UnusableCases) {
  EXPECT_EQ(PlanHosts({"a", "a", "a"}, 1).reason, "one host only");
  EXPECT_FALSE(PlanHosts({"a", "a", "a"}, 1).one_rank_per_host);
  EXPECT_EQ(PlanHosts({"a", "b", "c"}, 1).reason, "one rank per host");
  // The hierarchy's cross step alone (a TCP ring over every rank).
  EXPECT_TRUE(PlanHosts({"a", "b", "c"}, 1).one_rank_per_host);
  EXPECT_TRUE(PlanHosts({"a", "b"}, 0).one_rank_per_host);
  EXPECT_FALSE(PlanHosts({"a", "b", "b"}, 0).one_rank_per_host);
  EXPECT_FALSE(PlanHosts({"a", "b"}, 2).usable);  // rank out of range
  EXPECT_FALSE(PlanHosts({"a", "b"}, -1).usable);
}

}  // namespace
}  // namespace hvd
