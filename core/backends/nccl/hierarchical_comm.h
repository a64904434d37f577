// HVD_HIERARCHICAL_ALLREDUCE on GPUs: allreduce = NCCL reduce-scatter
// inside the host, CPU-backend allreduce of each rank's block across hosts
// (through pinned staging), NCCL allgather inside the host. Every other
// call goes to the flat NCCL communicator of the whole set.
#pragma once

#include <memory>

#include "core/backends/nccl/nccl_comm.h"
#include "core/backends/staging/staging_comm.h"

namespace hvd {

class HierarchicalComm : public Comm {
 public:
  // Takes ownership of the communicators; `flat` spans the whole set,
  // `local` this host's ranks, `cross_host` (a CPU Comm) the ranks with my
  // local index. `stream` must outlive this object.
  HierarchicalComm(std::unique_ptr<NcclComm> flat, std::unique_ptr<NcclComm> local,
                   std::unique_ptr<Comm> local_ctrl, std::unique_ptr<Comm> cross_host,
                   const CudaStream* stream);

  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }
  const char* backend_name() const override { return "NCCL"; }
  bool supports_device(const Device& d) const override { return d.kind == DeviceKind::kCUDA; }

  Status Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& b) override {
    return flat_->Allgatherv(in, out, b);
  }
  Status Broadcast(void* buf, int64_t bytes, int root) override {
    return flat_->Broadcast(buf, bytes, root);
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& s, void* out,
                   const std::vector<int64_t>& r) override {
    return flat_->Alltoallv(in, s, out, r);
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override {
    return flat_->Reducescatter(in, out, counts, dt, op);
  }
  Status Barrier() override { return flat_->Barrier(); }
  Status Split(const std::vector<int>& r, const std::string& t, std::unique_ptr<Comm>* o) override {
    return flat_->Split(r, t, o);
  }

 private:
  std::unique_ptr<NcclComm> flat_;
  std::unique_ptr<Comm> local_ctrl_;  // the host group the local NCCL comm was made over
  std::unique_ptr<NcclComm> local_;
  std::unique_ptr<Comm> cross_host_;
  StagingComm cross_;  // stages cross_host_'s data calls through pinned memory
};

}  // namespace hvd
