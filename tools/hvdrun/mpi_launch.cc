#include "tools/hvdrun/mpi_launch.h"

#include <map>
#include <set>

#include "tools/hvdrun/job_env.h"

namespace hvd {
namespace run {
namespace {

bool HasVariable(const std::vector<std::string>& environment, const std::string& name) {
  for (const auto& kv : environment) {
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> MpirunArgv(const Options& options, const std::vector<RankPlacement>& ranks,
                                    const std::vector<std::string>& environment) {
  std::vector<std::string> argv = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                                   std::to_string(options.np)};
  std::vector<std::string> order;
  std::map<std::string, int> used;
  for (const auto& r : ranks) {
    if (used[r.host]++ == 0) order.push_back(r.host);
  }
  std::string hosts;
  for (const auto& h : order)
    hosts += (hosts.empty() ? "" : ",") + h + ":" + std::to_string(used[h]);
  argv.insert(argv.end(), {"-H", hosts});
  if (!options.ssh_command.empty()) {
    argv.insert(argv.end(), {"--mca", "plm_rsh_agent", options.ssh_command});
  }
  if (options.ssh_port != 0) {
    argv.insert(argv.end(), {"--mca", "plm_rsh_args", "-p " + std::to_string(options.ssh_port)});
  }
  if (!options.network_interface.empty()) {
    argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", options.network_interface, "--mca",
                             "oob_tcp_if_include", options.network_interface});
  }
  // Across hosts, Open MPI's TCP transport by default moves large messages
  // with its emulated RDMA put, which lets only one direction of an exchange
  // between two ranks run at a time: the pairwise exchanges of its allreduce
  // then get half the link (docs/scaling.md). The send protocol runs both
  // directions at once. Not with btl_tcp_links > 1 (that pair hangs), nor
  // over a value the user set (the command line would override it).
  if (order.size() > 1 && !HasVariable(environment, "OMPI_MCA_btl_tcp_flags") &&
      !HasVariable(environment, "OMPI_MCA_btl_tcp_links")) {
    argv.insert(argv.end(), {"--mca", "btl_tcp_flags", "send"});
  }
  argv.push_back("--tag-output");
  if (!options.output_dir.empty())
    argv.insert(argv.end(), {"--output-filename", options.output_dir});
  // mpirun does not export the launcher's environment to remote hosts. The
  // tuning flags' values replace the inherited ones.
  std::set<std::string> from_flags;
  for (const auto& kv : options.rank_env) from_flags.insert(kv.first);
  for (const auto& kv : ForwardedVariables(environment)) {
    if (!from_flags.count(kv.first)) argv.insert(argv.end(), {"-x", kv.first});
  }
  for (const auto& kv : options.rank_env)
    argv.insert(argv.end(), {"-x", kv.first + "=" + kv.second});
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

}  // namespace run
}  // namespace hvd
