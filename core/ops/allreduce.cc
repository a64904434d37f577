// Allreduce: prescale -> sum/min/max/product across ranks -> postscale.
// One tensor runs in place in the caller's output; several are packed into
// the fusion buffer, reduced by one collective and copied back out, unless
// they are adjacent in memory (then the caller's memory is reduced directly). Memory
// work goes through ctx.ops(), so the same code runs on host and CUDA memory.
#include "core/ops/op.h"

namespace hvd {

namespace {

// True when the tensors lie back to back in memory, inputs and outputs alike
// (gradients that are views of one flat buffer, as with DDP's
// gradient_as_bucket_view): the fused collective can then run on the
// caller's memory with no fusion-buffer copies.
bool Adjacent(const std::vector<TensorEntry*>& entries, const Response& r, int64_t esize) {
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    const TensorEntry* a = entries[i];
    const TensorEntry* b = entries[i + 1];
    if (!a || !b) return false;
    const int64_t bytes = r.sizes[i] * esize;
    if (static_cast<const uint8_t*>(a->input) + bytes != b->input ||
        static_cast<uint8_t*>(a->output) + bytes != b->output) {
      return false;
    }
  }
  return !entries.empty() && entries[0] != nullptr;
}

}  // namespace

Status ExecuteAllreduce(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  const DataType dt = r.dtype;
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  const ReduceOp wire_op = r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op;
  const double post =
      r.postscale * (r.reduce_op == ReduceOp::kAverage ? 1.0 / ctx.comm->size() : 1.0);
  MemOps& mem = ctx.ops();

  if (entries.size() == 1) {
    TensorEntry* e = entries[0];
    const int64_t n = r.sizes[0];
    void* buf;
    if (e && r.prescale == 1.0 && e->input != e->output && r.device.kind == DeviceKind::kCPU) {
      // Out of place on the host: the backend reads the input directly
      // instead of a copy first (one pass over the data less).
      {
        ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
        HVD_RETURN_IF_ERROR(ctx.comm->AllreduceFrom(e->input, e->output, n, dt, wire_op));
      }
      return mem.ScaleCopy(e->output, e->output, n, dt, post);
    }
    if (e) {
      buf = e->output;
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(buf, e->input, n, dt, r.prescale));
    } else {  // joined: contribute zeros
      HVD_RETURN_IF_ERROR(mem.Fusion(n * esize, &buf));
      HVD_RETURN_IF_ERROR(mem.Zero(buf, n, dt));
    }
    {
      ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
      HVD_RETURN_IF_ERROR(ctx.comm->Allreduce(buf, n, dt, wire_op));
    }
    if (e) HVD_RETURN_IF_ERROR(mem.ScaleCopy(buf, buf, n, dt, post));
    return Status::OK();
  }

  int64_t total = 0;
  for (auto n : r.sizes) total += n;
  if (r.prescale == 1.0 && r.device.kind == DeviceKind::kCPU && Adjacent(entries, r, esize)) {
    const auto* in = static_cast<const uint8_t*>(entries[0]->input);
    auto* out = static_cast<uint8_t*>(entries[0]->output);
    const int64_t bytes = total * esize;
    const bool disjoint = out + bytes <= in || in + bytes <= out;
    if (in == out || disjoint) {
      {
        ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
        HVD_RETURN_IF_ERROR(in == out ? ctx.comm->Allreduce(out, total, dt, wire_op)
                                      : ctx.comm->AllreduceFrom(in, out, total, dt, wire_op));
      }
      return mem.ScaleCopy(out, out, total, dt, post);
    }
  }
  void* fusion = nullptr;
  HVD_RETURN_IF_ERROR(mem.Fusion(total * esize, &fusion));
  auto* base = static_cast<uint8_t*>(fusion);
  {
    ScopedActivity a(ctx.timeline, r, "MEMCPY_IN_FUSION_BUFFER");
    // Unscaled inputs are packed in one batch; scaled ones need the kernel.
    std::vector<MemOps::Region> copies;
    int64_t off = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const int64_t n = r.sizes[i];
      uint8_t* dst = base + off * esize;
      if (!entries[i]) {
        HVD_RETURN_IF_ERROR(mem.Zero(dst, n, dt));
      } else if (r.prescale == 1.0) {
        copies.push_back({dst, entries[i]->input, n * esize});
      } else {
        HVD_RETURN_IF_ERROR(mem.ScaleCopy(dst, entries[i]->input, n, dt, r.prescale));
      }
      off += n;
    }
    HVD_RETURN_IF_ERROR(mem.CopyRegions(copies));
  }
  {
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Allreduce(base, total, dt, wire_op));
  }
  ScopedActivity a(ctx.timeline, r, "MEMCPY_OUT_FUSION_BUFFER");
  // On a device, one scale kernel over the buffer and one batched copy
  // beat a launch per tensor; on the host, scaling while copying out saves
  // a pass over memory.
  const bool scale_in_place = post != 1.0 && ctx.mem != nullptr;
  if (scale_in_place) HVD_RETURN_IF_ERROR(mem.ScaleCopy(base, base, total, dt, post));
  std::vector<MemOps::Region> copies;
  int64_t off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t n = r.sizes[i];
    uint8_t* src = base + off * esize;
    off += n;
    if (!entries[i]) continue;
    if (post == 1.0 || scale_in_place) {
      copies.push_back({entries[i]->output, src, n * esize});
    } else {
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(entries[i]->output, src, n, dt, post));
    }
  }
  return mem.CopyRegions(copies);
}

}  // namespace hvd
