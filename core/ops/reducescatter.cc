// Reducescatter: reduce across ranks, rank r keeps its block of dimension 0
// (n / size rows, the first n % size ranks one more). Fused tensors travel
// as one reduce-scatter whose rank-k block holds rank k's rows of every
// tensor; each rank then copies its part of each tensor out.
#include "core/ops/op.h"

namespace hvd {
namespace {

// Rows of dimension 0 that rank k keeps.
int64_t RowsOf(int64_t dim0, int size, int k) {
  return dim0 / size + (k < dim0 % size ? 1 : 0);
}

struct Layout {
  int64_t row = 0;                 // elements per row
  std::vector<int64_t> count;      // elements rank k keeps
  std::vector<int64_t> offset;     // where rank k's rows start in the input
  std::vector<int64_t> out_shape;  // this rank's result shape
};

Layout LayoutOf(const TensorEntry& e, int size, int me) {
  Layout l;
  std::vector<int64_t> shape = e.request.shape;
  const int64_t dim0 = shape.empty() ? 1 : shape[0];
  l.row = dim0 == 0 ? 0 : e.num_elements / dim0;
  int64_t off = 0;
  for (int k = 0; k < size; ++k) {
    l.offset.push_back(off);
    l.count.push_back(RowsOf(dim0, size, k) * l.row);
    off += l.count.back();
  }
  if (shape.empty()) shape.push_back(1);
  shape[0] = RowsOf(dim0, size, me);
  l.out_shape = shape;
  return l;
}

}  // namespace

Status ExecuteReducescatter(ExecContext& ctx, const Response& r,
                            std::vector<TensorEntry*>& entries) {
  const int size = ctx.comm->size();
  const int me = ctx.comm->rank();
  const DataType dt = r.dtype;
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  const ReduceOp wire_op = r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op;
  const double post = r.postscale * (r.reduce_op == ReduceOp::kAverage ? 1.0 / size : 1.0);
  MemOps& mem = ctx.ops();

  std::vector<Layout> layouts;
  std::vector<int64_t> counts(static_cast<size_t>(size), 0);  // per rank, all tensors
  Status alloc_error;  // reported after the collective, which must run regardless
  std::vector<void*> outs;
  for (auto* e : entries) {
    layouts.push_back(LayoutOf(*e, size, me));
    const Layout& l = layouts.back();
    for (int k = 0; k < size; ++k) counts[k] += l.count[k];
    outs.push_back(
        e->AllocateResult(static_cast<size_t>(l.count[me] * esize), l.out_shape, &alloc_error));
  }

  // Device results have no host fallback; peers then fail by their GPU timeout.
  if (!alloc_error.ok() && entries[0]->request.device.kind == DeviceKind::kCUDA) return alloc_error;
  if (entries.size() == 1) {
    TensorEntry* e = entries[0];
    const void* in = e->input;
    if (r.prescale != 1.0) {
      void* scaled = nullptr;
      HVD_RETURN_IF_ERROR(mem.Fusion(e->bytes, &scaled));
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(scaled, in, e->num_elements, dt, r.prescale));
      in = scaled;
    }
    {
      ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
      HVD_RETURN_IF_ERROR(ctx.comm->Reducescatter(in, outs[0], counts, dt, wire_op));
    }
    HVD_RETURN_IF_ERROR(mem.ScaleCopy(outs[0], outs[0], counts[me], dt, post));
    return alloc_error;
  }

  int64_t total = 0;
  for (auto c : counts) total += c;
  void* fusion = nullptr;
  HVD_RETURN_IF_ERROR(mem.Fusion((total + counts[me]) * esize, &fusion));
  auto* send = static_cast<uint8_t*>(fusion);
  uint8_t* recv = send + total * esize;
  {
    ScopedActivity a(ctx.timeline, r, "MEMCPY_IN_FUSION_BUFFER");
    uint8_t* p = send;
    for (int k = 0; k < size; ++k) {
      for (size_t t = 0; t < entries.size(); ++t) {
        const Layout& l = layouts[t];
        const auto* src = static_cast<const uint8_t*>(entries[t]->input) + l.offset[k] * esize;
        HVD_RETURN_IF_ERROR(mem.ScaleCopy(p, src, l.count[k], dt, r.prescale));
        p += l.count[k] * esize;
      }
    }
  }
  {
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Reducescatter(send, recv, counts, dt, wire_op));
  }
  ScopedActivity a(ctx.timeline, r, "MEMCPY_OUT_FUSION_BUFFER");
  const uint8_t* p = recv;
  for (size_t t = 0; t < entries.size(); ++t) {
    const int64_t n = layouts[t].count[me];
    HVD_RETURN_IF_ERROR(mem.ScaleCopy(outs[t], p, n, dt, post));
    p += n * esize;
  }
  return alloc_error;
}

}  // namespace hvd
