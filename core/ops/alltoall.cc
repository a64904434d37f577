// Alltoall: rank r sends splits[d] rows to each rank d and receives, in rank
// order, what every rank sent it. The response carries the full split
// matrix so every rank knows how much it receives before the exchange.
#include "core/ops/op.h"

namespace hvd {

Status ExecuteAlltoall(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  const int size = ctx.comm->size();
  const int me = ctx.comm->rank();
  const int64_t row_bytes = r.sizes[0] * static_cast<int64_t>(DataTypeSize(r.dtype));
  auto rows = [&](int from, int to) { return r.sizes[1 + static_cast<size_t>(from) * size + to]; };

  TensorEntry* e = entries[0];
  std::vector<int64_t> send(static_cast<size_t>(size)), recv(static_cast<size_t>(size));
  int64_t recv_rows = 0;
  std::vector<int32_t> recv_splits(static_cast<size_t>(size));
  for (int k = 0; k < size; ++k) {
    send[k] = rows(me, k) * row_bytes;
    recv[k] = rows(k, me) * row_bytes;
    recv_splits[k] = static_cast<int32_t>(rows(k, me));
    recv_rows += rows(k, me);
  }
  std::vector<int64_t> shape = e->request.shape;
  shape[0] = recv_rows;
  Status alloc_error;  // reported after the exchange, which must run regardless
  void* out = e->AllocateResult(static_cast<size_t>(recv_rows * row_bytes), shape, &alloc_error);
  e->handle->result().recv_splits = std::move(recv_splits);
  // Device results have no host fallback; peers then fail by their GPU timeout.
  if (!alloc_error.ok() && e->request.device.kind == DeviceKind::kCUDA) return alloc_error;
  ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
  HVD_RETURN_IF_ERROR(ctx.comm->Alltoallv(e->input, send, out, recv));
  return alloc_error;
}

}  // namespace hvd
