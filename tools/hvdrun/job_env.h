// The environment each rank gets: its place in the job (HVD_RANK, ...) and
// how to reach the rendezvous store.
#pragma once

#include <string>
#include <vector>

#include "tools/hvdrun/command.h"
#include "tools/hvdrun/hosts.h"

namespace hvd {
namespace run {

struct JobFacts {
  int size = 0;
  std::string rendezvous_addr;
  int rendezvous_port = 0;
  std::string secret_hex;
  std::string network_interface;  // "" if not given
  double start_timeout_seconds = 30;
  EnvList flag_env;  // set by the tuning flags; overrides the inherited values
};

// The variables hvdrun sets for one rank, in a fixed order. Defaults
// (HVD_CONTROLLER=gloo, ...) are skipped when the caller's environment,
// given as "K=V" strings, already sets them; job.flag_env comes last.
EnvList RankVariables(const RankPlacement& rank, const JobFacts& job,
                      const std::vector<std::string>& inherited);

// For local ranks: the inherited environment with vars replacing any
// variable of the same name.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& inherited,
                                          const EnvList& vars);

// For remote ranks, which do not inherit hvdrun's environment: hvd's and
// Horovod's own settings plus the paths programs need to start.
EnvList ForwardedVariables(const std::vector<std::string>& inherited);

// This process's environment as "K=V" strings.
std::vector<std::string> CurrentEnvironment();

}  // namespace run
}  // namespace hvd
