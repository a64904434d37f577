#include "tools/hvdrun/explain.h"

#include <cstdlib>

#include "core/common/config.h"
#include "core/dataplane/plan.h"

namespace hvd {
namespace run {
namespace {

// The ranks' data backend: HVD_CPU_OPERATIONS, else the launcher's.
Transport Backend(const Config& config, const Options& options) {
  switch (config.cpu_operations) {
    case BackendChoice::kMpi:
      return Transport::kMpi;
    case BackendChoice::kGloo:
      return Transport::kGloo;
    case BackendChoice::kAuto:
      break;
  }
  return options.mode == LaunchMode::kMpi ? Transport::kMpi : Transport::kGloo;
}

std::string RankRange(int first, int last) {
  return first == last ? "rank " + std::to_string(first)
                       : "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

Status ExplainReport(const Options& options, const std::vector<RankPlacement>& ranks,
                     std::string* out) {
  // The ranks get hvdrun's environment with the tuning flags on top.
  for (const auto& kv : options.rank_env) ::setenv(kv.first.c_str(), kv.second.c_str(), 1);
  Config config;
  HVD_RETURN_IF_ERROR(Config::FromEnvironment(&config));
  PlanInputs in;
  in.name = "process set 0";
  in.backend = Backend(config, options);
  // MPI's threads as libhvd asks for them; Gloo always has them.
  in.threads = in.backend == Transport::kGloo || !config.mpi_threads_disable;
  for (const auto& r : ranks) in.hosts.push_back(r.host);
  out->clear();
  std::string group;
  int first = 0;
  for (int r = 0; r <= static_cast<int>(ranks.size()); ++r) {
    std::string line;
    if (r < static_cast<int>(ranks.size())) {
      in.rank = r;
      line = PlanDataPlane(config, in).Describe();
    }
    if (r > 0 && line != group) {
      *out += RankRange(first, r - 1) + ": " + group + "\n";
      first = r;
    }
    group = line;
  }
  return Status::OK();
}

}  // namespace run
}  // namespace hvd
