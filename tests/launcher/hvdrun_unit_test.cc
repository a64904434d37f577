// hvdrun's pieces without processes: argument parsing (horovodrun's tuning
// flags included), host lists, rank placement (local and cross ranks),
// remote-shell and mpirun commands, per-rank output files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tools/hvdrun/command.h"
#include "tools/hvdrun/hosts.h"
#include "tools/hvdrun/job_env.h"
#include "tools/hvdrun/mpi_launch.h"
#include "tools/hvdrun/options.h"
#include "tools/hvdrun/output.h"

namespace hvd {
namespace run {
namespace {

TEST(HvdrunOptions, ParsesFlagsAndStopsAtProgram) {
  Options o;
  Status s = ParseOptions({"-np", "4", "-H", "a:2,b:2", "--ssh-command=ip netns exec",
                           "--start-timeout", "5", "--verbose", "prog", "-np", "9"},
                          &o);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(o.np, 4);
  EXPECT_EQ(o.hosts, "a:2,b:2");
  EXPECT_EQ(o.ssh_command, "ip netns exec");
  EXPECT_EQ(o.start_timeout_seconds, 5.0);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "-np", "9"}));
  ASSERT_TRUE(ParseOptions({"-np", "1", "--", "--weird-prog"}, &o).ok());
  EXPECT_EQ(o.command, (std::vector<std::string>{"--weird-prog"}));
  EXPECT_FALSE(ParseOptions({"-np", "-3", "prog"}, &o).ok());
  EXPECT_FALSE(ParseOptions({"-np", "2", "--start-timeout", "0", "prog"}, &o).ok());
  EXPECT_TRUE(ParseOptions({"--check-build"}, &o).ok());
  // horovodrun's spellings of the same flags.
  ASSERT_TRUE(
      ParseOptions(
          {"-np", "2", "-hostfile", "hf", "--min-num-proc", "1", "--max-num-proc", "3", "prog"}, &o)
          .ok());
  EXPECT_EQ(o.hostfile, "hf");
  EXPECT_EQ(o.min_np, 1);
  EXPECT_EQ(o.max_np, 3);
  ASSERT_TRUE(ParseOptions({"-cb"}, &o).ok());
  EXPECT_TRUE(o.check_build);
}

TEST(HvdrunHosts, ParseHostList) {
  std::vector<HostSlots> hosts;
  ASSERT_TRUE(ParseHostList("a:2, b ,c:4", &hosts).ok());
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[1].name, "b");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].slots, 4);
  EXPECT_FALSE(ParseHostList("a:2,,b", &hosts).ok());
  EXPECT_FALSE(ParseHostList("a:-1", &hosts).ok());
  EXPECT_FALSE(ParseHostList(":3", &hosts).ok());
}

TEST(HvdrunHosts, PlacementLocalAndCrossRanks) {
  // 3 + 1 + 2 slots, 5 ranks: a gets 0,1,2; b gets 3; c gets 4.
  std::vector<RankPlacement> r;
  ASSERT_TRUE(PlaceRanks(5, {{"a", 3}, {"b", 1}, {"c", 2}}, &r).ok());
  ASSERT_EQ(r.size(), 5u);
  struct Want {
    const char* host;
    int local_rank, local_size, cross_rank, cross_size;
  } want[] = {{"a", 0, 3, 0, 3},
              {"a", 1, 3, 0, 1},
              {"a", 2, 3, 0, 1},
              {"b", 0, 1, 1, 3},
              {"c", 0, 1, 2, 3}};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("rank " + std::to_string(i));
    EXPECT_EQ(r[i].rank, i);
    EXPECT_EQ(r[i].host, want[i].host);
    EXPECT_EQ(r[i].local_rank, want[i].local_rank);
    EXPECT_EQ(r[i].local_size, want[i].local_size);
    EXPECT_EQ(r[i].cross_rank, want[i].cross_rank);
    EXPECT_EQ(r[i].cross_size, want[i].cross_size);
  }
  Status s = PlaceRanks(7, {{"a", 3}, {"b", 1}, {"c", 2}}, &r);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("(6)"), std::string::npos) << s.message();
}

TEST(HvdrunCommand, ShellQuoteAndSplit) {
  EXPECT_EQ(ShellQuote("plain/path-1.2"), "plain/path-1.2");
  EXPECT_EQ(ShellQuote("it's a $x"), "'it'\\''s a $x'");
  EXPECT_EQ(ShellQuote(""), "''");
  std::vector<std::string> w;
  ASSERT_TRUE(SplitCommand("ssh -i 'my key' -o \"A=b c\"", &w).ok());
  EXPECT_EQ(w, (std::vector<std::string>{"ssh", "-i", "my key", "-o", "A=b c"}));
  EXPECT_FALSE(SplitCommand("ssh 'open", &w).ok());
}

TEST(HvdrunCommand, RemoteArgvSshAndNamespace) {
  RemoteShell ssh;
  ASSERT_TRUE(MakeRemoteShell("", 2222, &ssh).ok());
  auto argv = RemoteArgv(ssh, "node1", "/work dir", {{"HVD_RANK", "3"}}, {"python", "train.py"});
  EXPECT_EQ(argv, (std::vector<std::string>{
                      "ssh", "-o", "BatchMode=yes", "-p", "2222", "node1",
                      "cd '/work dir' >/dev/null 2>&1; exec env HVD_RANK=3 python train.py"}));

  RemoteShell ns;
  ASSERT_TRUE(MakeRemoteShell("ip netns exec", 0, &ns).ok());
  EXPECT_FALSE(ns.is_ssh);
  argv = RemoteArgv(ns, "ns1", "/w", {{"K", "v v"}}, {"prog", "a b"});
  EXPECT_EQ(argv, (std::vector<std::string>{"ip", "netns", "exec", "ns1", "sh", "-c",
                                            "cd \"$1\" >/dev/null 2>&1; shift; exec env \"$@\"",
                                            "hvdrun", "/w", "K=v v", "prog", "a b"}));
  EXPECT_FALSE(MakeRemoteShell("ip netns exec", 22, &ns).ok()) << "port for a non-ssh shell";
}

TEST(HvdrunMpi, MpirunArgv) {
  Options o;
  ASSERT_TRUE(ParseOptions({"--mpi", "-np", "3", "-H", "a:2,b:2,c:1", "--ssh-command",
                            "ip netns exec", "prog", "x"},
                           &o)
                  .ok());
  std::vector<RankPlacement> r;
  ASSERT_TRUE(PlaceRanks(3, {{"a", 2}, {"b", 2}, {"c", 1}}, &r).ok());
  auto argv = MpirunArgv(o, r, {"HVD_FUSION_THRESHOLD=1", "HOME=/root", "HVD_RANK=7"});
  EXPECT_EQ(argv,
            (std::vector<std::string>{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                                      "3", "-H", "a:2,b:1", "--mca", "plm_rsh_agent",
                                      "ip netns exec", "--mca", "btl_tcp_flags", "send",
                                      "--tag-output", "-x", "HVD_FUSION_THRESHOLD", "prog", "x"}));
  // A value in the environment (flags, or several links: that pair hangs)
  // is the user's; one host needs no TCP.
  for (const char* user : {"OMPI_MCA_btl_tcp_flags=send,put", "OMPI_MCA_btl_tcp_links=2"}) {
    argv = MpirunArgv(o, r, {user});
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "btl_tcp_flags"), argv.end()) << user;
  }
  ASSERT_TRUE(PlaceRanks(2, {{"a", 2}}, &r).ok());
  argv = MpirunArgv(o, r, {});
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "btl_tcp_flags"), argv.end());
}

TEST(HvdrunEnv, RankVariablesAndMerge) {
  RankPlacement p;
  p.rank = 5;
  p.host = "h";
  p.local_rank = 1;
  p.local_size = 2;
  p.cross_rank = 2;
  p.cross_size = 3;
  JobFacts job;
  job.size = 6;
  job.rendezvous_addr = "10.0.0.1";
  job.rendezvous_port = 1234;
  job.secret_hex = "ab";
  EnvList vars = RankVariables(p, job, {"HVD_CPU_OPERATIONS=mpi"});
  auto get = [&](const std::string& k) {
    for (auto& kv : vars) {
      if (kv.first == k) return kv.second;
    }
    return std::string("<unset>");
  };
  EXPECT_EQ(get("HVD_RANK"), "5");
  EXPECT_EQ(get("HVD_SIZE"), "6");
  EXPECT_EQ(get("HVD_LOCAL_RANK"), "1");
  EXPECT_EQ(get("HVD_LOCAL_SIZE"), "2");
  EXPECT_EQ(get("HVD_CROSS_RANK"), "2");
  EXPECT_EQ(get("HVD_CROSS_SIZE"), "3");
  EXPECT_EQ(get("HVD_HOSTNAME"), "h");
  EXPECT_EQ(get("HVD_RENDEZVOUS_ADDR"), "10.0.0.1");
  EXPECT_EQ(get("HVD_RENDEZVOUS_PORT"), "1234");
  EXPECT_EQ(get("HVD_RENDEZVOUS_SECRET"), "ab");
  EXPECT_EQ(get("HVD_CONTROLLER"), "gloo");
  EXPECT_EQ(get("HVD_CPU_OPERATIONS"), "<unset>") << "user's choice must win";

  auto merged = MergeEnvironment({"A=1", "HVD_RANK=99"}, {{"HVD_RANK", "5"}});
  EXPECT_EQ(merged, (std::vector<std::string>{"A=1", "HVD_RANK=5"}));
  EnvList fwd = ForwardedVariables({"HVD_X=1", "HVD_RANK=2", "PATH=/bin", "HOME=/root"});
  EXPECT_EQ(fwd, (EnvList{{"HVD_X", "1"}, {"PATH", "/bin"}}));
}

// Each horovodrun flag, alone, and the one variable it sets for the ranks.
TEST(HvdrunTuningFlags, EachFlagSetsItsVariable) {
  struct Case {
    std::vector<std::string> args;
    EnvList env;
  } cases[] = {
      {{"--fusion-threshold-mb", "64"}, {{"HVD_FUSION_THRESHOLD", "67108864"}}},
      {{"--fusion-threshold-mb=0"}, {{"HVD_FUSION_THRESHOLD", "0"}}},
      {{"--cycle-time-ms", "2.5"}, {{"HVD_CYCLE_TIME", "2.5"}}},
      {{"--cache-capacity", "0"}, {{"HVD_CACHE_CAPACITY", "0"}}},
      {{"--timeline-filename", "/tmp/t.json"}, {{"HVD_TIMELINE", "/tmp/t.json"}}},
      {{"--timeline-mark-cycles"}, {{"HVD_TIMELINE_MARK_CYCLES", "1"}}},
      {{"--no-timeline-mark-cycles"}, {{"HVD_TIMELINE_MARK_CYCLES", "0"}}},
      {{"--autotune"}, {{"HVD_AUTOTUNE", "1"}}},
      {{"--no-autotune"}, {{"HVD_AUTOTUNE", "0"}}},
      {{"--autotune-log-file", "tune.csv"}, {{"HVD_AUTOTUNE_LOG", "tune.csv"}}},
      {{"--hierarchical-allreduce"}, {{"HVD_HIERARCHICAL_ALLREDUCE", "1"}}},
      {{"--no-hierarchical-allreduce"}, {{"HVD_HIERARCHICAL_ALLREDUCE", "0"}}},
      {{"--hierarchical-allgather"}, {{"HVD_HIERARCHICAL_ALLGATHER", "1"}}},
      {{"--no-hierarchical-allgather"}, {{"HVD_HIERARCHICAL_ALLGATHER", "0"}}},
      {{"--log-level", "DEBUG"}, {{"HVD_LOG_LEVEL", "debug"}}},
      {{"--log-level", "Warn"}, {{"HVD_LOG_LEVEL", "warning"}}},
      {{"--log-without-timestamp"}, {{"HVD_LOG_HIDE_TIME", "1"}}},
      {{"--log-hide-timestamp"}, {{"HVD_LOG_HIDE_TIME", "1"}}},
      {{"--disable-cache"}, {}},  // horovodrun's launcher cache; nothing to set
      {{"--no-stall-check"}, {{"HVD_STALL_CHECK_DISABLE", "1"}}},
      {{"--stall-check"}, {{"HVD_STALL_CHECK_DISABLE", "0"}}},
      {{"--stall-check-warning-time-seconds", "120"}, {{"HVD_STALL_CHECK_TIME_SECONDS", "120"}}},
      {{"--stall-check-shutdown-time-seconds", "600"},
       {{"HVD_STALL_SHUTDOWN_TIME_SECONDS", "600"}}},
      {{"--mpi-threads-disable"}, {{"HVD_MPI_THREADS_DISABLE", "1"}}},
      {{"--no-mpi-threads-disable"}, {{"HVD_MPI_THREADS_DISABLE", "0"}}},
      {{"--tcp"}, {{"NCCL_IB_DISABLE", "1"}}},
      {{"--log-with-timestamp"}, {{"HVD_LOG_HIDE_TIME", "0"}}},
      {{"--no-log-hide-timestamp"}, {{"HVD_LOG_HIDE_TIME", "0"}}},
      {{"--gloo-timeout-seconds", "0.5"}, {{"HVD_GLOO_TIMEOUT_SECONDS", "0.5"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args[0]);
    std::vector<std::string> args = {"-np", "2"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.push_back("prog");
    Options o;
    Status s = ParseOptions(args, &o);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(o.rank_env, c.env);
    EXPECT_EQ(o.command, (std::vector<std::string>{"prog"}));
  }
}

TEST(HvdrunTuningFlags, OrderRepeatsAndBadValues) {
  Options o;
  ASSERT_TRUE(
      ParseOptions({"-np", "2", "--autotune", "--cache-capacity", "7", "--no-autotune", "prog"}, &o)
          .ok());
  EXPECT_EQ(o.rank_env, (EnvList{{"HVD_AUTOTUNE", "0"}, {"HVD_CACHE_CAPACITY", "7"}}));

  struct Bad {
    std::vector<std::string> args;
    const char* message;
  } bad[] = {
      {{"--fusion-threshold-mb", "1.5"}, "--fusion-threshold-mb expects an integer in [0, "},
      {{"--fusion-threshold-mb", "-1"}, "--fusion-threshold-mb expects an integer"},
      {{"--cache-capacity", "1048577"}, "--cache-capacity expects an integer in [0, 1048576]"},
      {{"--cycle-time-ms", "fast"}, "--cycle-time-ms expects a number >= 0, got 'fast'"},
      {{"--gloo-timeout-seconds", "0"}, "--gloo-timeout-seconds expects a positive number"},
      {{"--log-level", "loud"}, "--log-level expects trace, debug, info, warning, error or fatal"},
      {{"--timeline-filename="}, "--timeline-filename expects a file name"},
      {{"--stall-check-warning-time-seconds"}, "needs a value"},
      {{"--output-filename="}, "--output-filename needs a directory"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.args[0]);
    std::vector<std::string> args = {"-np", "2"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    if (std::string(b.message) != "needs a value") args.push_back("prog");
    Status s = ParseOptions(args, &o);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_NE(s.message().find(b.message), std::string::npos) << s.message();
  }
}

TEST(HvdrunTuningFlags, OverrideTheInheritedEnvironment) {
  Options o;
  ASSERT_TRUE(
      ParseOptions({"-np", "1", "--log-level", "info", "--output-filename", "logs", "p"}, &o).ok());
  EXPECT_EQ(o.output_dir, "logs");
  RankPlacement p;
  p.host = "localhost";
  JobFacts job;
  job.size = 1;
  job.flag_env = o.rank_env;
  std::vector<std::string> inherited = {"HVD_LOG_LEVEL=error", "HOROVOD_LOG_LEVEL=trace", "A=1"};
  auto env = MergeEnvironment(inherited, RankVariables(p, job, inherited));
  auto count = [&](const std::string& kv) { return std::count(env.begin(), env.end(), kv); };
  EXPECT_EQ(count("HVD_LOG_LEVEL=info"), 1);
  EXPECT_EQ(count("HVD_LOG_LEVEL=error"), 0);
  EXPECT_EQ(count("A=1"), 1);

  // --mpi: the flags' variables as -x VAR=VALUE; the inherited HVD_LOG_LEVEL
  // is not forwarded besides; --output-filename goes to mpirun.
  ASSERT_TRUE(
      ParseOptions({"--mpi", "-np", "1", "--log-level", "info", "--output-filename", "logs", "p"},
                   &o)
          .ok());
  std::vector<RankPlacement> r;
  ASSERT_TRUE(PlaceRanks(1, {{"a", 1}}, &r).ok());
  auto argv = MpirunArgv(o, r, {"HVD_LOG_LEVEL=error", "HVD_CYCLE_TIME=3"});
  EXPECT_EQ(argv,
            (std::vector<std::string>{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                                      "1", "-H", "a:1", "--tag-output", "--output-filename", "logs",
                                      "-x", "HVD_CYCLE_TIME", "-x", "HVD_LOG_LEVEL=info", "p"}));
}

TEST(HvdrunOutputFiles, RankNamesAndFiles) {
  EXPECT_EQ(RankOutputName(0, 1), "rank.0");
  EXPECT_EQ(RankOutputName(1, 2), "rank.1");
  EXPECT_EQ(RankOutputName(3, 10), "rank.3");
  EXPECT_EQ(RankOutputName(3, 11), "rank.03");
  EXPECT_EQ(RankOutputName(10, 11), "rank.10");
  EXPECT_EQ(RankOutputName(7, 1000), "rank.007");

  char tmpl[] = "/tmp/hvdrun_unit_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/a/b";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  ASSERT_TRUE(MakeDirectories(dir + "/").ok()) << "an existing directory is fine";
  rendezvous::UniqueFd out, err;
  ASSERT_TRUE(OpenOutputCopies(dir, "rank.1", &out, &err).ok());
  WriteAll(out.get(), "no prefix\n", 10);
  WriteAll(err.get(), "e", 1);
  out.Reset();
  err.Reset();
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(read(dir + "/rank.1/stdout"), "no prefix\n");
  EXPECT_EQ(read(dir + "/rank.1/stderr"), "e");
  // A file where a directory must go is a one-line error.
  std::ofstream(dir + "/file").put('x');
  Status s = MakeDirectories(dir + "/file/sub");
  EXPECT_NE(s.message().find("cannot create directory " + dir + "/file"), std::string::npos)
      << s.message();
  ASSERT_EQ(std::system(("rm -rf " + std::string(tmpl)).c_str()), 0);
}

}  // namespace
}  // namespace run
}  // namespace hvd
