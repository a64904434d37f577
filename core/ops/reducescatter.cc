// Reducescatter: reduce across ranks, rank r keeps its block of dimension 0
// (n / size rows, the first n % size ranks one more).
#include "core/ops/op.h"

namespace hvd {

Status ExecuteReducescatter(ExecContext& ctx, const Response& r,
                            std::vector<TensorEntry*>& entries) {
  const int size = ctx.comm->size();
  const int me = ctx.comm->rank();
  const DataType dt = r.dtype;
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  const ReduceOp wire_op = r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op;
  const double post = r.postscale * (r.reduce_op == ReduceOp::kAverage ? 1.0 / size : 1.0);

  TensorEntry* e = entries[0];
  std::vector<int64_t> shape = e->request.shape;
  const int64_t dim0 = shape.empty() ? 1 : shape[0];
  const int64_t row = dim0 == 0 ? 0 : e->num_elements / dim0;
  std::vector<int64_t> counts(static_cast<size_t>(size));
  for (int k = 0; k < size; ++k) counts[k] = (dim0 / size + (k < dim0 % size ? 1 : 0)) * row;
  if (shape.empty()) shape.push_back(1);
  shape[0] = dim0 / size + (me < dim0 % size ? 1 : 0);

  Status alloc_error;  // reported after the collective, which must run regardless
  void* out = e->AllocateResult(static_cast<size_t>(counts[me] * esize), shape, &alloc_error);
  const void* in = e->input;
  if (r.prescale != 1.0) {
    void* scaled = nullptr;
    HVD_RETURN_IF_ERROR(ctx.ops().Fusion(e->bytes, &scaled));
    HVD_RETURN_IF_ERROR(ctx.ops().ScaleCopy(scaled, in, e->num_elements, dt, r.prescale));
    in = scaled;
  }
  {
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Reducescatter(in, out, counts, dt, wire_op));
  }
  HVD_RETURN_IF_ERROR(ctx.ops().ScaleCopy(out, out, counts[me], dt, post));
  return alloc_error;
}

}  // namespace hvd
