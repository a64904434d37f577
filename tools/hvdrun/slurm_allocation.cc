#include "tools/hvdrun/slurm_allocation.h"

#include <cstdlib>
#include <vector>

#include "core/common/slurm_hostlist.h"
#include "tools/hvdrun/net.h"

namespace hvd {
namespace run {

Status SlurmAllocationHosts(std::string* host_list) {
  host_list->clear();
  const char* nodelist = std::getenv("SLURM_JOB_NODELIST");
  if (nodelist == nullptr) nodelist = std::getenv("SLURM_NODELIST");
  if (nodelist == nullptr || *nodelist == '\0') return Status::OK();
  std::vector<std::string> nodes;
  Status s = ExpandSlurmHostlist(nodelist, &nodes);
  if (!s.ok()) return Status::Invalid("SLURM_JOB_NODELIST: " + s.message());
  std::vector<int> slots(nodes.size(), 1);
  for (const char* var : {"SLURM_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"}) {
    const char* counts = std::getenv(var);
    if (counts == nullptr || *counts == '\0') continue;
    s = ExpandSlurmTaskCounts(counts, &slots);
    if (!s.ok()) return Status::Invalid(std::string(var) + ": " + s.message());
    if (slots.size() != nodes.size()) {
      return Status::Invalid(std::string(var) + "=" + counts + " does not match the " +
                             std::to_string(nodes.size()) +
                             " nodes of SLURM_JOB_NODELIST=" + nodelist);
    }
    break;
  }
  const char* here = std::getenv("SLURMD_NODENAME");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string name = nodes[i];
    if (here != nullptr && name == here && !IsLocalHost(name)) name = "localhost";
    *host_list += (i ? "," : "") + name + ":" + std::to_string(slots[i]);
  }
  return Status::OK();
}

}  // namespace run
}  // namespace hvd
