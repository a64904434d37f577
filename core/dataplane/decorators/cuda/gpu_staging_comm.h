// GPU tensors over a CPU backend (a decorator of the host Comm): every data call copies device
// memory into page-locked host buffers, runs the wrapped host Comm (MPI or Gloo) and copies the
// result back. Used when NCCL is not built or HVD_GPU_OPERATIONS asks for mpi/gloo, and for the
// cross-host step of hierarchical allreduce.
#pragma once

#include "core/backends/comm.h"
#include "core/cuda/cuda_util.h"

namespace hvd {

class GpuStagingComm : public Comm {
 public:
  // `host` and `stream` must outlive this object.
  GpuStagingComm(Comm* host, const CudaStream* stream) : host_(host), stream_(stream) {}

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  const char* backend_name() const override { return host_->backend_name(); }
  Transport transport() const override { return host_->transport(); }
  bool supports_device(const Device& d) const override { return d.kind == DeviceKind::kCUDA; }

  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buf, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override;
  Status Barrier() override { return host_->Barrier(); }
  Status Split(const std::vector<int>&, const std::string&, std::unique_ptr<Comm>*) override {
    return Status::Unsupported("split the host communicator, not its GPU staging wrapper");
  }

 protected:
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  // Device -> pinned (waits: the host backend reads it next).
  Status ToHost(PinnedBuffer* dst, const void* src, int64_t bytes);
  // Pinned -> device, queued on hvd's stream (ordered before later work).
  Status ToDevice(void* dst, const void* src, int64_t bytes);
  Status Reserve(PinnedBuffer* b, int64_t bytes);

  Comm* host_;
  const CudaStream* stream_;
  PinnedBuffer in_, out_;
};

}  // namespace hvd
