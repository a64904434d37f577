// Allreduce: prescale -> sum/min/max/product across ranks -> postscale.
// One tensor runs in place in the caller's output; several are packed into
// the fusion buffer, reduced by one collective and copied back out.
#include <cstring>

#include "core/ops/op.h"
#include "core/reduce.h"

namespace hvd {

Status ExecuteAllreduce(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  const DataType dt = r.dtype;
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  const ReduceOp wire_op = r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op;
  const double post =
      r.postscale * (r.reduce_op == ReduceOp::kAverage ? 1.0 / ctx.comm->size() : 1.0);

  if (entries.size() == 1) {
    TensorEntry* e = entries[0];
    const int64_t n = r.sizes[0];
    void* buf;
    if (e) {
      buf = e->output;
      ScaleCopy(buf, e->input, n, dt, r.prescale);
    } else {  // joined: contribute zeros
      buf = ctx.fusion->Get(n * esize);
      ZeroBuffer(buf, n, dt);
    }
    {
      ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
      HVD_RETURN_IF_ERROR(ctx.comm->Allreduce(buf, n, dt, wire_op));
    }
    if (e) ScaleBuffer(buf, n, dt, post);
    return Status::OK();
  }

  int64_t total = 0;
  for (auto n : r.sizes) total += n;
  auto* base = static_cast<uint8_t*>(ctx.fusion->Get(total * esize));
  int64_t off = 0;
  {
    ScopedActivity a(ctx.timeline, r, "MEMCPY_IN_FUSION_BUFFER");
    for (size_t i = 0; i < entries.size(); ++i) {
      const int64_t n = r.sizes[i];
      if (entries[i]) {
        ScaleCopy(base + off * esize, entries[i]->input, n, dt, r.prescale);
      } else {
        ZeroBuffer(base + off * esize, n, dt);
      }
      off += n;
    }
  }
  {
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Allreduce(base, total, dt, wire_op));
  }
  ScopedActivity a(ctx.timeline, r, "MEMCPY_OUT_FUSION_BUFFER");
  off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t n = r.sizes[i];
    if (entries[i]) ScaleCopy(entries[i]->output, base + off * esize, n, dt, post);
    off += n;
  }
  return Status::OK();
}

}  // namespace hvd
