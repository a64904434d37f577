// Slurm's host lists and task counts (core/common/slurm_hostlist.h) and
// hvdrun's use of an allocation's hosts (options.h, slurm_allocation.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/common/launch_env.h"
#include "core/common/slurm_hostlist.h"
#include "core/rendezvous/slurm_store.h"
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

// srun without PMI is recognised only when no other launcher's variables are
// set; its first node and the store's directory come from Slurm and HOME.
TEST(SlurmStep, RecognisedOnlyWithoutOtherLaunchers) {
  for (const char* v : {"HVD_RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                        "PMI_FD", "HVD_RENDEZVOUS_ADDR", "HVD_SLURM_RENDEZVOUS_DIR",
                        "HOROVOD_SLURM_RENDEZVOUS_DIR", "SLURM_NODELIST"}) {
    unsetenv(v);
  }
  setenv("SLURM_JOB_ID", "42", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "2", 1);
  setenv("SLURM_STEP_NODELIST", "n[07-08]", 1);
  setenv("HOME", "/home/u", 1);
  LaunchEnv e = LaunchEnv::FromEnvironment();
  EXPECT_TRUE(e.slurm.active);
  EXPECT_EQ(e.slurm.first_node, "n07");
  EXPECT_EQ(e.slurm.rendezvous_dir, "/home/u/.hvd/slurm");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.size, 2);
  EXPECT_FALSE(e.mpi_launched);
  setenv("HVD_SLURM_RENDEZVOUS_DIR", "/shared/me", 1);
  EXPECT_EQ(LaunchEnv::FromEnvironment().slurm.rendezvous_dir, "/shared/me");
  setenv("SLURM_STEP_NODELIST", "n[2-", 1);
  EXPECT_FALSE(LaunchEnv::FromEnvironment().slurm.nodelist_error.ok());
  setenv("SLURM_STEP_NODELIST", "n7", 1);
  for (const char* other : {"PMIX_RANK", "PMI_RANK", "HVD_RANK", "OMPI_COMM_WORLD_RANK"}) {
    setenv(other, "0", 1);
    EXPECT_FALSE(LaunchEnv::FromEnvironment().slurm.active) << other;
    unsetenv(other);
  }
  setenv("HVD_RENDEZVOUS_ADDR", "10.0.0.1", 1);  // hvdrun's ranks
  EXPECT_FALSE(LaunchEnv::FromEnvironment().slurm.active);
  unsetenv("HVD_RENDEZVOUS_ADDR");
  unsetenv("SLURM_STEP_ID");  // a batch script: no step
  EXPECT_FALSE(LaunchEnv::FromEnvironment().slurm.active);
  for (const char* v : {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NODELIST",
                        "HVD_SLURM_RENDEZVOUS_DIR"}) {
    unsetenv(v);
  }
}

class SlurmStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hvd-slurm-store.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    step_.active = true;
    step_.job_id = "7";
    step_.step_id = "0";
    step_.first_node = "localhost";
    step_.nodelist = "localhost";
    step_.rendezvous_dir = root_ + "/home/.hvd/slurm";
  }
  void TearDown() override {
    RemoveSlurmStoreFile(step_);
    rmdir(step_.rendezvous_dir.c_str());
    rmdir((root_ + "/home/.hvd").c_str());
    rmdir((root_ + "/home").c_str());
    rmdir(root_.c_str());
  }
  std::string root_;
  SlurmStep step_;
};

// Task 0 hosts the store and publishes it in a private file; another task
// finds it there and both use the same store.
TEST_F(SlurmStoreTest, TaskZeroHostsOthersConnect) {
  RendezvousEndpoint e0, e1;
  std::unique_ptr<KVClient> c0, c1;
  ASSERT_TRUE(ConnectSlurmStore(step_, "localhost", 0, 10, &e0, &c0).ok());
  struct stat st {};
  ASSERT_EQ(stat(step_.rendezvous_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((step_.rendezvous_dir + "/7.0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Status s = ConnectSlurmStore(step_, "localhost", 1, 10, &e1, &c1);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e0.port, e1.port);
  EXPECT_EQ(e0.secret_hex.size(), 64u);
  ASSERT_TRUE(c0->Set("k", "v").ok());
  std::string v;
  ASSERT_TRUE(c1->Get("k", 5, &v).ok());
  EXPECT_EQ(v, "v");
  RemoveSlurmStoreFile(step_);
  EXPECT_NE(stat((step_.rendezvous_dir + "/7.0").c_str(), &st), 0);
}

TEST_F(SlurmStoreTest, RefusesWhatOthersCanRead) {
  RendezvousEndpoint e;
  std::unique_ptr<KVClient> c;
  ASSERT_TRUE(ConnectSlurmStore(step_, "localhost", 0, 10, &e, &c).ok());
  chmod((step_.rendezvous_dir + "/7.0").c_str(), 0644);
  Status s = ConnectSlurmStore(step_, "localhost", 1, 1, &e, &c);
  EXPECT_NE(s.message().find("7.0 must be a file that only this user owns"), std::string::npos)
      << s.message();
  chmod(step_.rendezvous_dir.c_str(), 0755);
  s = ConnectSlurmStore(step_, "localhost", 0, 1, &e, &c);
  EXPECT_NE(s.message().find("slurm must be a directory that only this user owns"),
            std::string::npos)
      << s.message();
}

TEST_F(SlurmStoreTest, TaskZeroOnTheWrongNodeAndMissingStore) {
  RendezvousEndpoint e;
  std::unique_ptr<KVClient> c;
  Status s = ConnectSlurmStore(step_, "other-node", 0, 1, &e, &c);
  EXPECT_NE(s.message().find("task 0 runs on other-node, but the store must be on the first node"),
            std::string::npos)
      << s.message();
  s = ConnectSlurmStore(step_, "localhost", 1, 0.5, &e, &c);
  EXPECT_EQ(s.code(), Code::kTimeout);
  EXPECT_NE(s.message().find("task 1 found no store of task 0 within 0.5 s"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace hvd
