// Slurm's host lists and task counts (core/common/slurm_hostlist.h) and
// hvdrun's use of an allocation's hosts (options.h, slurm_allocation.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "core/common/slurm_hostlist.h"
#include "tools/hvdrun/options.h"
#include "tools/hvdrun/slurm_allocation.h"

namespace hvd {
namespace {

std::vector<std::string> Hosts(const std::string& text) {
  std::vector<std::string> out;
  Status s = ExpandSlurmHostlist(text, &out);
  EXPECT_TRUE(s.ok()) << text << ": " << s.message();
  return out;
}

TEST(SlurmHostlist, Expands) {
  EXPECT_EQ(Hosts("vm"), std::vector<std::string>({"vm"}));
  EXPECT_EQ(Hosts("n[1-3],gpu5"), std::vector<std::string>({"n1", "n2", "n3", "gpu5"}));
  EXPECT_EQ(Hosts("n[08-10,7]-ib"),  // each range keeps its own width
            std::vector<std::string>({"n08-ib", "n09-ib", "n10-ib", "n7-ib"}));
  EXPECT_EQ(Hosts("a[2],b[0-1]"), std::vector<std::string>({"a2", "b0", "b1"}));
}

TEST(SlurmHostlist, RefusesMalformed) {
  std::vector<std::string> out;
  for (const char* bad : {"", "n[3-1]", "n[1-", "[1-2]", "n[a-b]", "n[1]x[2]", "a,,b", "n]"}) {
    EXPECT_FALSE(ExpandSlurmHostlist(bad, &out).ok()) << bad;
  }
  EXPECT_FALSE(ExpandSlurmHostlist("n[0-99999999]", &out).ok());
}

TEST(SlurmTaskCounts, Expands) {
  std::vector<int> out;
  ASSERT_TRUE(ExpandSlurmTaskCounts("2(x3),1", &out).ok());
  EXPECT_EQ(out, std::vector<int>({2, 2, 2, 1}));
  for (const char* bad : {"", "0", "2(x0)", "2(x3", "x", "2(3)"}) {
    EXPECT_FALSE(ExpandSlurmTaskCounts(bad, &out).ok()) << bad;
  }
}

TEST(HvdrunInAllocation, HostsAndNpFromSlurm) {
  run::Options o;
  ASSERT_TRUE(run::ParseOptions({"prog"}, &o, "a:2,b:1").ok());
  EXPECT_TRUE(o.hosts_from_slurm);
  EXPECT_EQ(o.hosts, "a:2,b:1");
  EXPECT_EQ(o.np, 3);
  // -np and -H given by the user win.
  ASSERT_TRUE(run::ParseOptions({"-np", "2", "prog"}, &o, "a:2,b:1").ok());
  EXPECT_EQ(o.np, 2);
  ASSERT_TRUE(run::ParseOptions({"-np", "1", "-H", "c:1", "prog"}, &o, "a:2").ok());
  EXPECT_EQ(o.hosts, "c:1");
  EXPECT_FALSE(o.hosts_from_slurm);
  // Elastic: the allocation's hosts are fixed hosts.
  ASSERT_TRUE(run::ParseOptions({"--min-np", "2", "--max-np", "3", "prog"}, &o, "a:3").ok());
  EXPECT_EQ(o.hosts, "a:3");
  EXPECT_EQ(o.min_np, 2);
  // Outside an allocation -np stays required.
  EXPECT_FALSE(run::ParseOptions({"prog"}, &o, "").ok());
}

TEST(HvdrunInAllocation, ReadsSlurmVariables) {
  setenv("SLURM_JOB_NODELIST", "n[1-2],m", 1);
  setenv("SLURM_TASKS_PER_NODE", "2(x2),1", 1);
  unsetenv("SLURMD_NODENAME");
  std::string hosts;
  ASSERT_TRUE(run::SlurmAllocationHosts(&hosts).ok());
  EXPECT_EQ(hosts, "n1:2,n2:2,m:1");
  setenv("SLURM_TASKS_PER_NODE", "2", 1);
  EXPECT_FALSE(run::SlurmAllocationHosts(&hosts).ok());  // 1 count for 3 nodes
  unsetenv("SLURM_JOB_NODELIST");
  unsetenv("SLURM_TASKS_PER_NODE");
  ASSERT_TRUE(run::SlurmAllocationHosts(&hosts).ok());
  EXPECT_EQ(hosts, "");
}

}  // namespace
}  // namespace hvd
