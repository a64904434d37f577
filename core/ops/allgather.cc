// Allgather: concatenate every rank's tensor along dimension 0 (sizes may
// differ per rank). Fused tensors travel as one allgatherv whose rank blocks
// hold that rank's rows of every tensor, then are copied out per tensor.
#include "core/ops/op.h"

namespace hvd {
namespace {

std::vector<int64_t> OutputShape(const TensorEntry& e, int64_t total_rows) {
  std::vector<int64_t> shape = e.request.shape;
  if (shape.empty()) shape.push_back(1);
  shape[0] = total_rows;
  return shape;
}

}  // namespace

Status ExecuteAllgather(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  const int size = ctx.comm->size();
  const int64_t esize = static_cast<int64_t>(DataTypeSize(r.dtype));
  const size_t stride = 1 + static_cast<size_t>(size);
  const size_t nt = entries.size();

  // rows[t][k]: rows of tensor t from rank k; row_bytes[t].
  std::vector<int64_t> row_bytes(nt);
  std::vector<int64_t> total_rows(nt, 0);
  std::vector<int64_t> bytes_per_rank(static_cast<size_t>(size), 0);
  for (size_t t = 0; t < nt; ++t) {
    row_bytes[t] = r.sizes[t * stride] * esize;
    for (int k = 0; k < size; ++k) {
      int64_t rows = r.sizes[t * stride + 1 + k];
      total_rows[t] += rows;
      bytes_per_rank[k] += rows * row_bytes[t];
    }
  }
  std::vector<uint8_t*> outs(nt);
  Status alloc_error;  // reported after the collective, which must run regardless
  for (size_t t = 0; t < nt; ++t) {
    outs[t] = static_cast<uint8_t*>(
        entries[t]->AllocateResult(static_cast<size_t>(total_rows[t] * row_bytes[t]),
                                   OutputShape(*entries[t], total_rows[t]), &alloc_error));
  }
  // Device results have no host fallback; peers then fail by their GPU timeout.
  if (!alloc_error.ok() && entries[0]->request.device.kind == DeviceKind::kCUDA) return alloc_error;
  if (nt == 1) {
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Allgatherv(entries[0]->input, outs[0], bytes_per_rank));
    return alloc_error;
  }

  int64_t recv_total = 0;
  for (auto b : bytes_per_rank) recv_total += b;
  const int64_t mine = bytes_per_rank[ctx.comm->rank()];
  MemOps& mem = ctx.ops();
  void* fusion = nullptr;
  HVD_RETURN_IF_ERROR(mem.Fusion(mine + recv_total, &fusion));
  auto* send = static_cast<uint8_t*>(fusion);
  uint8_t* recv = send + mine;
  int64_t off = 0;
  {
    ScopedActivity a(ctx.timeline, r, "MEMCPY_IN_FUSION_BUFFER");
    std::vector<MemOps::Region> copies;
    for (size_t t = 0; t < nt; ++t) {
      copies.push_back({send + off, entries[t]->input, entries[t]->bytes});
      off += entries[t]->bytes;
    }
    HVD_RETURN_IF_ERROR(mem.CopyRegions(copies));
  }
  {
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Allgatherv(send, recv, bytes_per_rank));
  }
  ScopedActivity a(ctx.timeline, r, "MEMCPY_OUT_FUSION_BUFFER");
  // Rank blocks -> per-tensor outputs, in rank order.
  std::vector<int64_t> out_off(nt, 0);
  const uint8_t* p = recv;
  std::vector<MemOps::Region> copies;
  for (int k = 0; k < size; ++k) {
    for (size_t t = 0; t < nt; ++t) {
      const int64_t b = r.sizes[t * stride + 1 + k] * row_bytes[t];
      copies.push_back({outs[t] + out_off[t], p, b});
      out_off[t] += b;
      p += b;
    }
  }
  HVD_RETURN_IF_ERROR(mem.CopyRegions(copies));
  return alloc_error;
}

}  // namespace hvd
