// HVD_HIERARCHICAL_ALLREDUCE on GPUs (the host-memory twin is
// HierarchicalCpuComm): allreduce = NCCL reduce-scatter
// inside the host, CPU-backend allreduce of each rank's block across hosts
// (through pinned staging), NCCL allgather inside the host. Every other
// call is forwarded to the flat NCCL communicator of the whole set.
#pragma once

#include <memory>

#include "core/backends/forwarding_comm.h"
#include "core/backends/nccl/nccl_comm.h"
#include "core/dataplane/decorators/cuda/gpu_staging_comm.h"

namespace hvd {

class HierarchicalGpuComm : public ForwardingComm {
 public:
  // Takes ownership of the communicators; `flat` spans the whole set,
  // `local` this host's ranks, `cross_host` (a CPU Comm) the ranks with my
  // local index. `stream` must outlive this object.
  HierarchicalGpuComm(std::unique_ptr<NcclComm> flat, std::unique_ptr<NcclComm> local,
                      std::unique_ptr<Comm> local_ctrl, std::unique_ptr<Comm> cross_host,
                      const CudaStream* stream);

 protected:
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  std::unique_ptr<Comm> local_ctrl_;  // the host group the local NCCL comm was made over
  std::unique_ptr<NcclComm> local_;
  std::unique_ptr<Comm> cross_host_;
  GpuStagingComm cross_;  // stages cross_host_'s data calls through pinned memory
};

}  // namespace hvd
