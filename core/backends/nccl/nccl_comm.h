// The NCCL backend: data collectives on CUDA memory, queued on hvd's stream.
// NCCL only moves data; negotiation runs on the set's control channel.
//
// Every data call waits for its stream by polling cudaStreamQuery and
// ncclCommGetAsyncError with a timeout: a peer that dies mid-collective
// becomes Code::kPeerLost (NCCL remote/system error) or Code::kTimeout and
// the communicator is aborted, instead of a hang in cudaStreamSynchronize.
#pragma once

#include <nccl.h>

#include "core/backends/comm.h"
#include "core/cuda/cuda_util.h"

namespace hvd {

// NCCL's result as a Status (kOk / kPeerLost / kBackend).
Status NcclStatus(ncclResult_t r, const char* what);

class NcclComm : public Comm {
 public:
  // Collective over `ctrl`'s ranks: its rank 0 makes the unique id and sends
  // it with BroadcastBytes over `ctrl`, then every rank joins with
  // ncclCommInitRank on the current CUDA device. `stream` must outlive the
  // result. timeout_s <= 0: waits have no time limit.
  static Status Create(Comm* ctrl, const CudaStream* stream, double timeout_s,
                       std::unique_ptr<NcclComm>* out);
  ~NcclComm() override;

 private:
  struct Key {  // only Create constructs (make_unique needs a public constructor)
    explicit Key() = default;
  };

 public:
  NcclComm(Key, const CudaStream* stream, double timeout_s)
      : stream_(stream), timeout_s_(timeout_s) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "NCCL"; }
  Transport transport() const override { return Transport::kNccl; }
  bool supports_device(const Device& d) const override { return d.kind == DeviceKind::kCUDA; }

  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buf, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override;
  Status Barrier() override;
  Status Split(const std::vector<int>&, const std::string&, std::unique_ptr<Comm>*) override {
    return Status::Unsupported("NCCL communicators are created per process set, not split");
  }

 protected:
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  // Turns a failed NCCL call or wait into a Status and aborts the
  // communicator (no later call can succeed on it anyway).
  Status Check(ncclResult_t r, const char* what);
  // Waits for everything queued on the stream, watching for async errors.
  Status Sync();
  static Status AbortCheck(void* self);

  const CudaStream* stream_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  int rank_ = 0, size_ = 1;
  DeviceBuffer barrier_buf_;
};

}  // namespace hvd
