// Adasum allreduce (HVD_OP_ADASUM): adaptive summation of gradients, after
// Maleki et al., "Adasum: Adaptive Summation of Gradients for Deep Learning
// Optimization" (2020), as Horovod implements it for CPU tensors, extended
// to any number of ranks.
//
// Two gradients a and b combine as
//   adasum(a, b) = (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b,
// so orthogonal gradients add and equal ones average. n = 2^k ranks combine
// as a binary tree: ranks r and r ^ 1 first, then pairs of pairs, and so on.
// The tree runs as recursive vector halving, distance doubling: at the level
// of distance d, rank r and its partner r ^ d hold the same slice of their
// groups' partial results; each keeps one half of the slice and receives the
// partner's version of it. The dot product and both squared norms the
// combination needs are sums over the 2d ranks holding slices of the two
// vectors: a butterfly of small exchanges within that group, which leaves
// the same bits on every member. After k levels each rank holds 1/n of the
// result, and the halving is undone in reverse to give everyone all of it.
//
// Other n (Horovod refuses them): with p the largest power of two <= n,
// ranks p..n-1 first send their vector to rank r - p, which combines the
// two and then stands for 2 ranks; the p ranks run the tree above, and rank
// r - p sends the result back to rank r. The tree's groups then stand for
// unequal numbers of ranks, so a group A standing for wa ranks and B for wb
// (W = wa + wb) combine with weights:
//   (1 - (wa/W) a.b/|a|^2) a + (1 - (wb/W) a.b/|b|^2) b.
// Parallel vectors (b = c a) give the weighted mean (wa a + wb b) / W, so
// parallel gradients on all n ranks give their mean, as at n = 2^k; equal
// vectors give themselves and orthogonal ones add. With wa == wb this is the
// formula above, computed as it (so n = 2^k gives the same bits as always).
// The weights follow from n alone, so every rank computes the same ones.
// The fold and the return pair only some ranks, so they rely on the CPU
// backends' point-to-point SendRecv (MPI and Gloo), not the default's
// Alltoallv, in which every rank must take part.
//
// Every tensor of a fused response is combined with its own dot product and
// norms, so fusion never changes results. Work is done in double (float64)
// or float (the other types; 16-bit floats are widened once and rounded
// once). Joined ranks contribute zeros, which adasum(a, 0) = a ignores.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "core/common/half.h"
#include "core/ops/op.h"

namespace hvd {

namespace {

// [lo, hi): elements of the packed buffer, in the coordinates of the whole.
struct Range {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
};

// Sums `s` over the 2d ranks that share this rank's bits above distance d:
// exchanges with r ^ 1, r ^ 2, ..., r ^ d, adding the partner's sums.
// Addition is commutative, so both sides of each exchange get the same
// bits, and so does the whole group.
Status GroupSum(Comm* comm, int d, std::vector<double>* s) {
  std::vector<double> theirs(s->size());
  const int64_t bytes = static_cast<int64_t>(s->size() * sizeof(double));
  for (int step = 1; step <= d; step <<= 1) {
    HVD_RETURN_IF_ERROR(
        comm->SendRecv(s->data(), bytes, theirs.data(), bytes, comm->rank() ^ step));
    for (size_t i = 0; i < s->size(); ++i) (*s)[i] += theirs[i];
  }
  return Status::OK();
}

// The largest power of two <= n (n >= 1).
int FloorPowerOfTwo(int n) {
  int p = 1;
  while (p <= n / 2) p <<= 1;
  return p;
}

// How many ranks the `d` tree ranks from `lo` stand for: each of the first
// `extra` tree ranks also stands for the rank it took the vector of.
int Weight(int lo, int d, int extra) {
  return d + std::clamp(extra - lo, 0, d);
}

// The coefficient of a vector with squared norm `norm` whose group stands
// for `w` of the `total` ranks of the two groups.
double Coefficient(double dot, double norm, int w, int total) {
  // Below this a squared norm counts as zero: the vector then keeps
  // coefficient 1 (Horovod's threshold).
  static const double kTiny = std::sqrt(DBL_MIN);
  if (!(norm >= kTiny)) return 1.0;                   // NaN too, as before
  if (2 * w == total) return 1.0 - dot / (2 * norm);  // equal groups: Horovod's formula
  return 1.0 - (static_cast<double>(w) / total) * dot / norm;
}

template <typename T>
class Adasum {
 public:
  Adasum(Comm* comm, const std::vector<int64_t>& sizes, T* data)
      : comm_(comm), data_(data), starts_(sizes.size() + 1, 0), scratch_(Scratch()) {
    for (size_t t = 0; t < sizes.size(); ++t) starts_[t + 1] = starts_[t] + sizes[t];
    tree_ = FloorPowerOfTwo(comm_->size());
    extra_ = comm_->size() - tree_;
    // Received halves: at most half the buffer (rounded up), or all of it
    // on a rank that takes another's vector; kept between calls so a
    // training loop does not allocate (and fault in) it per step.
    const int64_t total = starts_.back();
    const size_t need = static_cast<size_t>(comm_->rank() < extra_ ? total : (total + 1) / 2);
    if (scratch_.size() < need) scratch_.resize(need);
  }

  Status Run() {
    const int r = comm_->rank();
    const Range all{0, starts_.back()};
    if (r >= tree_) {  // hand the vector to rank r - tree_, then take the result
      HVD_RETURN_IF_ERROR(comm_->SendRecv(data_, Bytes(all), data_, 0, r - tree_));
      return comm_->SendRecv(data_, 0, data_, Bytes(all), r - tree_);
    }
    if (r < extra_) {
      HVD_RETURN_IF_ERROR(comm_->SendRecv(data_, 0, scratch_.data(), Bytes(all), r + tree_));
      HVD_RETURN_IF_ERROR(Combine(all, true, 0, 1, 1));
    }
    HVD_RETURN_IF_ERROR(Tree());
    if (r < extra_) return comm_->SendRecv(data_, Bytes(all), data_, 0, r + tree_);
    return Status::OK();
  }

 private:
  static int64_t Bytes(const Range& r) { return r.size() * static_cast<int64_t>(sizeof(T)); }

  // The halving/doubling over ranks [0, tree_).
  Status Tree() {
    const int r = comm_->rank();
    std::vector<Range> parents;  // the slice held before each level
    Range mine{0, starts_.back()};
    for (int d = 1; d < tree_; d <<= 1) {
      const int peer = r ^ d;
      const bool lower = (r & d) == 0;
      const int64_t mid = mine.lo + mine.size() / 2;
      const Range keep = lower ? Range{mine.lo, mid} : Range{mid, mine.hi};
      const Range give = lower ? Range{mid, mine.hi} : Range{mine.lo, mid};
      // The partner's version of `keep` goes to scratch_[0, keep.size()).
      HVD_RETURN_IF_ERROR(
          comm_->SendRecv(data_ + give.lo, Bytes(give), scratch_.data(), Bytes(keep), peer));
      const int base = r & ~(2 * d - 1);  // the lower group's first rank
      HVD_RETURN_IF_ERROR(
          Combine(keep, lower, d, Weight(base, d, extra_), Weight(base + d, d, extra_)));
      parents.push_back(mine);
      mine = keep;
    }
    for (int d = tree_ >> 1; d >= 1; d >>= 1) {
      const Range parent = parents.back();
      parents.pop_back();
      const bool lower = (r & d) == 0;
      const Range other = lower ? Range{mine.hi, parent.hi} : Range{parent.lo, mine.lo};
      HVD_RETURN_IF_ERROR(
          comm_->SendRecv(data_ + mine.lo, Bytes(mine), data_ + other.lo, Bytes(other), r ^ d));
      mine = parent;
    }
    return Status::OK();
  }

  // Combines data_[keep] (this rank's group's vector) with the partner
  // group's version of it in scratch_, tensor by tensor; the lower group
  // stands for w_lower ranks, the upper for w_upper. The sums are over the
  // 2d ranks of the two groups (d = 0: this rank alone holds both).
  Status Combine(const Range& keep, bool lower, int d, int w_lower, int w_upper) {
    const size_t tensors = starts_.size() - 1;
    std::vector<double> sums(3 * tensors, 0.0);
    for (size_t t = 0; t < tensors; ++t) {
      const int64_t lo = std::max(keep.lo, starts_[t]);
      const int64_t hi = std::min(keep.hi, starts_[t + 1]);
      double dot = 0, mine = 0, theirs = 0;
      for (int64_t i = lo; i < hi; ++i) {
        const double a = static_cast<double>(data_[i]);
        const double b = static_cast<double>(scratch_[static_cast<size_t>(i - keep.lo)]);
        dot += a * b;
        mine += a * a;
        theirs += b * b;
      }
      sums[3 * t] = dot;
      sums[3 * t + 1] = lower ? mine : theirs;
      sums[3 * t + 2] = lower ? theirs : mine;
    }
    HVD_RETURN_IF_ERROR(GroupSum(comm_, d, &sums));
    const int total = w_lower + w_upper;
    for (size_t t = 0; t < tensors; ++t) {
      const double dot = sums[3 * t];
      const double lower_coeff = Coefficient(dot, sums[3 * t + 1], w_lower, total);
      const double upper_coeff = Coefficient(dot, sums[3 * t + 2], w_upper, total);
      const double mine = lower ? lower_coeff : upper_coeff;
      const double theirs = lower ? upper_coeff : lower_coeff;
      const int64_t lo = std::max(keep.lo, starts_[t]);
      const int64_t hi = std::min(keep.hi, starts_[t + 1]);
      for (int64_t i = lo; i < hi; ++i) {
        const double b = static_cast<double>(scratch_[static_cast<size_t>(i - keep.lo)]);
        data_[i] = static_cast<T>(mine * static_cast<double>(data_[i]) + theirs * b);
      }
    }
    return Status::OK();
  }

  // Only the background thread executes responses.
  static std::vector<T>& Scratch() {
    static thread_local std::vector<T> scratch;
    return scratch;
  }

  Comm* comm_;
  T* data_;
  std::vector<int64_t> starts_;  // tensor t is [starts_[t], starts_[t + 1])
  std::vector<T>& scratch_;
  int tree_ = 1;   // ranks [0, tree_) run the tree: a power of two
  int extra_ = 0;  // ranks [tree_, tree_ + extra_) hand their vectors over
};

// 16-bit floats: widened to float for the whole reduction, rounded once.
Status Adasum16(Comm* comm, const std::vector<int64_t>& sizes, DataType dt, void* buf,
                int64_t total) {
  auto* h = static_cast<uint16_t*>(buf);
  const bool bf16 = dt == DataType::kBFloat16;
  std::vector<float> wide(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) wide[i] = bf16 ? BFloat16ToFloat(h[i]) : Float16ToFloat(h[i]);
  HVD_RETURN_IF_ERROR(Adasum<float>(comm, sizes, wide.data()).Run());
  for (int64_t i = 0; i < total; ++i)
    h[i] = bf16 ? FloatToBFloat16(wide[i]) : FloatToFloat16(wide[i]);
  return Status::OK();
}

}  // namespace

Status ExecuteAdasum(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  if (r.device.kind != DeviceKind::kCPU) {
    return Status::Unsupported("adasum runs on CPU tensors only");
  }
  const DataType dt = r.dtype;
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  int64_t total = 0;
  for (auto s : r.sizes) total += s;
  MemOps& mem = ctx.ops();

  // One tensor works in its output; several in the fusion buffer.
  void* buf = nullptr;
  if (entries.size() == 1 && entries[0]) {
    buf = entries[0]->output;
  } else {
    HVD_RETURN_IF_ERROR(mem.Fusion(total * esize, &buf));
  }
  const bool fused = entries.size() > 1;
  {
    // Timeline activities only where Horovod has them: around fusion copies.
    ScopedActivity a(fused ? ctx.timeline : nullptr, r, "MEMCPY_IN_FUSION_BUFFER");
    int64_t off = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      uint8_t* dst = static_cast<uint8_t*>(buf) + off * esize;
      if (entries[i]) {
        HVD_RETURN_IF_ERROR(mem.ScaleCopy(dst, entries[i]->input, r.sizes[i], dt, r.prescale));
      } else {
        HVD_RETURN_IF_ERROR(mem.Zero(dst, r.sizes[i], dt));
      }
      off += r.sizes[i];
    }
  }
  {
    ScopedActivity a(ctx.timeline, r, std::string(ctx.comm->backend_name()) + "_ADASUM_ALLREDUCE");
    Status s;
    switch (dt) {
      case DataType::kFloat32:
        s = Adasum<float>(ctx.comm, r.sizes, static_cast<float*>(buf)).Run();
        break;
      case DataType::kFloat64:
        s = Adasum<double>(ctx.comm, r.sizes, static_cast<double*>(buf)).Run();
        break;
      case DataType::kFloat16:
      case DataType::kBFloat16:
        s = Adasum16(ctx.comm, r.sizes, dt, buf, total);
        break;
      default:
        s = Status::Invalid(std::string("adasum needs floating-point tensors, got ") +
                            DataTypeName(dt));
    }
    HVD_RETURN_IF_ERROR(s);
  }
  ScopedActivity a(fused ? ctx.timeline : nullptr, r, "MEMCPY_OUT_FUSION_BUFFER");
  int64_t off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint8_t* src = static_cast<uint8_t*>(buf) + off * esize;
    off += r.sizes[i];
    if (entries[i]) {
      HVD_RETURN_IF_ERROR(mem.ScaleCopy(entries[i]->output, src, r.sizes[i], dt, r.postscale));
    }
  }
  return Status::OK();
}

}  // namespace hvd
