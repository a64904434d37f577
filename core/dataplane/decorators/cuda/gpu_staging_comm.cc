#include "core/dataplane/decorators/cuda/gpu_staging_comm.h"

namespace hvd {
namespace {

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

}  // namespace

Status GpuStagingComm::Reserve(PinnedBuffer* b, int64_t bytes) {
  // Growing frees the old buffer, which a queued host-to-device copy may
  // still be reading: drain the stream first.
  if (bytes > b->capacity()) HVD_RETURN_IF_ERROR(stream_->Wait(0));
  return b->Reserve(bytes);
}

Status GpuStagingComm::ToHost(PinnedBuffer* dst, const void* src, int64_t bytes) {
  HVD_RETURN_IF_ERROR(Reserve(dst, bytes));
  if (bytes > 0) {
    // cudaMemcpyDefault: managed and host-registered memory work too.
    HVD_CUDA_CHECK(cudaMemcpyAsync(dst->data(), src, static_cast<size_t>(bytes), cudaMemcpyDefault,
                                   stream_->get()));
  }
  return stream_->Wait(0);
}

Status GpuStagingComm::ToDevice(void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0) return Status::OK();
  HVD_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream_->get()));
  return Status::OK();
}

Status GpuStagingComm::DoAllreduce(const AllreduceOptions& a) {
  const int64_t bytes = a.count * static_cast<int64_t>(DataTypeSize(a.dt));
  HVD_RETURN_IF_ERROR(ToHost(&in_, a.in, bytes));
  HVD_RETURN_IF_ERROR(host_->Allreduce({in_.data(), a.count, a.dt, a.op}));
  return ToDevice(a.out, in_.data(), bytes);
}

Status GpuStagingComm::Allgatherv(const void* in, void* out, const std::vector<int64_t>& per_rank) {
  HVD_RETURN_IF_ERROR(ToHost(&in_, in, per_rank[static_cast<size_t>(rank())]));
  const int64_t total = Sum(per_rank);
  HVD_RETURN_IF_ERROR(Reserve(&out_, total));
  HVD_RETURN_IF_ERROR(host_->Allgatherv(in_.data(), out_.data(), per_rank));
  return ToDevice(out, out_.data(), total);
}

Status GpuStagingComm::Broadcast(void* buf, int64_t bytes, int root) {
  if (rank() == root) {
    HVD_RETURN_IF_ERROR(ToHost(&in_, buf, bytes));
  } else {
    HVD_RETURN_IF_ERROR(Reserve(&in_, bytes));
  }
  HVD_RETURN_IF_ERROR(host_->Broadcast(in_.data(), bytes, root));
  return rank() == root ? Status::OK() : ToDevice(buf, in_.data(), bytes);
}

Status GpuStagingComm::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                 const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(ToHost(&in_, in, Sum(send_bytes)));
  const int64_t total = Sum(recv_bytes);
  HVD_RETURN_IF_ERROR(Reserve(&out_, total));
  HVD_RETURN_IF_ERROR(host_->Alltoallv(in_.data(), send_bytes, out_.data(), recv_bytes));
  return ToDevice(out, out_.data(), total);
}

Status GpuStagingComm::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                                     DataType dt, ReduceOp op) {
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  HVD_RETURN_IF_ERROR(ToHost(&in_, in, Sum(counts) * esize));
  const int64_t mine = counts[static_cast<size_t>(rank())] * esize;
  HVD_RETURN_IF_ERROR(Reserve(&out_, mine));
  HVD_RETURN_IF_ERROR(host_->Reducescatter(in_.data(), out_.data(), counts, dt, op));
  return ToDevice(out, out_.data(), mine);
}

}  // namespace hvd
