// Allreduce: prescale -> sum/min/max/product across ranks -> postscale.
// One path: ChooseStrategy picks, once per response, how the tensors reach
// the set's Comm, from the response and what the Comm the data plane built
// can do (core/dataplane/plan.h): alone (a set of one rank), regions (the
// transport reduces the tensors where they lie), gathered (the transport
// copies the tensors in and out itself, prescaled), direct (the caller's
// memory reduced where it lies: one tensor, or tensors back to back), staged
// (the fusion buffer packed and unpacked chunk by chunk beside the network)
// or packed (pack, one collective, unpack). Memory work goes through
// ctx.ops(), so the same code runs on host and CUDA memory.
#include <algorithm>
#include <optional>

#include "core/common/traffic.h"
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

// What every path of one allreduce needs to know.
struct Reduction {
  DataType dt;
  int64_t esize;
  ReduceOp wire_op;  // average: a sum, then scaled
  double post;       // postscale, times 1/size for average
};

// The backend call, as one timeline activity.
Status Collective(ExecContext& ctx, const Response& r, const Reduction& x, const void* in,
                  void* out, int64_t n) {
  ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
  return ctx.comm->Allreduce({in, out, n, x.dt, x.wire_op});
}

// The backend call, then the postscale. Where the Comm reduces in pieces
// and drains each (MPI: cache-sized inside a host; the hierarchy: its
// chunks, beside the cross-host step), the postscale is the drain: each
// piece is scaled right after its reduction, while it is still in cache,
// instead of in a second pass over the whole buffer (averaging gradients
// would otherwise read and write every byte once more).
Status ReduceAndScale(ExecContext& ctx, const Response& r, const Reduction& x, const void* in,
                      void* out, int64_t n) {
  MemOps& mem = ctx.ops();
  if (x.post == 1.0 || r.device.kind != DeviceKind::kCPU || !ctx.comm->caps().stages_per_piece) {
    HVD_RETURN_IF_ERROR(Collective(ctx, r, x, in, out, n));
    return mem.ScaleCopy(out, out, n, x.dt, x.post);
  }
  ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
  auto* base = static_cast<uint8_t*>(out);
  AllreduceOptions args(in, out, n, x.dt, x.wire_op);
  args.drain = [&](int64_t off, int64_t m) {
    return mem.ScaleCopy(base + off * x.esize, base + off * x.esize, m, x.dt, x.post);
  };
  return ctx.comm->Allreduce(args);
}

// One tensor: in place in the caller's output (or, for a joined rank,
// zeros in the fusion buffer).
Status RunSingle(ExecContext& ctx, const Response& r, const Reduction& x, TensorEntry* e) {
  MemOps& mem = ctx.ops();
  const int64_t n = r.sizes[0];
  if (e && r.prescale == 1.0 && e->input != e->output && r.device.kind == DeviceKind::kCPU) {
    // Out of place on the host: the backend reads the input directly
    // instead of a copy first (one pass over the data less).
    return ReduceAndScale(ctx, r, x, e->input, e->output, n);
  }
  void* buf;
  if (e) {
    buf = e->output;
    HVD_RETURN_IF_ERROR(mem.ScaleCopy(buf, e->input, n, x.dt, r.prescale));
  } else {  // joined: contribute zeros
    HVD_RETURN_IF_ERROR(mem.Fusion(n * x.esize, &buf));
    HVD_RETURN_IF_ERROR(mem.Zero(buf, n, x.dt));
  }
  if (!e) return Collective(ctx, r, x, buf, buf, n);
  return ReduceAndScale(ctx, r, x, buf, buf, n);
}

// Copies (and prescales) every input into the fusion buffer; zeros for
// joined ranks. Unscaled inputs are packed in one batch.
Status PackFusion(ExecContext& ctx, const Response& r, const Reduction& x,
                  const std::vector<TensorEntry*>& entries, uint8_t* base) {
  MemOps& mem = ctx.ops();
  ScopedActivity a(ctx.timeline, r, "MEMCPY_IN_FUSION_BUFFER");
  std::vector<MemOps::Region> copies;
  int64_t off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t n = r.sizes[i];
    uint8_t* dst = base + off * x.esize;
    if (!entries[i]) {
      HVD_RETURN_IF_ERROR(mem.Zero(dst, n, x.dt));
    } else if (r.prescale == 1.0) {
      copies.push_back({dst, entries[i]->input, n * x.esize});
    } else {
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(dst, entries[i]->input, n, x.dt, r.prescale));
    }
    off += n;
  }
  return mem.CopyRegions(copies);
}

// Copies (and postscales) the reduced fusion buffer into the outputs.
Status UnpackFusion(ExecContext& ctx, const Response& r, const Reduction& x,
                    const std::vector<TensorEntry*>& entries, uint8_t* base, int64_t total) {
  MemOps& mem = ctx.ops();
  ScopedActivity a(ctx.timeline, r, "MEMCPY_OUT_FUSION_BUFFER");
  // On a device, one scale kernel over the buffer and one batched copy
  // beat a launch per tensor; on the host, scaling while copying out saves
  // a pass over memory.
  const bool scale_in_place = x.post != 1.0 && ctx.mem != nullptr;
  if (scale_in_place) HVD_RETURN_IF_ERROR(mem.ScaleCopy(base, base, total, x.dt, x.post));
  std::vector<MemOps::Region> copies;
  int64_t off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t n = r.sizes[i];
    uint8_t* src = base + off * x.esize;
    off += n;
    if (!entries[i]) continue;
    if (x.post == 1.0 || scale_in_place) {
      copies.push_back({entries[i]->output, src, n * x.esize});
    } else {
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(entries[i]->output, src, n, x.dt, x.post));
    }
  }
  return mem.CopyRegions(copies);
}

// Where each tensor of a group lies in the group's elements: tensor i
// holds [starts[i], starts[i + 1]).
struct Spans {
  std::vector<int64_t> starts;
  explicit Spans(const std::vector<int64_t>& sizes) : starts(sizes.size() + 1, 0) {
    for (size_t i = 0; i < sizes.size(); ++i) starts[i + 1] = starts[i] + sizes[i];
  }
  // Calls fn(i, from, to) for the elements [from, to) that tensor i holds
  // within [off, off + n).
  template <typename Fn>
  Status Each(int64_t off, int64_t n, const Fn& fn) const {
    auto i = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), off) -
                                 starts.begin() - 1);
    for (; i + 1 < starts.size() && starts[i] < off + n; ++i) {
      const int64_t from = std::max(off, starts[i]), to = std::min(off + n, starts[i + 1]);
      if (to > from) HVD_RETURN_IF_ERROR(fn(i, from, to));
    }
    return Status::OK();
  }
};

// A group through a transport that moves the tensors itself (shared
// memory): each round gathers the tensors' next elements, prescaled, into
// the transport's memory and scatters the reduced ones, postscaled, back
// out. No fusion buffer and no scaling pass of its own: per reduced byte,
// two passes over memory fewer than packing and unpacking (four fewer
// where averaging a tensor alone).
Status RunGathered(ExecContext& ctx, const Response& r, const Reduction& x,
                   const std::vector<TensorEntry*>& group) {
  MemOps& mem = ctx.ops();
  int64_t total = 0;
  for (auto n : r.sizes) total += n;
  // Tensors back to back in memory (views of one buffer) are one span: a
  // copy per round instead of one per tensor.
  const bool adjacent = group.size() > 1 && Adjacent(group, r, x.esize);
  const std::vector<TensorEntry*> first(adjacent ? 1 : 0, group[0]);
  const std::vector<TensorEntry*>& entries = adjacent ? first : group;
  const Spans spans(adjacent ? std::vector<int64_t>{total} : r.sizes);
  auto gather = [&](int64_t off, int64_t n, void* dst) {
    auto* base = static_cast<uint8_t*>(dst);
    return spans.Each(off, n, [&](size_t i, int64_t from, int64_t to) {
      uint8_t* d = base + (from - off) * x.esize;
      if (!entries[i]) return mem.Zero(d, to - from, x.dt);  // joined: zeros
      const auto* src =
          static_cast<const uint8_t*>(entries[i]->input) + (from - spans.starts[i]) * x.esize;
      return mem.ScaleCopy(d, src, to - from, x.dt, r.prescale);
    });
  };
  auto scatter = [&](int64_t off, int64_t n, const void* src) {
    const auto* base = static_cast<const uint8_t*>(src);
    return spans.Each(off, n, [&](size_t i, int64_t from, int64_t to) {
      if (!entries[i]) return Status::OK();
      auto* d = static_cast<uint8_t*>(entries[i]->output) + (from - spans.starts[i]) * x.esize;
      return mem.ScaleCopy(d, base + (from - off) * x.esize, to - from, x.dt, x.post);
    });
  };
  AllreduceOptions args;
  args.count = total;
  args.dt = x.dt;
  args.op = x.wire_op;
  args.gather = gather;
  args.scatter = scatter;
  ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
  return ctx.comm->Allreduce(args);
}

// A fused group through a backend that overlaps its stages with the network
// (the hierarchy): each chunk of the fusion buffer is packed just before the
// backend reads it and unpacked as soon as it is final, so the copies hide
// behind the link. The timeline shows MEMCPY_IN_FUSION_BUFFER for the first
// chunk; the other copies run inside the backend's activity.
Status RunStaged(ExecContext& ctx, const Response& r, const Reduction& x,
                 const std::vector<TensorEntry*>& entries, uint8_t* base, int64_t total) {
  MemOps& mem = ctx.ops();
  const Spans spans(r.sizes);
  const auto& starts = spans.starts;
  std::optional<ScopedActivity> activity;
  activity.emplace(ctx.timeline, r, "MEMCPY_IN_FUSION_BUFFER");
  auto fill = [&](int64_t off, int64_t n) {
    std::vector<MemOps::Region> copies;
    HVD_RETURN_IF_ERROR(spans.Each(off, n, [&](size_t i, int64_t from, int64_t to) {
      uint8_t* dst = base + from * x.esize;
      if (!entries[i]) return mem.Zero(dst, to - from, x.dt);  // joined: zeros
      const auto* src =
          static_cast<const uint8_t*>(entries[i]->input) + (from - starts[i]) * x.esize;
      if (r.prescale != 1.0) return mem.ScaleCopy(dst, src, to - from, x.dt, r.prescale);
      copies.push_back({dst, src, (to - from) * x.esize});
      return Status::OK();
    }));
    HVD_RETURN_IF_ERROR(mem.CopyRegions(copies));
    if (off == 0) activity.emplace(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    return Status::OK();
  };
  auto drain = [&](int64_t off, int64_t n) {
    return spans.Each(off, n, [&](size_t i, int64_t from, int64_t to) {
      if (!entries[i]) return Status::OK();
      auto* dst = static_cast<uint8_t*>(entries[i]->output) + (from - starts[i]) * x.esize;
      return mem.ScaleCopy(dst, base + from * x.esize, to - from, x.dt, x.post);
    });
  };
  AllreduceOptions args(base, total, x.dt, x.wire_op);
  args.fill = fill;
  args.drain = drain;
  return ctx.comm->Allreduce(args);
}

// A set of one rank exchanges nothing: each output is its input, scaled.
// (NCCL and MPI would still copy or launch per call; frameworks run
// single-process jobs through the same code.)
Status RunAlone(ExecContext& ctx, const Response& r, const Reduction& x,
                const std::vector<TensorEntry*>& entries) {
  MemOps& mem = ctx.ops();
  const double f = r.prescale * x.post;
  std::vector<MemOps::Region> copies;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry* e = entries[i];
    if (!e || (e->input == e->output && f == 1.0)) continue;
    if (f != 1.0) {
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(e->output, e->input, r.sizes[i], x.dt, f));
    } else {
      copies.push_back({e->output, e->input, r.sizes[i] * x.esize});
    }
  }
  return copies.empty() ? Status::OK() : mem.CopyRegions(copies);
}

// A group through a transport that reduces the tensors where they lie
// (shared memory): it is handed where each tensor lies, and nothing is
// copied before or after. A joined rank's zeros, and an input
// that overlaps its output without being it, lie in the fusion buffer.
Status RunRegions(ExecContext& ctx, const Response& r, const Reduction& x,
                  const std::vector<TensorEntry*>& entries, int64_t total) {
  MemOps& mem = ctx.ops();
  uint8_t* scratch = nullptr;
  auto need_scratch = [&]() -> Status {
    if (!scratch) {
      void* f = nullptr;
      HVD_RETURN_IF_ERROR(mem.Fusion(total * x.esize, &f));
      scratch = static_cast<uint8_t*>(f);
    }
    return Status::OK();
  };
  std::vector<DirectRegion> regions;
  int64_t off = 0;
  for (size_t i = 0; i < entries.size(); off += r.sizes[i], ++i) {
    const int64_t n = r.sizes[i], bytes = n * x.esize;
    const TensorEntry* e = entries[i];
    auto addr = [](const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); };
    DirectRegion g{0, 0, n};
    if (!e) {  // joined: zeros in, the result to scratch
      HVD_RETURN_IF_ERROR(need_scratch());
      g.out = addr(scratch + off * x.esize);
    } else {
      const auto* in = static_cast<const uint8_t*>(e->input);
      auto* out = static_cast<uint8_t*>(e->output);
      if (in != out && in < out + bytes && out < in + bytes) {
        HVD_RETURN_IF_ERROR(need_scratch());
        HVD_RETURN_IF_ERROR(mem.ScaleCopy(scratch + off * x.esize, in, n, x.dt, 1.0));
        in = scratch + off * x.esize;
      }
      g.in = addr(in);
      g.out = addr(out);
    }
    DirectRegion* last = regions.empty() ? nullptr : &regions.back();
    if (last && g.in && last->in && last->in + static_cast<uint64_t>(last->n * x.esize) == g.in &&
        last->out + static_cast<uint64_t>(last->n * x.esize) == g.out) {
      last->n += n;  // back to back: one region
    } else if (n > 0) {
      regions.push_back(g);
    }
  }
  AllreduceOptions o;
  o.count = total;
  o.dt = x.dt;
  o.op = x.wire_op;
  o.regions = &regions;
  o.post = x.post;
  ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
  return ctx.comm->Allreduce(o);
}

// How a response's tensors reach the Comm (see the top of this file).
enum class Strategy { kAlone, kRegions, kGathered, kDirect, kStaged, kPacked };

// Tensors back to back whose input and output regions are the same or do
// not overlap: the collective can read and write them where they lie.
bool DirectSpan(const Response& r, const Reduction& x, const std::vector<TensorEntry*>& entries,
                int64_t total) {
  if (r.prescale != 1.0 || r.device.kind != DeviceKind::kCPU || !Adjacent(entries, r, x.esize)) {
    return false;
  }
  const auto* in = static_cast<const uint8_t*>(entries[0]->input);
  const auto* out = static_cast<const uint8_t*>(entries[0]->output);
  const int64_t bytes = total * x.esize;
  return in == out || out + bytes <= in || in + bytes <= out;
}

Strategy ChooseStrategy(const ExecContext& ctx, const Response& r, const Reduction& x,
                        const std::vector<TensorEntry*>& entries, int64_t total) {
  const bool host = r.device.kind == DeviceKind::kCPU;
  if (ctx.comm->size() == 1) return Strategy::kAlone;
  const CommCaps caps = ctx.comm->caps();
  // Decided by what every rank knows alike (the response, the Comm), never
  // by where this rank's tensors lie: all ranks must take the same path.
  if (host && r.prescale == 1.0 && caps.direct_min_bytes >= 0 &&
      total * x.esize >= caps.direct_min_bytes) {
    return Strategy::kRegions;
  }
  if (host && caps.gathers) return Strategy::kGathered;
  if (entries.size() == 1 || DirectSpan(r, x, entries, total)) return Strategy::kDirect;
  if (host && caps.overlaps_stages) return Strategy::kStaged;
  return Strategy::kPacked;
}

// Strategy::kDirect over tensors back to back (DirectSpan).
Status RunSpan(ExecContext& ctx, const Response& r, const Reduction& x,
               const std::vector<TensorEntry*>& entries, int64_t total) {
  return ReduceAndScale(ctx, r, x, entries[0]->input, entries[0]->output, total);
}

// Strategy::kStaged and kPacked: through the fusion buffer.
Status RunFused(ExecContext& ctx, const Response& r, const Reduction& x,
                const std::vector<TensorEntry*>& entries, int64_t total, bool staged) {
  void* fusion = nullptr;
  HVD_RETURN_IF_ERROR(ctx.ops().Fusion(total * x.esize, &fusion));
  auto* base = static_cast<uint8_t*>(fusion);
  if (staged) return RunStaged(ctx, r, x, entries, base, total);
  HVD_RETURN_IF_ERROR(PackFusion(ctx, r, x, entries, base));
  HVD_RETURN_IF_ERROR(Collective(ctx, r, x, base, base, total));
  return UnpackFusion(ctx, r, x, entries, base, total);
}

}  // namespace

Status ExecuteAllreduce(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  Reduction x;
  x.dt = r.dtype;
  x.esize = static_cast<int64_t>(DataTypeSize(x.dt));
  x.wire_op = r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op;
  x.post = r.postscale * (r.reduce_op == ReduceOp::kAverage ? 1.0 / ctx.comm->size() : 1.0);
  int64_t total = 0;
  for (auto n : r.sizes) total += n;
  if (r.device.kind == DeviceKind::kCPU) CountAllreduced(total * x.esize);
  switch (ChooseStrategy(ctx, r, x, entries, total)) {
    case Strategy::kAlone:
      return RunAlone(ctx, r, x, entries);
    case Strategy::kRegions:
      return RunRegions(ctx, r, x, entries, total);
    case Strategy::kGathered:
      return RunGathered(ctx, r, x, entries);
    case Strategy::kDirect:
      return entries.size() == 1 ? RunSingle(ctx, r, x, entries[0])
                                 : RunSpan(ctx, r, x, entries, total);
    case Strategy::kStaged:
      return RunFused(ctx, r, x, entries, total, /*staged=*/true);
    case Strategy::kPacked:
      break;
  }
  return RunFused(ctx, r, x, entries, total, /*staged=*/false);
}

}  // namespace hvd
