// hvdrun: starts the ranks of an hvd job (see --help and docs/running.md).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/rendezvous/kv_protocol.h"
#include "core/rendezvous/kv_server.h"
#include "core/rendezvous/socket_util.h"
#include "tools/hvdrun/check_build.h"
#include "tools/hvdrun/child_io.h"
#include "tools/hvdrun/command.h"
#include "tools/hvdrun/elastic_discovery.h"
#include "tools/hvdrun/elastic_driver.h"
#include "tools/hvdrun/explain.h"
#include "tools/hvdrun/hosts.h"
#include "tools/hvdrun/job_env.h"
#include "tools/hvdrun/mpi_launch.h"
#include "tools/hvdrun/net.h"
#include "tools/hvdrun/options.h"
#include "tools/hvdrun/output.h"
#include "tools/hvdrun/preflight.h"
#include "tools/hvdrun/process.h"
#include "tools/hvdrun/slurm_allocation.h"
#include "tools/hvdrun/supervisor.h"

namespace hvd {
namespace run {
namespace {

constexpr size_t kSecretBytes = 32;

int Fail(const Status& s, int code = 1) {
  std::fprintf(stderr, "hvdrun: %s\n", s.message().c_str());
  return code;
}

int ExecMpirun(const Options& options, const std::vector<RankPlacement>& ranks) {
  std::vector<std::string> argv = MpirunArgv(options, ranks, CurrentEnvironment());
  if (options.verbose) {
    std::string line = "hvdrun: exec";
    for (const auto& a : argv) line += " " + ShellQuote(a);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(&a[0]);
  cargv.push_back(nullptr);
  ::execvp(cargv[0], cargv.data());
  return Fail(Status::Invalid("cannot execute mpirun (is Open MPI installed and in PATH?)"), 127);
}

std::string CurrentDirectory() {
  std::vector<char> buf(4096);
  if (::getcwd(buf.data(), buf.size()) == nullptr) return "/";
  return buf.data();
}

int Main(int argc, char** argv) {
  // A closed stdout must not kill the launcher while ranks still run.
  ::signal(SIGPIPE, SIG_IGN);
  Options options;
  std::string allocation_hosts;
  Status s = SlurmAllocationHosts(&allocation_hosts);
  if (!s.ok()) return Fail(s, 2);
  s = ParseOptions(std::vector<std::string>(argv + 1, argv + argc), &options, allocation_hosts);
  if (!s.ok()) return Fail(s, 2);
  if (options.verbose && options.hosts_from_slurm) {
    std::fprintf(stderr, "hvdrun: hosts from the Slurm allocation: %s\n", options.hosts.c_str());
  }
  if (options.help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (options.check_build) {
    std::fputs(CheckBuildReport().c_str(), stdout);
    return 0;
  }

  std::vector<HostSlots> hosts;
  if (!options.hosts.empty()) {
    s = ParseHostList(options.hosts, &hosts);
  } else if (!options.hostfile.empty()) {
    s = ParseHostfile(options.hostfile, &hosts);
  } else if (!options.host_discovery_script.empty()) {
    // Elastic: the first discovery decides where the store must be reachable.
    s = DiscoverHosts(options.host_discovery_script, CurrentEnvironment(), 10.0, &hosts);
  } else {
    hosts = {{"localhost", options.np > 0 ? options.np : 1}};
  }
  if (!s.ok()) return Fail(s, 2);
  std::vector<RankPlacement> ranks;
  if (options.elastic) {
    // Every host that may get a worker, for the address choice below.
    for (const auto& h : hosts) {
      RankPlacement p;
      p.host = h.name;
      ranks.push_back(p);
    }
  } else {
    s = PlaceRanks(options.np, hosts, &ranks);
  }
  if (!s.ok()) return Fail(s, 2);
  if (options.explain) {
    std::string report;
    s = ExplainReport(options, ranks, &report);
    if (!s.ok()) return Fail(s, 2);
    std::fputs(report.c_str(), stdout);
    return 0;
  }

  if (options.mode == LaunchMode::kMpi) return ExecMpirun(options, ranks);
  if (!options.output_dir.empty()) {
    s = MakeDirectories(options.output_dir);
    if (!s.ok()) return Fail(s);
  }

  RemoteShell shell;
  s = MakeRemoteShell(options.ssh_command, options.ssh_port, &shell);
  if (!s.ok()) return Fail(s, 2);
  std::vector<std::string> remote_hosts;
  for (const auto& r : ranks) {
    if (!IsLocalHost(r.host) && (remote_hosts.empty() || remote_hosts.back() != r.host)) {
      remote_hosts.push_back(r.host);
    }
  }

  // Where the store listens and what the ranks are told to connect to.
  std::string bind_addr = "127.0.0.1";
  std::string advertised = "127.0.0.1";
  if (!options.network_interface.empty()) {
    s = rendezvous::InterfaceAddress(options.network_interface, &advertised);
    if (!s.ok()) return Fail(s, 2);
    bind_addr = advertised;
  } else if (!remote_hosts.empty()) {
    s = RouteAddressTo(remote_hosts[0], &advertised);
    if (!s.ok()) return Fail(s, 2);
    bind_addr = "0.0.0.0";
  }

  if (!remote_hosts.empty()) {
    s = CheckHostsReachable(shell, remote_hosts, options.start_timeout_seconds);
    if (!s.ok()) return Fail(s);
  }

  // Before the server's thread exists, so only the supervisor sees them.
  BlockJobSignals();
  std::string secret;
  s = rendezvous::RandomBytes(kSecretBytes, &secret);
  if (!s.ok()) return Fail(s);
  rendezvous::KVServer server;
  s = server.Start(bind_addr, 0, secret);
  if (!s.ok()) return Fail(s);
  if (options.verbose) {
    std::fprintf(stderr, "hvdrun: rendezvous store on %s:%d (advertised as %s)\n",
                 bind_addr.c_str(), server.port(), advertised.c_str());
  }

  JobFacts job;
  job.size = options.np;
  job.rendezvous_addr = advertised;
  job.rendezvous_port = server.port();
  job.secret_hex = rendezvous::HexEncode(secret);
  job.network_interface = options.network_interface;
  job.start_timeout_seconds = options.start_timeout_seconds;
  job.flag_env = options.rank_env;
  std::vector<std::string> environment = CurrentEnvironment();
  if (options.elastic) {
    ElasticJob ej;
    ej.options = options;
    ej.fixed_hosts = hosts;
    ej.facts = job;
    ej.secret = secret;
    ej.shell = shell;
    ej.cwd = CurrentDirectory();
    ej.environment = environment;
    int code = RunElasticJob(ej);
    server.Stop();
    return code;
  }
  EnvList forwarded = ForwardedVariables(environment);
  std::string cwd = CurrentDirectory();

  std::vector<RankLaunch> launches;
  for (const auto& r : ranks) {
    RankLaunch l;
    l.rank = r.rank;
    l.host = r.host;
    EnvList vars = RankVariables(r, job, environment);
    if (IsLocalHost(r.host)) {
      l.argv = options.command;
      l.env = MergeEnvironment(environment, vars);
    } else {
      EnvList remote = forwarded;
      remote.insert(remote.end(), vars.begin(), vars.end());
      l.argv = RemoteArgv(shell, r.host, cwd, remote, options.command);
      l.env = environment;
    }
    launches.push_back(std::move(l));
  }
  int code = RunJob(launches, options.grace_seconds, options.verbose, options.output_dir);
  server.Stop();
  return code;
}

}  // namespace
}  // namespace run
}  // namespace hvd

int main(int argc, char** argv) {
  return hvd::run::Main(argc, argv);
}
