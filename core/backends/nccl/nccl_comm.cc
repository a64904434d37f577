#include "core/backends/nccl/nccl_comm.h"

#include <cstring>

#include "core/common/dtype_dispatch.h"

namespace hvd {
namespace {

// NCCL has no 16-bit integer: int16 reductions are refused by
// CheckReducible before this is asked (moving them needs no type: bytes).
ncclDataType_t ToNccl(DataType dt) {
  static constexpr ncclDataType_t kTypes[] = {ncclUint8, ncclInt8,     ncclInt32, ncclInt64,
                                              ncclHalf,  ncclBfloat16, ncclFloat, ncclDouble,
                                              ncclInt8,  ncclUint8};
  return PerDataType(kTypes, dt, ncclInt8);
}

Status CheckReducible(DataType dt, const char* what) {
  if (dt != DataType::kInt16) return Status::OK();
  return Status::Unsupported(std::string("NCCL ") + what +
                             ": NCCL has no int16 type; reduce int16 tensors on the CPU or "
                             "cast them to int32 (Horovod has the same limit)");
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
    default:  // kSum; kAverage is a sum followed by a scale (the executor's)
      return ncclSum;
  }
}

bool AllEqual(const std::vector<int64_t>& v) {
  for (auto x : v) {
    if (x != v[0]) return false;
  }
  return true;
}

// Ends a ncclGroupStart() on every path out of a scope.
class GroupGuard {
 public:
  GroupGuard() : started_(ncclGroupStart() == ncclSuccess) {}
  ~GroupGuard() {
    if (started_) (void)ncclGroupEnd();
  }
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;
  ncclResult_t End() {
    started_ = false;
    return ncclGroupEnd();
  }
  bool started() const { return started_; }

 private:
  bool started_;
};

}  // namespace

Status NcclStatus(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Status::OK();
  std::string m = std::string("NCCL: ") + what + ": " + ncclGetErrorString(r);
  // Remote and system errors are what a dead or unreachable peer produces.
  if (r == ncclRemoteError || r == ncclSystemError) return Status::PeerLost(m);
  return Status::Backend(m);
}

Status NcclComm::Create(Comm* ctrl, const CudaStream* stream, double timeout_s,
                        std::unique_ptr<NcclComm>* out) {
  auto c = std::make_unique<NcclComm>(Key{}, stream, timeout_s);
  c->rank_ = ctrl->rank();
  c->size_ = ctrl->size();
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::string bytes;
  if (c->rank_ == 0) {
    // A failure here must still reach the other ranks, which otherwise wait
    // in BroadcastBytes forever: they receive an empty id and fail too.
    Status s = NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (s.ok()) bytes.assign(reinterpret_cast<const char*>(&id), sizeof(id));
    HVD_RETURN_IF_ERROR(BroadcastBytes(*ctrl, &bytes, 0));
    HVD_RETURN_IF_ERROR(s);
  } else {
    HVD_RETURN_IF_ERROR(BroadcastBytes(*ctrl, &bytes, 0));
    if (bytes.size() != sizeof(id)) {
      return Status::Backend("NCCL: rank 0 of the process set could not create a unique id");
    }
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  HVD_RETURN_IF_ERROR(
      NcclStatus(ncclCommInitRank(&c->comm_, c->size_, id, c->rank_), "ncclCommInitRank"));
  *out = std::move(c);
  return Status::OK();
}

NcclComm::~NcclComm() {
  if (!comm_) return;
  if (aborted_) return;  // ncclCommAbort already freed it
  // Destroy waits for pending work; after an error only abort is safe.
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async == ncclSuccess) {
    (void)ncclCommDestroy(comm_);
  } else {
    (void)ncclCommAbort(comm_);
  }
}

Status NcclComm::Check(ncclResult_t r, const char* what) {
  Status s = NcclStatus(r, what);
  if (!s.ok() && comm_ && !aborted_) {
    (void)ncclCommAbort(comm_);
    aborted_ = true;
  }
  return s;
}

Status NcclComm::AbortCheck(void* self) {
  auto* c = static_cast<NcclComm*>(self);
  ncclResult_t async = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(c->comm_, &async);
  if (r != ncclSuccess) return c->Check(r, "ncclCommGetAsyncError");
  return c->Check(async, "asynchronous error");
}

Status NcclComm::Sync() {
  if (aborted_) return Status::Backend("NCCL: the communicator was aborted after an earlier error");
  Status s = stream_->Wait(timeout_s_, &NcclComm::AbortCheck, this);
  if (s.code() == Code::kTimeout && !aborted_) {
    // A collective that never finishes means a peer is gone or stuck;
    // aborting frees the GPU kernels spinning on it.
    (void)ncclCommAbort(comm_);
    aborted_ = true;
  }
  return s;
}

Status NcclComm::DoAllreduce(const AllreduceOptions& a) {
  if (aborted_) return Sync();
  HVD_RETURN_IF_ERROR(CheckReducible(a.dt, "allreduce"));
  HVD_RETURN_IF_ERROR(Check(ncclAllReduce(a.in, a.out, static_cast<size_t>(a.count), ToNccl(a.dt),
                                          ToNccl(a.op), comm_, stream_->get()),
                            "ncclAllReduce"));
  return Sync();
}

Status NcclComm::Allgatherv(const void* in, void* out, const std::vector<int64_t>& per_rank) {
  if (aborted_) return Sync();
  if (AllEqual(per_rank)) {
    HVD_RETURN_IF_ERROR(Check(
        ncclAllGather(in, out, static_cast<size_t>(per_rank[0]), ncclInt8, comm_, stream_->get()),
        "ncclAllGather"));
    return Sync();
  }
  // Uneven blocks: one broadcast per rank, grouped so NCCL runs them together.
  {
    GroupGuard g;
    if (!g.started()) return Check(ncclInternalError, "ncclGroupStart");
    int64_t off = 0;
    for (int k = 0; k < size_; ++k) {
      auto* dst = static_cast<uint8_t*>(out) + off;
      const void* src = k == rank_ ? in : dst;
      HVD_RETURN_IF_ERROR(Check(ncclBroadcast(src, dst, static_cast<size_t>(per_rank[k]), ncclInt8,
                                              k, comm_, stream_->get()),
                                "ncclBroadcast"));
      off += per_rank[k];
    }
    HVD_RETURN_IF_ERROR(Check(g.End(), "ncclGroupEnd"));
  }
  return Sync();
}

Status NcclComm::Broadcast(void* buf, int64_t bytes, int root) {
  if (aborted_) return Sync();
  HVD_RETURN_IF_ERROR(Check(
      ncclBroadcast(buf, buf, static_cast<size_t>(bytes), ncclInt8, root, comm_, stream_->get()),
      "ncclBroadcast"));
  return Sync();
}

Status NcclComm::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                           const std::vector<int64_t>& recv_bytes) {
  if (aborted_) return Sync();
  {
    GroupGuard g;
    if (!g.started()) return Check(ncclInternalError, "ncclGroupStart");
    int64_t soff = 0, roff = 0;
    for (int k = 0; k < size_; ++k) {
      if (send_bytes[k] > 0) {
        HVD_RETURN_IF_ERROR(
            Check(ncclSend(static_cast<const uint8_t*>(in) + soff,
                           static_cast<size_t>(send_bytes[k]), ncclInt8, k, comm_, stream_->get()),
                  "ncclSend"));
      }
      if (recv_bytes[k] > 0) {
        HVD_RETURN_IF_ERROR(
            Check(ncclRecv(static_cast<uint8_t*>(out) + roff, static_cast<size_t>(recv_bytes[k]),
                           ncclInt8, k, comm_, stream_->get()),
                  "ncclRecv"));
      }
      soff += send_bytes[k];
      roff += recv_bytes[k];
    }
    HVD_RETURN_IF_ERROR(Check(g.End(), "ncclGroupEnd"));
  }
  return Sync();
}

Status NcclComm::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                               DataType dt, ReduceOp op) {
  if (aborted_) return Sync();
  HVD_RETURN_IF_ERROR(CheckReducible(dt, "reducescatter"));
  if (AllEqual(counts)) {
    HVD_RETURN_IF_ERROR(Check(ncclReduceScatter(in, out, static_cast<size_t>(counts[0]), ToNccl(dt),
                                                ToNccl(op), comm_, stream_->get()),
                              "ncclReduceScatter"));
    return Sync();
  }
  // Uneven blocks: a reduce to each block's owner, grouped. recvbuff is
  // only written on the root, so `out` can be passed everywhere.
  const size_t esize = DataTypeSize(dt);
  {
    GroupGuard g;
    if (!g.started()) return Check(ncclInternalError, "ncclGroupStart");
    int64_t off = 0;
    for (int k = 0; k < size_; ++k) {
      const auto* src = static_cast<const uint8_t*>(in) + static_cast<size_t>(off) * esize;
      HVD_RETURN_IF_ERROR(Check(ncclReduce(src, out, static_cast<size_t>(counts[k]), ToNccl(dt),
                                           ToNccl(op), k, comm_, stream_->get()),
                                "ncclReduce"));
      off += counts[k];
    }
    HVD_RETURN_IF_ERROR(Check(g.End(), "ncclGroupEnd"));
  }
  return Sync();
}

Status NcclComm::Barrier() {
  if (aborted_) return Sync();
  // A one-element allreduce on the device: it returns only when every rank
  // has reached it, which is all a barrier needs.
  HVD_RETURN_IF_ERROR(barrier_buf_.Reserve(sizeof(int32_t)));
  HVD_CUDA_CHECK(cudaMemsetAsync(barrier_buf_.data(), 0, sizeof(int32_t), stream_->get()));
  return Allreduce({barrier_buf_.data(), 1, DataType::kInt32, ReduceOp::kSum});
}

}  // namespace hvd
