// Where a process set's data communicator is assembled: the plan
// (plan.h) is made from the Config and the members' hosts, then carried
// out once by wrapping the backend's Comm in the decorators it names:
//   - one host: ShmComm (host-local collectives through shared memory);
//   - one rank on each of several hosts: TcpRingComm for large allreduces;
//   - several hosts, some with several ranks: HierarchicalCpuComm over a
//     host-local Comm (shared memory) and a cross-host one (TCP ring, MPI's
//     quiet ring or the backend's allreduce).
// A step that cannot be set up (a segment that fails, a neighbour out of
// reach under HVD_HIERARCHICAL_CROSS=auto) falls back for every member
// together; the plan records it. The plan is logged at HVD_LOG_LEVEL=info.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/config.h"
#include "core/dataplane/plan.h"

namespace hvd {

struct BuildArgs {
  PlanInputs inputs;      // inputs.hosts: in the set's rank order
  std::string tag;        // unique per set, equal on its members ("world", "process_set.1")
  std::string bind_host;  // an address of this host the other hosts reach (TCP ring)
};

// The plan's inputs for a set whose backend Comm is `data`: its transport,
// whether it takes calls from two threads, and `hosts` (host keys in set
// rank order).
PlanInputs InputsFor(const Comm& data, const std::string& name, std::vector<std::string> hosts);

// Collective over *data's members. *data: the set's backend Comm on entry,
// its data communicator on return; *plan: what it runs.
Status BuildDataPlane(const Config& config, const BuildArgs& args, std::shared_ptr<Comm>* data,
                      DataPlan* plan);

// Collective over `backend`, whose members are all on this host. *out: a
// ShmComm over it, or null to keep `backend` (not Gloo or MPI, switched off,
// or the segment could not be set up: then a warning names why, and every
// member keeps the backend together). `what` names the group in messages.
Status TrySharedMemory(const Config& config, const std::shared_ptr<Comm>& backend,
                       const std::string& what, std::unique_ptr<Comm>* out);

}  // namespace hvd
