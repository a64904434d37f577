#include "bench/soak/soak_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace soak {

namespace {

constexpr size_t kAlign = 64;
constexpr int kPoolNames = 32;
const hvd_reduce_op kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
const char* const kOpNames[] = {"sum", "average", "min", "max", "product"};

size_t AlignUp(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

Use UseOf(const OpSpec& s) {
  switch (s.kind) {
    case Kind::kAllreduce:
    case Kind::kGrouped:
      if (s.op == HVD_OP_MIN || s.op == HVD_OP_MAX) return Use::kMinMax;
      if (s.op == HVD_OP_PRODUCT) return Use::kProduct;
      return Use::kSum;
    case Kind::kReducescatter:
      return Use::kSum;
    default:
      return Use::kPlain;
  }
}

// Result memory in the slot (hvd_op_options.allocator).
void* SlotAllocator(size_t bytes, const int64_t*, int, DLDataType, DLDevice, void* user_data) {
  auto* slot = static_cast<Slot*>(user_data);
  return bytes <= slot->out.size() ? slot->out.data() : nullptr;
}

std::string Describe(const OpSpec& s, int tensor) {
  const TensorSpec& t = s.tensors[tensor];
  std::string d = std::string(KindName(s.kind)) + " '" + t.name + "' " + t.dtype->name;
  if (s.kind == Kind::kAllreduce || s.kind == Kind::kGrouped || s.kind == Kind::kReducescatter) {
    d += " op " + std::string(kOpNames[s.op]);
  }
  char scale[64];
  if (s.prescale != 1 || s.postscale != 1) {
    std::snprintf(scale, sizeof(scale), " prescale %g postscale %g", s.prescale, s.postscale);
    d += scale;
  }
  return d + " set " + std::to_string(s.set);
}

bool Mismatch(const OpSpec& s, int tensor, int64_t i, double got, double want, std::string* error) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), ": element %lld is %.17g, expected %.17g",
                static_cast<long long>(i), got, want);
  *error = "wrong result: " + Describe(s, tensor) + buf;
  return false;
}

}  // namespace

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kAllreduce:
      return "allreduce";
    case Kind::kGrouped:
      return "grouped_allreduce";
    case Kind::kAllgather:
      return "allgather";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAlltoall:
      return "alltoall";
    case Kind::kReducescatter:
      return "reducescatter";
  }
  return "?";
}

int64_t TensorSpec::elems() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int OpSpec::SetRankOf(int global_rank) const {
  auto it = std::find(members.begin(), members.end(), global_rank);
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

// ------------------------------------------------------------------ planner

Planner::Planner(uint64_t seed, int world_size) : rng_(seed), world_size_(world_size) {
  for (int i = 0; i < kPoolNames; ++i) pool_.push_back("soak.pool." + std::to_string(i));
}

std::string Planner::Name(std::vector<std::string>* taken) {
  std::string name;
  do {
    if (Chance(0.5)) {
      name = pool_[Uniform(pool_.size())];
    } else {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "soak.%016llx", static_cast<unsigned long long>(rng_()));
      name = buf;
    }
  } while (std::find(taken->begin(), taken->end(), name) != taken->end());
  taken->push_back(name);
  return name;
}

const Dtype* Planner::PickDtype() {
  return &AllDtypes()[Uniform(AllDtypes().size())];
}

// 0 bytes now and then, else log-uniform in [1, budget].
int64_t Planner::PickBytes(int64_t budget) {
  if (budget <= 0 || Chance(0.05)) return 0;
  const double l = std::uniform_real_distribution<double>(0, std::log2(double(budget)))(rng_);
  return std::min<int64_t>(budget, static_cast<int64_t>(std::exp2(l)));
}

// A shape of at most `elems` elements: 0 to 3 dimensions.
std::vector<int64_t> Planner::PickShape(int64_t elems) {
  if (elems >= 1 && Chance(0.02)) return {};  // a scalar
  const int ndim = 1 + static_cast<int>(Uniform(3));
  std::vector<int64_t> shape(ndim, 1);
  int64_t inner = 1;
  for (int d = 1; d < ndim; ++d) {
    shape[d] = 1 + static_cast<int64_t>(Uniform(16));
    inner *= shape[d];
  }
  shape[0] = elems / inner;
  return shape;
}

OpSpec Planner::Draw(int32_t set, const std::vector<int>& members, const std::vector<int>& joined,
                     std::vector<std::string>* taken) {
  OpSpec s;
  s.set = set;
  s.members = members;
  s.joined = joined;
  s.key = rng_();
  const int n = static_cast<int>(members.size());
  if (!joined.empty()) {
    s.kind = Chance(0.75) ? Kind::kAllreduce : Kind::kGrouped;  // only allreduce runs with join
  } else {
    static const int kWeights[kKinds] = {30, 10, 15, 15, 15, 15};
    int pick = static_cast<int>(Uniform(100));
    int k = 0;
    while (pick >= kWeights[k]) pick -= kWeights[k++];
    s.kind = static_cast<Kind>(k);
  }
  s.in_place = Chance(0.5);
  s.use_allocator = Chance(0.5);
  s.cols = std::vector<int64_t>{1, 3, 16, 64}[Uniform(4)];
  s.ndim = s.cols == 1 && Chance(0.5) ? 1 : 2;
  bool all_float = true;
  auto add_tensor = [&](int64_t budget, bool rows_shape) {
    TensorSpec t;
    t.name = Name(taken);
    t.dtype = PickDtype();
    all_float &= t.dtype->is_float;
    const int64_t elems = PickBytes(budget) / t.dtype->bytes;
    if (rows_shape) {
      t.shape = {elems / s.cols};
      if (s.ndim == 2) t.shape.push_back(s.cols);
    } else {
      t.shape = PickShape(elems);
    }
    s.tensors.push_back(t);
  };
  switch (s.kind) {
    case Kind::kAllreduce:
    case Kind::kBroadcast:
      add_tensor(kMaxOpBytes, false);
      break;
    case Kind::kGrouped: {
      const int count = 2 + static_cast<int>(Uniform(4));
      for (int i = 0; i < count; ++i) add_tensor(kMaxOpBytes / count, false);
      break;
    }
    case Kind::kReducescatter:
      add_tensor(kMaxOpBytes, true);
      break;
    case Kind::kAllgather:
    case Kind::kAlltoall:
      add_tensor(0, true);  // rows are drawn per rank below
      break;
  }
  const int64_t row_bytes = s.cols * s.tensors[0].dtype->bytes;
  if (s.kind == Kind::kAllreduce || s.kind == Kind::kGrouped || s.kind == Kind::kReducescatter) {
    s.op = s.kind == Kind::kReducescatter ? kOps[Uniform(2)] : kOps[Uniform(5)];
    if (all_float) {  // powers of two keep every result exact
      s.prescale = std::vector<double>{1, 1, 2, 0.5}[Uniform(4)];
      s.postscale = std::vector<double>{1, 1, 2, 0.5, 0.25}[Uniform(5)];
    }
  } else if (s.kind == Kind::kBroadcast) {
    s.root = static_cast<int>(Uniform(n));
  } else if (s.kind == Kind::kAllgather) {
    for (int r = 0; r < n; ++r) s.rows.push_back(PickBytes(kMaxOpBytes / n) / row_bytes);
  } else {  // alltoall: every rank sends and receives at most kMaxOpBytes / n
    s.equal_splits = Chance(0.3);
    const int64_t cell = kMaxOpBytes / n / n;
    const int32_t q = static_cast<int32_t>(PickBytes(cell) / row_bytes);
    s.splits.assign(n, std::vector<int32_t>(n, q));
    if (!s.equal_splits) {
      for (auto& row : s.splits) {
        for (auto& v : row) v = static_cast<int32_t>(PickBytes(cell) / row_bytes);
      }
    }
  }
  (void)world_size_;
  return s;
}

// --------------------------------------------------------------- execution

Slot::Slot() : in(kMaxOpBytes + 8 * kAlign, 0), out(kMaxOpBytes + 8 * kAlign, 0) {}

RunningOp::RunningOp(const OpSpec* spec, Slot* slot, int rank)
    : spec_(spec), slot_(slot), rank_(rank), set_rank_(spec->SetRankOf(rank)) {}

double RunningOp::InputValue(int tensor, int global_rank, int64_t i) const {
  const OpSpec& s = *spec_;
  const Dtype& t = *s.tensors[tensor].dtype;
  const uint64_t key = Mix(s.key + static_cast<uint64_t>(tensor));
  const Use use = UseOf(s);
  const Range range = RangeFor(use, t);
  if (use == Use::kProduct) {
    // {-1, 1, 2} (unsigned {1, 2}); 2 only from the first six ranks of the
    // set so that a product stays within int8 / uint8.
    const int64_t d = Draw(key, global_rank, i, 0, 2);
    const bool may_double = s.SetRankOf(global_rank) < 6;
    if (d == 2 && may_double) return 2;
    return t.is_signed && d == 0 ? -1 : 1;
  }
  if (use == Use::kSum && s.op == HVD_OP_AVERAGE) {
    // The last contributing rank makes the sum a multiple of the set size,
    // so the average is exact in every dtype.
    int adjuster = -1;
    for (int r : s.members) {
      if (std::find(s.joined.begin(), s.joined.end(), r) == s.joined.end()) adjuster = r;
    }
    if (global_rank == adjuster) {
      const int64_t n = static_cast<int64_t>(s.members.size());
      int64_t others = 0;
      for (int r : s.members) {
        if (r != adjuster && std::find(s.joined.begin(), s.joined.end(), r) == s.joined.end()) {
          others += Draw(key, r, i, range.lo, range.hi);
        }
      }
      const int64_t base = Draw(key, global_rank, i, range.lo + n - 1, range.hi);
      return static_cast<double>(base - (((others + base) % n) + n) % n);
    }
  }
  return static_cast<double>(Draw(key, global_rank, i, range.lo, range.hi));
}

double RunningOp::ExpectedReduce(int tensor, int64_t i) const {
  const OpSpec& s = *spec_;
  double acc = 0;
  bool first = true;
  for (int r : s.members) {
    const bool joined = std::find(s.joined.begin(), s.joined.end(), r) != s.joined.end();
    const double v = joined ? 0.0 : InputValue(tensor, r, i) * s.prescale;
    if (first) {
      acc = v;
      first = false;
      continue;
    }
    switch (s.op) {
      case HVD_OP_MIN:
        acc = std::min(acc, v);
        break;
      case HVD_OP_MAX:
        acc = std::max(acc, v);
        break;
      case HVD_OP_PRODUCT:
        acc *= v;
        break;
      default:
        acc += v;
        break;
    }
  }
  if (s.op == HVD_OP_AVERAGE) acc /= static_cast<double>(s.members.size());
  return acc * s.postscale;
}

bool RunningOp::Submit(std::string* error) {
  const OpSpec& s = *spec_;
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.process_set = s.set;
  o.prescale_factor = s.prescale;
  o.postscale_factor = s.postscale;
  if (s.use_allocator) {
    o.allocator = SlotAllocator;
    o.allocator_user_data = slot_;
  }
  // Lay the tensors out in the slot and fill the inputs.
  size_t offset = 0;
  for (size_t t = 0; t < s.tensors.size(); ++t) {
    const TensorSpec& ts = s.tensors[t];
    std::vector<int64_t> shape = ts.shape;
    if (s.kind == Kind::kAllgather) shape[0] = s.rows[set_rank_];
    if (s.kind == Kind::kAlltoall) {
      shape[0] = 0;
      for (int32_t v : s.splits[set_rank_]) shape[0] += v;
    }
    shapes_.push_back(shape);
    int64_t elems = 1;
    for (int64_t d : shape) elems *= d;
    offsets_.push_back(offset);
    unsigned char* in = slot_->in.data() + offset;
    const bool root = s.kind == Kind::kBroadcast && set_rank_ == s.root;
    for (int64_t i = 0; i < elems; ++i) {
      double v;
      if (s.kind == Kind::kBroadcast && !root) {
        v = static_cast<double>(Draw(Mix(s.key + 1), rank_, i, 0, 100));  // to be overwritten
      } else {
        v = InputValue(static_cast<int>(t), rank_, i);
      }
      Store(*ts.dtype, in, i, v);
    }
    offset += AlignUp(static_cast<size_t>(elems * ts.dtype->bytes));
  }
  for (size_t t = 0; t < s.tensors.size(); ++t) {
    DLTensor d{};
    d.device = {kDLCPU, 0};
    d.dtype = s.tensors[t].dtype->dl;
    d.ndim = static_cast<int32_t>(shapes_[t].size());
    d.shape = shapes_[t].data();
    d.data = slot_->in.data() + offsets_[t];
    inputs_.push_back(d);
    if (!s.in_place) {
      d.data = slot_->out.data() + offsets_[t];
      std::memset(d.data, 0xcd,
                  static_cast<size_t>(s.tensors[t].elems() * s.tensors[t].dtype->bytes));
    }
    outputs_.push_back(d);
  }
  hvd_status st = HVD_OK;
  const char* name = s.tensors[0].name.c_str();
  switch (s.kind) {
    case Kind::kAllreduce:
      st = hvd_allreduce_async(name, &inputs_[0], &outputs_[0], s.op, &o, &handle_);
      break;
    case Kind::kGrouped: {
      std::vector<const char*> names;
      std::vector<const DLTensor*> ins;
      std::vector<DLTensor*> outs;
      for (size_t t = 0; t < s.tensors.size(); ++t) {
        names.push_back(s.tensors[t].name.c_str());
        ins.push_back(&inputs_[t]);
        outs.push_back(&outputs_[t]);
      }
      st = hvd_grouped_allreduce_async(names.data(), ins.data(), outs.data(),
                                       static_cast<int>(s.tensors.size()), s.op, &o, &handle_);
      break;
    }
    case Kind::kAllgather:
      st = hvd_allgather_async(name, &inputs_[0], &o, &handle_);
      break;
    case Kind::kBroadcast:
      st = hvd_broadcast_async(name, &inputs_[0], s.root, &o, &handle_);
      break;
    case Kind::kAlltoall:
      st = hvd_alltoall_async(
          name, &inputs_[0], s.equal_splits ? nullptr : s.splits[set_rank_].data(),
          s.equal_splits ? 0 : static_cast<int>(s.members.size()), &o, &handle_);
      break;
    case Kind::kReducescatter:
      st = hvd_reducescatter_async(name, &inputs_[0], s.op, &o, &handle_);
      break;
  }
  if (st != HVD_OK) {
    *error = std::string("submitting ") + Describe(s, 0) + ": " + hvd_status_string(st) + ": " +
             hvd_last_error();
    return false;
  }
  return true;
}

bool RunningOp::Check(std::string* error) {
  const OpSpec& s = *spec_;
  if (s.kind == Kind::kAllreduce || s.kind == Kind::kGrouped) return CheckAllreduce(error);
  if (s.kind == Kind::kBroadcast) return CheckBroadcast(error);
  DLTensor r{};
  hvd_status st = hvd_result(handle_, &r);
  if (st != HVD_OK) {
    *error = "hvd_result of " + Describe(s, 0) + ": " + hvd_last_error();
    return false;
  }
  if (s.use_allocator && r.data != slot_->out.data()) {
    *error = Describe(s, 0) + ": the result is not in the allocator's memory";
    return false;
  }
  const Dtype& t = *s.tensors[0].dtype;
  if (r.dtype.code != t.dl.code || r.dtype.bits != t.dl.bits || r.ndim != s.ndim ||
      (s.ndim == 2 && r.shape[1] != s.cols)) {
    *error = Describe(s, 0) + ": result has the wrong dtype or shape";
    return false;
  }
  if (s.kind == Kind::kAllgather) return CheckAllgather(r, error);
  if (s.kind == Kind::kAlltoall) return CheckAlltoall(r, error);
  return CheckReducescatter(r, error);
}

bool RunningOp::CheckAllreduce(std::string* error) {
  for (size_t t = 0; t < spec_->tensors.size(); ++t) {
    const int64_t elems = spec_->tensors[t].elems();
    const Dtype& dt = *spec_->tensors[t].dtype;
    for (int64_t i = 0; i < elems; ++i) {
      const double got = Load(dt, outputs_[t].data, i);
      const double want = ExpectedReduce(static_cast<int>(t), i);
      if (got != want) return Mismatch(*spec_, static_cast<int>(t), i, got, want, error);
    }
  }
  return true;
}

bool RunningOp::CheckBroadcast(std::string* error) {
  const OpSpec& s = *spec_;
  const int root = s.members[s.root];
  const int64_t elems = s.tensors[0].elems();
  for (int64_t i = 0; i < elems; ++i) {
    const double got = Load(*s.tensors[0].dtype, inputs_[0].data, i);
    const double want = InputValue(0, root, i);
    if (got != want) return Mismatch(s, 0, i, got, want, error);
  }
  return true;
}

bool RunningOp::CheckAllgather(const DLTensor& r, std::string* error) {
  const OpSpec& s = *spec_;
  int64_t total = 0;
  for (int64_t rows : s.rows) total += rows;
  if (r.shape[0] != total) {
    *error = Describe(s, 0) + ": " + std::to_string(r.shape[0]) + " rows gathered, expected " +
             std::to_string(total);
    return false;
  }
  int64_t out = 0;
  for (size_t src = 0; src < s.members.size(); ++src) {
    const int64_t n = s.rows[src] * s.cols;
    for (int64_t i = 0; i < n; ++i, ++out) {
      const double got = Load(*s.tensors[0].dtype, r.data, out);
      const double want = InputValue(0, s.members[src], i);
      if (got != want) return Mismatch(s, 0, out, got, want, error);
    }
  }
  return true;
}

bool RunningOp::CheckAlltoall(const DLTensor& r, std::string* error) {
  const OpSpec& s = *spec_;
  const int n = static_cast<int>(s.members.size());
  std::vector<int32_t> recv(n);
  int count = 0;
  if (hvd_result_splits(handle_, recv.data(), n, &count) != HVD_OK || count != n) {
    *error = "hvd_result_splits of " + Describe(s, 0) + ": " + hvd_last_error();
    return false;
  }
  int64_t out = 0;
  for (int src = 0; src < n; ++src) {
    if (recv[src] != s.splits[src][set_rank_]) {
      *error = Describe(s, 0) + ": " + std::to_string(recv[src]) + " rows from set rank " +
               std::to_string(src) + ", expected " + std::to_string(s.splits[src][set_rank_]);
      return false;
    }
    int64_t first_row = 0;
    for (int d = 0; d < set_rank_; ++d) first_row += s.splits[src][d];
    const int64_t n_elems = int64_t{recv[src]} * s.cols;
    for (int64_t i = 0; i < n_elems; ++i, ++out) {
      const double got = Load(*s.tensors[0].dtype, r.data, out);
      const double want = InputValue(0, s.members[src], first_row * s.cols + i);
      if (got != want) return Mismatch(s, 0, out, got, want, error);
    }
  }
  if (r.shape[0] * s.cols != out) {
    *error = Describe(s, 0) + ": result has " + std::to_string(r.shape[0]) + " rows";
    return false;
  }
  return true;
}

bool RunningOp::CheckReducescatter(const DLTensor& r, std::string* error) {
  const OpSpec& s = *spec_;
  const int64_t n = static_cast<int64_t>(s.members.size());
  const int64_t rows = s.tensors[0].shape[0];
  const int64_t mine = rows / n + (set_rank_ < rows % n ? 1 : 0);
  const int64_t first = set_rank_ * (rows / n) + std::min<int64_t>(set_rank_, rows % n);
  if (r.shape[0] != mine) {
    *error = Describe(s, 0) + ": " + std::to_string(r.shape[0]) + " rows, expected " +
             std::to_string(mine);
    return false;
  }
  for (int64_t i = 0; i < mine * s.cols; ++i) {
    const double got = Load(*s.tensors[0].dtype, r.data, i);
    const double want = ExpectedReduce(0, first * s.cols + i);
    if (got != want) return Mismatch(s, 0, i, got, want, error);
  }
  return true;
}

}  // namespace soak
