#include "core/dataplane/decorators/nccl/hierarchical_gpu_comm.h"

#include "core/dataplane/gpu_hierarchy_plan.h"

namespace hvd {

HierarchicalGpuComm::HierarchicalGpuComm(std::unique_ptr<NcclComm> flat,
                                         std::unique_ptr<NcclComm> local,
                                         std::unique_ptr<Comm> local_ctrl,
                                         std::unique_ptr<Comm> cross_host, const CudaStream* stream)
    : ForwardingComm(std::shared_ptr<Comm>(std::move(flat))),
      local_ctrl_(std::move(local_ctrl)),
      local_(std::move(local)),
      cross_host_(std::move(cross_host)),
      cross_(cross_host_.get(), stream) {}

Status HierarchicalGpuComm::DoAllreduce(const AllreduceOptions& a) {
  const int lsize = local_->size();
  const int lrank = local_->rank();
  const int64_t esize = static_cast<int64_t>(DataTypeSize(a.dt));
  std::vector<int64_t> counts = SplitCount(a.count, lsize);
  int64_t off = 0;
  for (int k = 0; k < lrank; ++k) off += counts[static_cast<size_t>(k)];
  auto* mine = static_cast<uint8_t*>(a.out) + off * esize;
  // My block of the host-reduced buffer lands where it belongs in `out`
  // (in place: where it was).
  HVD_RETURN_IF_ERROR(local_->Reducescatter(a.in, mine, counts, a.dt, a.op));
  HVD_RETURN_IF_ERROR(cross_.Allreduce({mine, counts[static_cast<size_t>(lrank)], a.dt, a.op}));
  std::vector<int64_t> bytes(counts.size());
  for (size_t k = 0; k < counts.size(); ++k) bytes[k] = counts[k] * esize;
  return local_->Allgatherv(mine, a.out, bytes);
}

}  // namespace hvd
