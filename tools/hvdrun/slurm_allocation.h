// hvdrun inside a Slurm allocation (sbatch, salloc): with no -H, --hostfile
// or discovery script, the hosts and their slots are the allocation's.
#pragma once

#include <string>

#include "core/common/status.h"

namespace hvd {
namespace run {

// "node1:2,node2:2" from SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE (else
// SLURM_JOB_CPUS_PER_NODE, else one slot per node); empty outside an
// allocation. The node this hvdrun runs on (SLURMD_NODENAME) is named
// "localhost" when its Slurm name is not this machine's host name, so that
// its ranks start without ssh.
Status SlurmAllocationHosts(std::string* host_list);

}  // namespace run
}  // namespace hvd
