// Command line of hvdrun: parsing and the --help text.
#pragma once

#include <string>
#include <vector>

#include "core/common/status.h"
#include "tools/hvdrun/command.h"

namespace hvd {
namespace run {

enum class LaunchMode { kGloo, kMpi };

struct Options {
  int np = 0;
  std::string hosts;              // -H host:slots,...
  std::string hostfile;           // --hostfile
  bool hosts_from_slurm = false;  // `hosts` is the Slurm allocation's
  LaunchMode mode = LaunchMode::kGloo;
  std::string ssh_command;  // empty: "ssh -o BatchMode=yes"
  int ssh_port = 0;         // 0: the remote shell's default
  std::string network_interface;
  double start_timeout_seconds = 30.0;
  double grace_seconds = 3.0;  // SIGTERM -> SIGKILL when the job stops
  bool verbose = false;
  bool check_build = false;
  bool explain = false;  // --explain: print the data plane's plan, start nothing
  bool help = false;
  std::vector<std::string> command;  // program and its arguments
  // HVD_* variables set by horovodrun's tuning flags (tuning_flags.h), in
  // the order given; they override hvdrun's own environment.
  EnvList rank_env;
  // --output-filename DIR: each rank's output is also written, unprefixed,
  // to DIR/rank.N/stdout and DIR/rank.N/stderr.
  std::string output_dir;

  // Elastic mode (docs/elastic.md): on when any of these flags is given.
  bool elastic = false;
  int min_np = 0;  // 0: -np if given, else 1
  int max_np = 0;  // 0: -np if given, else no limit
  std::string host_discovery_script;
  double elastic_timeout_seconds = 600.0;
  double blacklist_cooldown_seconds = 30.0;
};

// Parses argv[1..]. Errors are one line suitable for "hvdrun: <message>".
// `allocation_hosts` (slurm_allocation.h) are the hosts when no -H,
// --hostfile or discovery script is given; -np then defaults to their slots.
Status ParseOptions(const std::vector<std::string>& args, Options* out,
                    const std::string& allocation_hosts = "");

std::string HelpText();

}  // namespace run
}  // namespace hvd
