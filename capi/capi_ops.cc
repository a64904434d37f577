// The collectives: argument checks, then one TensorEntry per tensor handed
// to the runtime. Adding an operation means adding it here.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "core/common/block_pool.h"
#include "core/runtime/build_info.h"
#include "core/runtime/handle_table.h"

namespace hvd {
namespace capi {
namespace {

Status ReadOpOptions(const hvd_op_options* in, hvd_op_options* out, const char* fn) {
  *out = HVD_OP_OPTIONS_INIT;
  if (!in) return Status::OK();  // the defaults are valid
  HVD_RETURN_IF_ERROR(ReadOptions(in, out, fn));
  if (!std::isfinite(out->prescale_factor) || !std::isfinite(out->postscale_factor)) {
    return Status::Invalid(std::string(fn) + ": prescale/postscale factors must be finite");
  }
  if (out->process_set < 0) {
    return Status::Invalid(std::string(fn) + ": negative process set id " +
                           std::to_string(out->process_set));
  }
  return Status::OK();
}

// The element count of a validated shape; errors for negative or absurd ones.
template <typename Where>
Status CountElements(const DLTensor* t, const Where& where, int64_t* count) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) {
    if (t->shape[i] < 0) {
      return Status::Invalid(where() + " has negative dimension " + std::to_string(i) + " (" +
                             std::to_string(t->shape[i]) + ")");
    }
    if (t->shape[i] > 0 && n > (int64_t{1} << 50) / t->shape[i]) {
      return Status::Invalid(where() + " is absurdly large (more than 2^50 elements)");
    }
    n *= t->shape[i];
  }
  if (t->strides && n > 1) {
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; --i) {
      if (t->shape[i] != 1 && t->strides[i] != expect) {
        return Status::Invalid(where() + " is not contiguous (row-major strides required)");
      }
      expect *= t->shape[i];
    }
  }
  *count = n;
  return Status::OK();
}

}  // namespace

// Validates a DLTensor. The "fn: what" prefix of a message is built only on
// failure: this runs once or twice per submitted tensor.
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, TensorView* v) {
  auto where = [fn, what] { return std::string(fn) + ": " + what; };
  if (!t) return Status::Invalid(where() + " is NULL");
  if (t->ndim < 0 || t->ndim > 32) {
    return Status::Invalid(where() + " has ndim " + std::to_string(t->ndim) + " (0..32 allowed)");
  }
  if (t->ndim > 0 && !t->shape) return Status::Invalid(where() + " has ndim > 0 but shape is NULL");
  Status s = FromDLDataType(t->dtype, &v->dtype);
  if (!s.ok()) return Status::Invalid(where() + ": " + s.message());
  s = FromDLDevice(t->device, &v->device);
  if (!s.ok()) return Status::Invalid(where() + ": " + s.message());
  if (v->device.kind == DeviceKind::kCUDA && !CudaBuilt()) {
    return Status::Unsupported(where() +
                               " is on a CUDA device; this build of hvd handles CPU "
                               "tensors only (GPU support: HVD_WITH_CUDA/NCCL)");
  }
  int64_t n = 0;
  HVD_RETURN_IF_ERROR(CountElements(t, where, &n));
  if (!t->data && n > 0) return Status::Invalid(where() + " has NULL data");
  v->num_elements = n;
  v->data = static_cast<uint8_t*>(t->data) + t->byte_offset;
  return Status::OK();
}

namespace {

// Validates a DLTensor and fills the tensor part of an entry.
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, TensorEntry* e) {
  TensorView v;
  HVD_RETURN_IF_ERROR(ReadTensor(fn, what, t, &v));
  Request& q = e->request;
  q.dtype = v.dtype;
  q.device = v.device;
  q.shape.assign(t->shape, t->shape + t->ndim);
  e->num_elements = v.num_elements;
  e->bytes = v.num_elements * static_cast<int64_t>(DataTypeSize(v.dtype));
  e->input = v.data;
  return Status::OK();
}

bool SameLayout(const DLTensor* a, const DLTensor* b) {
  if (a->ndim != b->ndim || a->dtype.code != b->dtype.code || a->dtype.bits != b->dtype.bits ||
      a->dtype.lanes != b->dtype.lanes || a->device.device_type != b->device.device_type ||
      a->device.device_id != b->device.device_id || a->strides || b->strides ||
      (a->ndim > 0 && (!a->shape || !b->shape))) {
    return false;
  }
  return a->shape == b->shape ||
         std::memcmp(a->shape, b->shape, sizeof(int64_t) * static_cast<size_t>(a->ndim)) == 0;
}

// Validates an allreduce output against its input's entry. An output laid
// out exactly as the validated input (the usual case) needs no checks of
// its own beyond its data pointer.
Status ReadOutput(const char* fn, const char* what, const char* input_what, const DLTensor* input,
                  const DLTensor* t, TensorEntry* e) {
  if (t && SameLayout(t, input) && (t->data || e->num_elements == 0)) {
    e->output = static_cast<uint8_t*>(t->data) + t->byte_offset;
    return Status::OK();
  }
  TensorView v;
  HVD_RETURN_IF_ERROR(ReadTensor(fn, what, t, &v));
  if (v.num_elements != e->num_elements || v.dtype != e->request.dtype) {
    return Status::Invalid(std::string(fn) + ": " + what + " must have the " + input_what +
                           "'s dtype and element count (" + input_what + " " +
                           DataTypeName(e->request.dtype) + " x" + std::to_string(e->num_elements) +
                           ", " + what + " " + DataTypeName(v.dtype) + " x" +
                           std::to_string(v.num_elements) + ")");
  }
  e->output = v.data;
  return Status::OK();
}

Status CheckReduceOp(const char* fn, int op) {
  if (op < HVD_OP_SUM || op > HVD_OP_ADASUM) {
    return Status::Invalid(std::string(fn) + ": unknown reduce op " + std::to_string(op));
  }
  return Status::OK();
}

// Adasum's limits: the recursive halving pairs rank r with r ^ 2^k, so the
// set size must be a power of two (Horovod has the same limit).
Status CheckAdasumSet(const char* fn, int32_t set) {
  int set_rank = 0, set_size = 0;
  Status s = RT().SetInfo(set, &set_rank, &set_size);
  if (!s.ok()) return Status(s.code(), std::string(fn) + ": " + s.message());
  if (set_size & (set_size - 1)) {
    return Status(Code::kUnsupported, std::string(fn) +
                                          ": HVD_OP_ADASUM needs a power-of-two number of ranks; "
                                          "process set " +
                                          std::to_string(set) + " has " + std::to_string(set_size));
  }
  return Status::OK();
}

Status CheckAdasumTensor(const char* fn, const char* what, const TensorEntry& e) {
  const DataType dt = e.request.dtype;
  if (dt != DataType::kFloat16 && dt != DataType::kBFloat16 && dt != DataType::kFloat32 &&
      dt != DataType::kFloat64) {
    return Status::Invalid(std::string(fn) + ": HVD_OP_ADASUM needs a floating-point " + what +
                           ", got " + DataTypeName(dt));
  }
  if (e.request.device.kind != DeviceKind::kCPU) {
    return Status(Code::kUnsupported, std::string(fn) +
                                          ": HVD_OP_ADASUM runs on CPU tensors "
                                          "only (MPI or Gloo); " +
                                          what + " is on a CUDA device");
  }
  return Status::OK();
}

// bool reduces logically: sum and max are OR, min and product are AND,
// which on bytes are max and min (any non-zero byte is true). Average and
// scaling have no meaning for truth values.
Status MapBoolOp(const char* fn, const char* what, const hvd_op_options& o, TensorEntry* e) {
  if (e->request.dtype != DataType::kBool) return Status::OK();
  ReduceOp& op = e->request.reduce_op;
  if (op == ReduceOp::kAverage || op == ReduceOp::kAdasum) {
    return Status::Invalid(std::string(fn) + ": " + what + " is bool, which reduces with " +
                           "HVD_OP_SUM/MAX (logical or) or HVD_OP_MIN/PRODUCT (logical and), not " +
                           ReduceOpName(op));
  }
  if (o.prescale_factor != 1.0 || o.postscale_factor != 1.0) {
    return Status::Invalid(std::string(fn) + ": " + what +
                           " is bool, which cannot be scaled (prescale/postscale factors must "
                           "be 1)");
  }
  if (op == ReduceOp::kSum) op = ReduceOp::kMax;
  if (op == ReduceOp::kProduct) op = ReduceOp::kMin;
  return Status::OK();
}

ResultAllocator MakeAllocator(const hvd_op_options& o) {
  if (!o.allocator) return nullptr;
  hvd_allocator fn = o.allocator;
  void* user = o.allocator_user_data;
  return
      [fn, user](size_t bytes, const std::vector<int64_t>& shape, DataType dt, const Device& dev) {
        return fn(bytes, shape.data(), static_cast<int>(shape.size()), ToDLDataType(dt),
                  ToDLDevice(dev), user);
      };
}

HandleState::Callback MakeCallback(const hvd_op_options& o) {
  if (!o.callback) return nullptr;
  hvd_callback fn = o.callback;
  void* user = o.callback_user_data;
  return
      [fn, user](int64_t id, const Status& s) { fn(id, static_cast<hvd_status>(s.code()), user); };
}

Status CheckScatterOp(const char* fn, int op) {
  if (op != HVD_OP_SUM && op != HVD_OP_AVERAGE) {
    return Status::Invalid(std::string(fn) + ": only HVD_OP_SUM and HVD_OP_AVERAGE are supported");
  }
  return Status::OK();
}

Status NoOpCheck(const char*, int) {
  return Status::OK();
}

// The calling thread's entry for a single-tensor operation. A successful
// submission hands it to the queue, which gives back a cleared pooled entry
// whose name and shape memory the next call reuses: the hot path copies and
// allocates nothing. Any failure clears it for the next call.
class ScratchEntry {
 public:
  ScratchEntry() : slot_(Slot()) {
    if (!*slot_) *slot_ = std::make_unique<TensorEntry>();
  }
  ~ScratchEntry() {
    if (!submitted_) (*slot_)->Clear();
  }
  ScratchEntry(const ScratchEntry&) = delete;
  ScratchEntry& operator=(const ScratchEntry&) = delete;

  TensorEntry& operator*() { return **slot_; }
  TensorEntry* operator->() { return slot_->get(); }
  hvd_status Submit(const char* fn, const hvd_op_options& o, hvd_handle* handle) {
    const hvd_status st = capi::Submit(fn, slot_, 1, o, handle);
    submitted_ = st == HVD_OK;
    return st;
  }

 private:
  // Out of line: inlined, the compiler recomputes the thread-local's address
  // (a __tls_get_addr call in a shared library) at every use of slot_.
  __attribute__((noinline)) static std::unique_ptr<TensorEntry>* Slot() {
    thread_local std::unique_ptr<TensorEntry> entry;
    return &entry;
  }

  std::unique_ptr<TensorEntry>* slot_;
  bool submitted_ = false;
};

// The checks every single-tensor operation starts with, in this order:
// initialised, valid options, a valid reduce op (check_op; NoOpCheck for
// operations without one), a valid input tensor.
template <typename OpCheck>
Status ReadCommon(const char* fn, const hvd_op_options* opts, OpCheck check_op, int op,
                  const DLTensor* input, const char* input_what, hvd_op_options* o,
                  TensorEntry* e) {
  HVD_RETURN_IF_ERROR(CheckInit(fn));
  HVD_RETURN_IF_ERROR(ReadOpOptions(opts, o, fn));
  HVD_RETURN_IF_ERROR(check_op(fn, op));
  return ReadTensor(fn, input_what, input, e);
}

hvd_status Allreduce(const char* name, const DLTensor* input, DLTensor* output, int op,
                     const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_allreduce_async";
  hvd_op_options o;
  ScratchEntry e;  // the hot path of every training step
  Status s = ReadCommon(fn, opts, CheckReduceOp, op, input, "input", &o, &*e);
  if (s.ok()) s = ReadOutput(fn, "output", "input", input, output, &*e);
  if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumTensor(fn, "input", *e);
  if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumSet(fn, o.process_set);
  if (s.ok()) {
    e->request.reduce_op = static_cast<ReduceOp>(op);
    s = MapBoolOp(fn, "input", o, &*e);
  }
  if (!s.ok()) return Report(s);
  e->request.type = OpType::kAllreduce;
  if (name) e->request.name = name;
  return e.Submit(fn, o, handle);
}

hvd_status SubmitGroup(const char* fn, OpType type, const char* const* names,
                       std::vector<std::unique_ptr<TensorEntry>>* v, const hvd_op_options& o,
                       hvd_handle* handle, bool per_tensor_results);

hvd_status GroupedAllreduce(const char* const* names, const DLTensor* const* inputs,
                            DLTensor* const* outputs, int count, int op, const hvd_op_options* opts,
                            hvd_handle* handle) {
  const char* fn = "hvd_grouped_allreduce_async";
  hvd_op_options o;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok()) s = CheckReduceOp(fn, op);
  if (s.ok() && (count <= 0 || !inputs || !outputs)) {
    s = Status::Invalid(std::string(fn) + ": needs count > 0 and non-NULL inputs/outputs");
  }
  std::vector<std::unique_ptr<TensorEntry>> v(s.ok() ? static_cast<size_t>(count) : 0);
  for (int i = 0; s.ok() && i < count; ++i) {
    const std::string what = "inputs[" + std::to_string(i) + "]";
    const std::string owhat = "outputs[" + std::to_string(i) + "]";
    v[i] = std::make_unique<TensorEntry>();
    s = ReadTensor(fn, what.c_str(), inputs[i], v[i].get());
    if (s.ok()) s = ReadOutput(fn, owhat.c_str(), what.c_str(), inputs[i], outputs[i], v[i].get());
    if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumTensor(fn, what.c_str(), *v[i]);
    if (s.ok()) {
      v[i]->request.reduce_op = static_cast<ReduceOp>(op);
      s = MapBoolOp(fn, what.c_str(), o, v[i].get());
    }
    if (!s.ok()) break;
  }
  if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumSet(fn, o.process_set);
  if (!s.ok()) return Report(s);
  return SubmitGroup(fn, OpType::kAllreduce, names, &v, o, handle, false);
}

// Names, type and group of a validated group's entries, then one handle
// for all of them: negotiated together, emitted together, fused when their
// dtypes and options allow.
hvd_status SubmitGroup(const char* fn, OpType type, const char* const* names,
                       std::vector<std::unique_ptr<TensorEntry>>* v, const hvd_op_options& o,
                       hvd_handle* handle, bool per_tensor_results) {
  for (size_t i = 0; i < v->size(); ++i) {
    Request& q = (*v)[i]->request;
    q.type = type;
    q.name = names && names[i] ? names[i] : RT().AutoName(type, o.process_set);
  }
  const std::string group = "group:" + (*v)[0]->request.name;
  for (auto& e : *v) {
    e->request.group = group;
    e->request.group_size = static_cast<int32_t>(v->size());
  }
  return Submit(fn, v->data(), v->size(), o, handle, per_tensor_results);
}

// Grouped operations whose results hvd allocates: one entry per input,
// each with a result of its own under the one handle (hvd_result_at).
hvd_status GroupedWithResults(const char* fn, OpType type, const char* const* names,
                              const DLTensor* const* inputs, int count, int op,
                              const hvd_op_options* opts, hvd_handle* handle) {
  hvd_op_options o;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok() && type == OpType::kReducescatter) s = CheckScatterOp(fn, op);
  if (s.ok() && (count <= 0 || !inputs)) {
    s = Status::Invalid(std::string(fn) + ": needs count > 0 and non-NULL inputs");
  }
  std::vector<std::unique_ptr<TensorEntry>> v(s.ok() ? static_cast<size_t>(count) : 0);
  for (int i = 0; s.ok() && i < count; ++i) {
    const std::string what = "inputs[" + std::to_string(i) + "]";
    v[i] = std::make_unique<TensorEntry>();
    s = ReadTensor(fn, what.c_str(), inputs[i], v[i].get());
    if (s.ok() && type == OpType::kReducescatter) {
      if (v[i]->request.shape.empty()) {
        s = Status::Invalid(std::string(fn) + ": " + what +
                            " is a scalar; reducescatter needs at least one dimension");
      } else {
        v[i]->request.reduce_op = static_cast<ReduceOp>(op);
        s = MapBoolOp(fn, what.c_str(), o, v[i].get());
      }
    }
  }
  if (!s.ok()) return Report(s);
  return SubmitGroup(fn, type, names, &v, o, handle, true);
}

hvd_status Allgather(const char* name, const DLTensor* input, const hvd_op_options* opts,
                     hvd_handle* handle) {
  const char* fn = "hvd_allgather_async";
  hvd_op_options o;
  ScratchEntry e;
  Status s = ReadCommon(fn, opts, NoOpCheck, HVD_OP_SUM, input, "input", &o, &*e);
  if (!s.ok()) return Report(s);
  e->request.type = OpType::kAllgather;
  if (name) e->request.name = name;
  return e.Submit(fn, o, handle);
}

hvd_status Broadcast(const char* name, DLTensor* tensor, int root_rank, const hvd_op_options* opts,
                     hvd_handle* handle) {
  const char* fn = "hvd_broadcast_async";
  hvd_op_options o;
  ScratchEntry e;
  Status s = ReadCommon(fn, opts, NoOpCheck, HVD_OP_SUM, tensor, "tensor", &o, &*e);
  int set_rank = 0, set_size = 0;
  if (s.ok()) s = RT().SetInfo(o.process_set, &set_rank, &set_size);
  if (s.ok() && (root_rank < 0 || root_rank >= set_size)) {
    s = Status::Invalid(std::string(fn) + ": root rank " + std::to_string(root_rank) +
                        " is outside process set " + std::to_string(o.process_set) + " (size " +
                        std::to_string(set_size) + ")");
  }
  if (!s.ok()) return Report(s);
  e->output = static_cast<uint8_t*>(tensor->data) + tensor->byte_offset;
  e->request.type = OpType::kBroadcast;
  e->request.root = root_rank;
  if (name) e->request.name = name;
  return e.Submit(fn, o, handle);
}

// Alltoall's splits against the input's first dimension and the set size.
Status ReadSplits(const char* fn, const int32_t* splits, int nsplits, int set_size,
                  TensorEntry* e) {
  if (e->request.shape.empty()) {
    return Status::Invalid(std::string(fn) + ": input must have at least one dimension");
  }
  const int64_t dim0 = e->request.shape[0];
  if (!splits) {
    if (dim0 % set_size == 0) return Status::OK();
    return Status::Invalid(std::string(fn) + ": without splits, dimension 0 (" +
                           std::to_string(dim0) + ") must be divisible by the set size (" +
                           std::to_string(set_size) + ")");
  }
  int64_t sum = 0;
  bool negative = false;
  for (int i = 0; i < nsplits; ++i) {
    sum += splits[i];
    negative |= splits[i] < 0;
  }
  if (nsplits != set_size || negative || sum != dim0) {
    return Status::Invalid(std::string(fn) +
                           ": splits must have one non-negative entry per "
                           "rank of the set (" +
                           std::to_string(set_size) + ") summing to dimension 0 (" +
                           std::to_string(dim0) + "); got " + std::to_string(nsplits) +
                           " entries summing to " + std::to_string(sum));
  }
  e->request.splits.assign(splits, splits + nsplits);
  return Status::OK();
}

hvd_status Alltoall(const char* name, const DLTensor* input, const int32_t* splits, int nsplits,
                    const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_alltoall_async";
  hvd_op_options o;
  ScratchEntry e;
  Status s = ReadCommon(fn, opts, NoOpCheck, HVD_OP_SUM, input, "input", &o, &*e);
  int set_rank = 0, set_size = 0;
  if (s.ok()) s = RT().SetInfo(o.process_set, &set_rank, &set_size);
  if (s.ok()) s = ReadSplits(fn, splits, nsplits, set_size, &*e);
  if (!s.ok()) return Report(s);
  e->request.type = OpType::kAlltoall;
  if (name) e->request.name = name;
  return e.Submit(fn, o, handle);
}

hvd_status Reducescatter(const char* name, const DLTensor* input, int op,
                         const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_reducescatter_async";
  hvd_op_options o;
  ScratchEntry e;
  Status s = ReadCommon(fn, opts, CheckScatterOp, op, input, "input", &o, &*e);
  if (s.ok() && e->request.shape.empty()) {
    // Blocks of dimension 0 are scattered: a scalar has none (Horovod raises too).
    s = Status::Invalid(std::string(fn) + ": input must have at least one dimension");
  }
  if (s.ok()) {
    e->request.reduce_op = static_cast<ReduceOp>(op);
    s = MapBoolOp(fn, "input", o, &*e);
  }
  if (!s.ok()) return Report(s);
  e->request.type = OpType::kReducescatter;
  if (name) e->request.name = name;
  return e.Submit(fn, o, handle);
}

hvd_status Barrier(int32_t process_set) {
  Status s = CheckInit("hvd_barrier");
  if (!s.ok()) return Report(s);
  TensorEntry e;
  e.request.type = OpType::kBarrier;
  return RunBlocking("hvd_barrier", std::move(e), process_set, nullptr);
}

hvd_status Join(int32_t process_set, int* last_rank) {
  Status s = CheckInit("hvd_join");
  if (!s.ok()) return Report(s);
  TensorEntry e;
  e.request.type = OpType::kJoin;
  e.request.name = "join." + std::to_string(process_set);
  int64_t last = -1;
  hvd_status st = RunBlocking("hvd_join", std::move(e), process_set, &last);
  if (st == HVD_OK && last_rank) *last_rank = static_cast<int>(last);
  return st;
}

}  // namespace

hvd_status Submit(const char* fn, std::unique_ptr<TensorEntry>* entries, size_t count,
                  const hvd_op_options& o, hvd_handle* handle, bool per_tensor_results) {
  if (!handle) return Fail(Code::kInvalidArgument, std::string(fn) + ": handle is NULL");
  const int n = static_cast<int>(count);
  auto state = std::allocate_shared<HandleState>(PoolAllocator<HandleState>(), n, MakeCallback(o),
                                                 per_tensor_results ? n : 1);
  for (size_t i = 0; i < count; ++i) {
    TensorEntry& e = *entries[i];
    e.handle = state;
    e.result_index = per_tensor_results ? static_cast<int32_t>(i) : 0;
    e.request.process_set = o.process_set;
    e.request.prescale = o.prescale_factor;
    e.request.postscale = o.postscale_factor;
    if (o.allocator) e.allocator = MakeAllocator(o);  // entries arrive cleared
    e.cuda_stream = o.cuda_stream;
    if (e.request.name.empty()) {
      e.request.name = RT().AutoName(e.request.type, o.process_set);
    }
  }
  const int64_t id = HandleTable::Global().Add(state);
  state->set_id(id);
  Status s = RT().Submit(entries, count);
  if (!s.ok()) {
    HandleTable::Global().Release(id);
    *handle = 0;
    return Report(Prefixed(fn, s));
  }
  *handle = id;
  return Report(Status::OK());
}

hvd_status RunBlocking(const char* fn, TensorEntry entry, int32_t set, int64_t* value) {
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.process_set = set;
  hvd_handle h = 0;
  auto e = std::make_unique<TensorEntry>(std::move(entry));
  hvd_status st = Submit(fn, &e, 1, o, &h);
  if (st != HVD_OK) return st;
  Status err;
  auto state = HandleTable::Global().Find(h, &err);
  Status s = state->Wait(-1);
  if (value) *value = state->result().value;
  HandleTable::Global().Release(h);
  return ReportFrom(fn, s);
}

}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_allreduce_async(const char* name, const DLTensor* input, DLTensor* output,
                               hvd_reduce_op op, const hvd_op_options* opts, hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_allreduce_async", [&] {
    return hvd::capi::Allreduce(name, input, output, op_value, opts, handle);
  });
}

hvd_status hvd_grouped_allreduce_async(const char* const* names, const DLTensor* const* inputs,
                                       DLTensor* const* outputs, int count, hvd_reduce_op op,
                                       const hvd_op_options* opts, hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_grouped_allreduce_async", [&] {
    return hvd::capi::GroupedAllreduce(names, inputs, outputs, count, op_value, opts, handle);
  });
}

hvd_status hvd_grouped_allgather_async(const char* const* names, const DLTensor* const* inputs,
                                       int count, const hvd_op_options* opts, hvd_handle* handle) {
  return hvd::capi::Guard("hvd_grouped_allgather_async", [&] {
    return hvd::capi::GroupedWithResults("hvd_grouped_allgather_async", hvd::OpType::kAllgather,
                                         names, inputs, count, HVD_OP_SUM, opts, handle);
  });
}

hvd_status hvd_grouped_reducescatter_async(const char* const* names, const DLTensor* const* inputs,
                                           int count, hvd_reduce_op op, const hvd_op_options* opts,
                                           hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_grouped_reducescatter_async", [&] {
    return hvd::capi::GroupedWithResults("hvd_grouped_reducescatter_async",
                                         hvd::OpType::kReducescatter, names, inputs, count,
                                         op_value, opts, handle);
  });
}

hvd_status hvd_allgather_async(const char* name, const DLTensor* input, const hvd_op_options* opts,
                               hvd_handle* handle) {
  return hvd::capi::Guard("hvd_allgather_async",
                          [&] { return hvd::capi::Allgather(name, input, opts, handle); });
}

hvd_status hvd_broadcast_async(const char* name, DLTensor* tensor, int root_rank,
                               const hvd_op_options* opts, hvd_handle* handle) {
  return hvd::capi::Guard("hvd_broadcast_async", [&] {
    return hvd::capi::Broadcast(name, tensor, root_rank, opts, handle);
  });
}

hvd_status hvd_alltoall_async(const char* name, const DLTensor* input, const int32_t* splits,
                              int nsplits, const hvd_op_options* opts, hvd_handle* handle) {
  return hvd::capi::Guard("hvd_alltoall_async", [&] {
    return hvd::capi::Alltoall(name, input, splits, nsplits, opts, handle);
  });
}

hvd_status hvd_reducescatter_async(const char* name, const DLTensor* input, hvd_reduce_op op,
                                   const hvd_op_options* opts, hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_reducescatter_async", [&] {
    return hvd::capi::Reducescatter(name, input, op_value, opts, handle);
  });
}

hvd_status hvd_barrier(int32_t process_set) {
  return hvd::capi::Guard("hvd_barrier", [&] { return hvd::capi::Barrier(process_set); });
}

hvd_status hvd_join(int32_t process_set, int* last_rank) {
  return hvd::capi::Guard("hvd_join", [&] { return hvd::capi::Join(process_set, last_rank); });
}

}  // extern "C"
