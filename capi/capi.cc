// The C ABI: argument checks, status codes and the thread-local last error
// over the C++ core. No collective logic lives here.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "core/backends/registry.h"
#include "core/runtime/handle_table.h"
#include "core/runtime/runtime.h"
#include "hvd/hvd.h"

using hvd::Code;
using hvd::Status;

static_assert(static_cast<int>(Code::kOk) == HVD_OK, "status codes must match");
static_assert(static_cast<int>(Code::kInProgress) == HVD_IN_PROGRESS, "status codes must match");
static_assert(static_cast<int>(Code::kNotInitialized) == HVD_ERR_NOT_INITIALIZED, "");
static_assert(static_cast<int>(Code::kInvalidArgument) == HVD_ERR_INVALID_ARGUMENT, "");
static_assert(static_cast<int>(Code::kMismatch) == HVD_ERR_MISMATCH, "");
static_assert(static_cast<int>(Code::kShutDown) == HVD_ERR_SHUT_DOWN, "");
static_assert(static_cast<int>(Code::kBackend) == HVD_ERR_BACKEND, "");
static_assert(static_cast<int>(Code::kPeerLost) == HVD_ERR_PEER_LOST, "");
static_assert(static_cast<int>(Code::kTimeout) == HVD_ERR_TIMEOUT, "");
static_assert(static_cast<int>(Code::kUnsupported) == HVD_ERR_UNSUPPORTED, "");
static_assert(static_cast<int>(Code::kInternal) == HVD_ERR_INTERNAL, "");
static_assert(static_cast<int>(Code::kAlreadyInitialized) == HVD_ERR_ALREADY_INITIALIZED, "");

namespace {

thread_local std::string t_last_error;

// Like errno, the last error is only meaningful after a call that failed:
// successful calls leave it alone (so hvd_release after a failed hvd_wait
// does not erase the message).
hvd_status Report(const Status& s) {
  if (!s.ok() && s.code() != Code::kInProgress) t_last_error = s.message();
  return static_cast<hvd_status>(s.code());
}

hvd_status Fail(Code code, const std::string& message) {
  return Report(Status(code, message));
}

hvd::Runtime& RT() {
  return hvd::Runtime::Get();
}

// Query helper: -1 and a last error when not initialised.
int Query(const char* fn, int (*get)(const hvd::Topology&)) {
  if (!RT().initialized()) {
    Fail(Code::kNotInitialized, std::string(fn) + ": hvd is not initialized");
    return -1;
  }
  return get(RT().topology());
}

// Copies the caller's options over the defaults, honouring struct_size so
// binaries built against an older (shorter) struct keep working.
template <typename T>
Status ReadOptions(const T* in, T* out, const char* fn) {
  if (!in) return Status::OK();
  if (in->struct_size < sizeof(size_t) || in->struct_size > sizeof(T)) {
    return Status::Invalid(std::string(fn) + ": options.struct_size is " +
                           std::to_string(in->struct_size) +
                           "; initialise the struct with its *_INIT macro");
  }
  std::memcpy(static_cast<void*>(out), in, in->struct_size);
  out->struct_size = sizeof(T);
  return Status::OK();
}

Status ReadOpOptions(const hvd_op_options* in, hvd_op_options* out, const char* fn) {
  *out = HVD_OP_OPTIONS_INIT;
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

// What hvd needs of a validated DLTensor, without copying its shape.
struct TensorView {
  hvd::DataType dtype = hvd::DataType::kFloat32;
  hvd::Device device;
  int64_t num_elements = 0;
  void* data = nullptr;
};

// Validates a DLTensor. The "fn: what" prefix of a message is built only on
// failure: this runs once or twice per submitted tensor.
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, TensorView* v) {
  auto where = [fn, what] { return std::string(fn) + ": " + what; };
  if (!t) return Status::Invalid(where() + " is NULL");
  if (t->ndim < 0 || t->ndim > 32) {
    return Status::Invalid(where() + " has ndim " + std::to_string(t->ndim) + " (0..32 allowed)");
  }
  if (t->ndim > 0 && !t->shape) return Status::Invalid(where() + " has ndim > 0 but shape is NULL");
  Status s = hvd::FromDLDataType(t->dtype, &v->dtype);
  if (!s.ok()) return Status::Invalid(where() + ": " + s.message());
  s = hvd::FromDLDevice(t->device, &v->device);
  if (!s.ok()) return Status::Invalid(where() + ": " + s.message());
#ifndef HVD_HAVE_CUDA
  if (v->device.kind == hvd::DeviceKind::kCUDA) {
    return Status::Unsupported(where() +
                               " is on a CUDA device; this build of hvd handles CPU "
                               "tensors only (GPU support: HVD_WITH_CUDA/NCCL)");
  }
#endif
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
  if (!t->data && n > 0) return Status::Invalid(where() + " has NULL data");
  v->num_elements = n;
  v->data = static_cast<uint8_t*>(t->data) + t->byte_offset;
  return Status::OK();
}

// Validates a DLTensor and fills the tensor part of an entry.
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, hvd::TensorEntry* e) {
  TensorView v;
  HVD_RETURN_IF_ERROR(ReadTensor(fn, what, t, &v));
  hvd::Request& q = e->request;
  q.dtype = v.dtype;
  q.device = v.device;
  q.shape.assign(t->shape, t->shape + t->ndim);
  e->num_elements = v.num_elements;
  e->bytes = v.num_elements * static_cast<int64_t>(hvd::DataTypeSize(v.dtype));
  e->input = v.data;
  return Status::OK();
}

// Validates an allreduce output against its input's entry.
Status ReadOutput(const char* fn, const char* what, const char* input_what, const DLTensor* t,
                  hvd::TensorEntry* e) {
  TensorView v;
  HVD_RETURN_IF_ERROR(ReadTensor(fn, what, t, &v));
  if (v.num_elements != e->num_elements || v.dtype != e->request.dtype) {
    return Status::Invalid(
        std::string(fn) + ": " + what + " must have the " + input_what +
        "'s dtype and element count (" + input_what + " " + hvd::DataTypeName(e->request.dtype) +
        " x" + std::to_string(e->num_elements) + ", " + what + " " + hvd::DataTypeName(v.dtype) +
        " x" + std::to_string(v.num_elements) + ")");
  }
  e->output = v.data;
  return Status::OK();
}

void* OutputPointer(const DLTensor* t) {
  return static_cast<uint8_t*>(t->data) + t->byte_offset;
}

Status CheckReduceOp(const char* fn, hvd_reduce_op op) {
  if (op < HVD_OP_SUM || op > HVD_OP_ADASUM) {
    return Status::Invalid(std::string(fn) + ": unknown reduce op " +
                           std::to_string(static_cast<int>(op)));
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

Status CheckAdasumTensor(const char* fn, const char* what, const hvd::TensorEntry& e) {
  const hvd::DataType dt = e.request.dtype;
  if (dt != hvd::DataType::kFloat16 && dt != hvd::DataType::kBFloat16 &&
      dt != hvd::DataType::kFloat32 && dt != hvd::DataType::kFloat64) {
    return Status::Invalid(std::string(fn) + ": HVD_OP_ADASUM needs a floating-point " + what +
                           ", got " + hvd::DataTypeName(dt));
  }
  if (e.request.device.kind != hvd::DeviceKind::kCPU) {
    return Status(Code::kUnsupported, std::string(fn) +
                                          ": HVD_OP_ADASUM runs on CPU tensors "
                                          "only (MPI or Gloo); " +
                                          what + " is on a CUDA device");
  }
  return Status::OK();
}

hvd::ResultAllocator MakeAllocator(const hvd_op_options& o) {
  if (!o.allocator) return nullptr;
  hvd_allocator fn = o.allocator;
  void* user = o.allocator_user_data;
  return [fn, user](size_t bytes, const std::vector<int64_t>& shape, hvd::DataType dt,
                    const hvd::Device& dev) {
    return fn(bytes, shape.data(), static_cast<int>(shape.size()), hvd::ToDLDataType(dt),
              hvd::ToDLDevice(dev), user);
  };
}

// Registers a handle covering `count` entries, fills the common request
// fields and submits. On failure nothing stays behind.
hvd_status Submit(const char* fn, hvd::TensorEntry* entries, size_t count, const hvd_op_options& o,
                  hvd_handle* handle) {
  if (!handle) return Fail(Code::kInvalidArgument, std::string(fn) + ": handle is NULL");
  hvd::HandleState::Callback cb;
  if (o.callback) {
    hvd_callback fnp = o.callback;
    void* user = o.callback_user_data;
    cb = [fnp, user](int64_t id, const Status& s) {
      fnp(id, static_cast<hvd_status>(s.code()), user);
    };
  }
  auto state = std::make_shared<hvd::HandleState>(static_cast<int>(count), std::move(cb));
  for (size_t i = 0; i < count; ++i) {
    auto& e = entries[i];
    e.handle = state;
    e.owns_result = i == 0;
    e.request.process_set = o.process_set;
    e.request.prescale = o.prescale_factor;
    e.request.postscale = o.postscale_factor;
    e.allocator = MakeAllocator(o);
    e.cuda_stream = o.cuda_stream;
    if (e.request.name.empty()) {
      e.request.name = RT().AutoName(e.request.type, o.process_set);
    }
  }
  const int64_t id = hvd::HandleTable::Global().Add(state);
  state->set_id(id);
  Status s = RT().Submit(entries, count);
  if (!s.ok()) {
    hvd::HandleTable::Global().Release(id);
    *handle = 0;
    return Report(Status(s.code(), std::string(fn) + ": " + s.message()));
  }
  *handle = id;
  return Report(Status::OK());
}

Status CheckInit(const char* fn) {
  if (!RT().initialized()) {
    return Status(Code::kNotInitialized,
                  std::string(fn) + ": hvd is not initialized (call hvd_init first)");
  }
  return Status::OK();
}

hvd::BackendChoice ToChoice(hvd_backend b) {
  switch (b) {
    case HVD_BACKEND_MPI:
      return hvd::BackendChoice::kMpi;
    case HVD_BACKEND_GLOO:
      return hvd::BackendChoice::kGloo;
    default:
      return hvd::BackendChoice::kAuto;
  }
}

// Runs a control operation (barrier, join, process sets) to completion.
hvd_status RunBlocking(const char* fn, hvd::TensorEntry entry, int32_t set, int64_t* value) {
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.process_set = set;
  hvd_handle h = 0;
  hvd_status st = Submit(fn, &entry, 1, o, &h);
  if (st != HVD_OK) return st;
  Status err;
  auto state = hvd::HandleTable::Global().Find(h, &err);
  Status s = state->Wait(-1);
  if (value) *value = state->result().value;
  hvd::HandleTable::Global().Release(h);
  if (!s.ok()) return Report(Status(s.code(), std::string(fn) + ": " + s.message()));
  return Report(Status::OK());
}

}  // namespace

extern "C" {

const char* hvd_status_string(hvd_status s) {
  switch (s) {
    case HVD_OK:
      return "HVD_OK: success";
    case HVD_IN_PROGRESS:
      return "HVD_IN_PROGRESS: the operation is still running";
    case HVD_ERR_NOT_INITIALIZED:
      return "HVD_ERR_NOT_INITIALIZED: hvd is not initialized";
    case HVD_ERR_INVALID_ARGUMENT:
      return "HVD_ERR_INVALID_ARGUMENT: invalid argument";
    case HVD_ERR_MISMATCH:
      return "HVD_ERR_MISMATCH: ranks disagree about a tensor";
    case HVD_ERR_SHUT_DOWN:
      return "HVD_ERR_SHUT_DOWN: hvd has been shut down";
    case HVD_ERR_BACKEND:
      return "HVD_ERR_BACKEND: the communication backend failed";
    case HVD_ERR_PEER_LOST:
      return "HVD_ERR_PEER_LOST: a peer rank was lost";
    case HVD_ERR_TIMEOUT:
      return "HVD_ERR_TIMEOUT: timed out";
    case HVD_ERR_UNSUPPORTED:
      return "HVD_ERR_UNSUPPORTED: not supported by this build or backend";
    case HVD_ERR_INTERNAL:
      return "HVD_ERR_INTERNAL: internal error in hvd";
    case HVD_ERR_ALREADY_INITIALIZED:
      return "HVD_ERR_ALREADY_INITIALIZED: hvd is already initialized";
  }
  return "unknown hvd_status";
}

const char* hvd_last_error(void) {
  return t_last_error.c_str();
}

const char* hvd_version(void) {
  return HVD_VERSION_STRING;
}

void hvd_init_options_init(hvd_init_options* opts) {
  if (opts) *opts = HVD_INIT_OPTIONS_INIT;
}

void hvd_op_options_init(hvd_op_options* opts) {
  if (opts) *opts = HVD_OP_OPTIONS_INIT;
}

hvd_status hvd_init_with(const hvd_init_options* opts) {
  hvd_init_options o = HVD_INIT_OPTIONS_INIT;
  Status s = ReadOptions(opts, &o, "hvd_init_with");
  if (!s.ok()) return Report(s);
  hvd::InitArgs args;
  args.controller = ToChoice(o.controller);
  args.cpu_operations = ToChoice(o.cpu_operations);
  args.use_mpi_comm = o.use_mpi_comm != 0;
  args.mpi_comm = o.mpi_comm;
  s = RT().Init(args);
  if (!s.ok()) return Report(Status(s.code(), "hvd_init: " + s.message()));
  return Report(s);
}

hvd_status hvd_init(void) {
  return hvd_init_with(nullptr);
}

hvd_status hvd_init_mpi_comm(int fortran_comm) {
#ifdef HVD_HAVE_MPI
  hvd_init_options o = HVD_INIT_OPTIONS_INIT;
  o.use_mpi_comm = 1;
  o.mpi_comm = fortran_comm;
  return hvd_init_with(&o);
#else
  (void)fortran_comm;
  return Fail(Code::kUnsupported, "hvd_init_mpi_comm: this libhvd was built without MPI");
#endif
}

hvd_status hvd_shutdown(void) {
  return Report(RT().Shutdown());
}

int hvd_is_initialized(void) {
  return RT().initialized() ? 1 : 0;
}

int hvd_rank(void) {
  return Query("hvd_rank", [](const hvd::Topology& t) { return t.rank; });
}
int hvd_size(void) {
  return Query("hvd_size", [](const hvd::Topology& t) { return t.size; });
}
int hvd_local_rank(void) {
  return Query("hvd_local_rank", [](const hvd::Topology& t) { return t.local_rank; });
}
int hvd_local_size(void) {
  return Query("hvd_local_size", [](const hvd::Topology& t) { return t.local_size; });
}
int hvd_cross_rank(void) {
  return Query("hvd_cross_rank", [](const hvd::Topology& t) { return t.cross_rank; });
}
int hvd_cross_size(void) {
  return Query("hvd_cross_size", [](const hvd::Topology& t) { return t.cross_size; });
}
int hvd_is_homogeneous(void) {
  return Query("hvd_is_homogeneous", [](const hvd::Topology& t) { return t.homogeneous ? 1 : 0; });
}

int hvd_mpi_threads_supported(void) {
#ifdef HVD_HAVE_MPI
  return RT().initialized() && std::strcmp(RT().controller_name(), "mpi") == 0 &&
                 hvd::MpiThreadsSupported()
             ? 1
             : 0;
#else
  return 0;
#endif
}

int hvd_mpi_enabled(void) {
  return RT().initialized() && (std::strcmp(RT().controller_name(), "mpi") == 0 ||
                                std::strcmp(RT().data_name(), "mpi") == 0);
}

int hvd_gloo_enabled(void) {
  return RT().initialized() && (std::strcmp(RT().controller_name(), "gloo") == 0 ||
                                std::strcmp(RT().data_name(), "gloo") == 0);
}

int hvd_mpi_built(void) {
  return hvd::FindBackend(hvd::BackendChoice::kMpi) != nullptr;
}
int hvd_gloo_built(void) {
  return hvd::FindBackend(hvd::BackendChoice::kGloo) != nullptr;
}

int hvd_nccl_built(void) {
#ifdef HVD_HAVE_NCCL
  return 1;
#else
  return 0;
#endif
}

int hvd_cuda_built(void) {
#ifdef HVD_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

hvd_status hvd_allreduce_async(const char* name, const DLTensor* input, DLTensor* output,
                               hvd_reduce_op op, const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_allreduce_async";
  hvd_op_options o;
  hvd::TensorEntry e;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok()) s = CheckReduceOp(fn, op);
  if (s.ok()) s = ReadTensor(fn, "input", input, &e);
  if (s.ok()) s = ReadOutput(fn, "output", "input", output, &e);
  if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumTensor(fn, "input", e);
  if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumSet(fn, o.process_set);
  if (!s.ok()) return Report(s);
  e.request.type = hvd::OpType::kAllreduce;
  e.request.reduce_op = static_cast<hvd::ReduceOp>(op);
  if (name) e.request.name = name;
  return Submit(fn, &e, 1, o, handle);
}

hvd_status hvd_grouped_allreduce_async(const char* const* names, const DLTensor* const* inputs,
                                       DLTensor* const* outputs, int count, hvd_reduce_op op,
                                       const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_grouped_allreduce_async";
  hvd_op_options o;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok()) s = CheckReduceOp(fn, op);
  if (s.ok() && (count <= 0 || !inputs || !outputs)) {
    s = Status::Invalid(std::string(fn) + ": needs count > 0 and non-NULL inputs/outputs");
  }
  std::vector<hvd::TensorEntry> v(s.ok() ? static_cast<size_t>(count) : 0);
  for (int i = 0; s.ok() && i < count; ++i) {
    const std::string what = "inputs[" + std::to_string(i) + "]";
    const std::string owhat = "outputs[" + std::to_string(i) + "]";
    s = ReadTensor(fn, what.c_str(), inputs[i], &v[i]);
    if (s.ok()) s = ReadOutput(fn, owhat.c_str(), what.c_str(), outputs[i], &v[i]);
    if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumTensor(fn, what.c_str(), v[i]);
    if (!s.ok()) break;
  }
  if (s.ok() && op == HVD_OP_ADASUM) s = CheckAdasumSet(fn, o.process_set);
  for (int i = 0; s.ok() && i < count; ++i) {
    v[i].request.type = hvd::OpType::kAllreduce;
    v[i].request.reduce_op = static_cast<hvd::ReduceOp>(op);
    v[i].request.name =
        names && names[i] ? names[i] : RT().AutoName(hvd::OpType::kAllreduce, o.process_set);
  }
  if (!s.ok()) return Report(s);
  const std::string group = "group:" + v[0].request.name;
  for (auto& e : v) {
    e.request.group = group;
    e.request.group_size = count;
  }
  return Submit(fn, v.data(), v.size(), o, handle);
}

hvd_status hvd_allgather_async(const char* name, const DLTensor* input, const hvd_op_options* opts,
                               hvd_handle* handle) {
  const char* fn = "hvd_allgather_async";
  hvd_op_options o;
  hvd::TensorEntry e;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok()) s = ReadTensor(fn, "input", input, &e);
  if (!s.ok()) return Report(s);
  e.request.type = hvd::OpType::kAllgather;
  if (name) e.request.name = name;
  return Submit(fn, &e, 1, o, handle);
}

hvd_status hvd_broadcast_async(const char* name, DLTensor* tensor, int root_rank,
                               const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_broadcast_async";
  hvd_op_options o;
  hvd::TensorEntry e;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok()) s = ReadTensor(fn, "tensor", tensor, &e);
  int set_rank = 0, set_size = 0;
  if (s.ok()) s = RT().SetInfo(o.process_set, &set_rank, &set_size);
  if (s.ok() && (root_rank < 0 || root_rank >= set_size)) {
    s = Status::Invalid(std::string(fn) + ": root rank " + std::to_string(root_rank) +
                        " is outside process set " + std::to_string(o.process_set) + " (size " +
                        std::to_string(set_size) + ")");
  }
  if (!s.ok()) return Report(s);
  e.output = OutputPointer(tensor);
  e.request.type = hvd::OpType::kBroadcast;
  e.request.root = root_rank;
  if (name) e.request.name = name;
  return Submit(fn, &e, 1, o, handle);
}

hvd_status hvd_alltoall_async(const char* name, const DLTensor* input, const int32_t* splits,
                              int nsplits, const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_alltoall_async";
  hvd_op_options o;
  hvd::TensorEntry e;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok()) s = ReadTensor(fn, "input", input, &e);
  int set_rank = 0, set_size = 0;
  if (s.ok()) s = RT().SetInfo(o.process_set, &set_rank, &set_size);
  if (s.ok() && e.request.shape.empty()) {
    s = Status::Invalid(std::string(fn) + ": input must have at least one dimension");
  }
  if (s.ok()) {
    const int64_t dim0 = e.request.shape[0];
    if (splits) {
      int64_t sum = 0;
      bool negative = false;
      for (int i = 0; i < nsplits; ++i) {
        sum += splits[i];
        negative |= splits[i] < 0;
      }
      if (nsplits != set_size || negative || sum != dim0) {
        s = Status::Invalid(std::string(fn) +
                            ": splits must have one non-negative entry per "
                            "rank of the set (" +
                            std::to_string(set_size) + ") summing to dimension 0 (" +
                            std::to_string(dim0) + "); got " + std::to_string(nsplits) +
                            " entries summing to " + std::to_string(sum));
      } else {
        e.request.splits.assign(splits, splits + nsplits);
      }
    } else if (dim0 % set_size != 0) {
      s = Status::Invalid(std::string(fn) + ": without splits, dimension 0 (" +
                          std::to_string(dim0) + ") must be divisible by the set size (" +
                          std::to_string(set_size) + ")");
    }
  }
  if (!s.ok()) return Report(s);
  e.request.type = hvd::OpType::kAlltoall;
  if (name) e.request.name = name;
  return Submit(fn, &e, 1, o, handle);
}

hvd_status hvd_reducescatter_async(const char* name, const DLTensor* input, hvd_reduce_op op,
                                   const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_reducescatter_async";
  hvd_op_options o;
  hvd::TensorEntry e;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, &o, fn);
  if (s.ok() && op != HVD_OP_SUM && op != HVD_OP_AVERAGE) {
    s = Status::Invalid(std::string(fn) + ": only HVD_OP_SUM and HVD_OP_AVERAGE are supported");
  }
  if (s.ok()) s = ReadTensor(fn, "input", input, &e);
  if (!s.ok()) return Report(s);
  e.request.type = hvd::OpType::kReducescatter;
  e.request.reduce_op = static_cast<hvd::ReduceOp>(op);
  if (name) e.request.name = name;
  return Submit(fn, &e, 1, o, handle);
}

hvd_status hvd_poll(hvd_handle handle) {
  Status err;
  auto state = hvd::HandleTable::Global().Find(handle, &err);
  if (!state) return Report(Status(err.code(), "hvd_poll: " + err.message()));
  return Report(state->Poll());
}

hvd_status hvd_wait(hvd_handle handle, int64_t timeout_ms) {
  Status err;
  auto state = hvd::HandleTable::Global().Find(handle, &err);
  if (!state) return Report(Status(err.code(), "hvd_wait: " + err.message()));
  return Report(state->Wait(timeout_ms));
}

hvd_status hvd_release(hvd_handle handle) {
  return Report(hvd::HandleTable::Global().Release(handle));
}

hvd_status hvd_result(hvd_handle handle, DLTensor* result) {
  if (!result) return Fail(Code::kInvalidArgument, "hvd_result: result is NULL");
  Status err;
  auto state = hvd::HandleTable::Global().Find(handle, &err);
  if (!state) return Report(Status(err.code(), "hvd_result: " + err.message()));
  Status s = state->Poll();
  if (s.code() == Code::kInProgress) {
    return Fail(Code::kInvalidArgument, "hvd_result: the operation has not finished");
  }
  if (!s.ok()) return Report(s);
  hvd::OpResult& r = state->result();
  if (!r.data && r.shape.empty()) {
    return Fail(Code::kInvalidArgument,
                "hvd_result: this operation has no hvd-owned result (allreduce and broadcast "
                "write to the caller's tensor)");
  }
  result->data = r.data;
  result->device = hvd::ToDLDevice(r.device);
  result->ndim = static_cast<int32_t>(r.shape.size());
  result->dtype = hvd::ToDLDataType(r.dtype);
  result->shape = r.shape.data();
  result->strides = nullptr;
  result->byte_offset = 0;
  return Report(Status::OK());
}

hvd_status hvd_result_splits(hvd_handle handle, int32_t* splits, int n, int* count) {
  Status err;
  auto state = hvd::HandleTable::Global().Find(handle, &err);
  if (!state) return Report(Status(err.code(), "hvd_result_splits: " + err.message()));
  Status s = state->Poll();
  if (s.code() == Code::kInProgress) {
    return Fail(Code::kInvalidArgument, "hvd_result_splits: the operation has not finished");
  }
  if (!s.ok()) return Report(s);
  const auto& rs = state->result().recv_splits;
  if (rs.empty()) return Fail(Code::kInvalidArgument, "hvd_result_splits: not an alltoall handle");
  if (count) *count = static_cast<int>(rs.size());
  if (splits) {
    if (n < static_cast<int>(rs.size())) {
      return Fail(Code::kInvalidArgument, "hvd_result_splits: room for " + std::to_string(n) +
                                              " splits, " + std::to_string(rs.size()) + " needed");
    }
    std::copy(rs.begin(), rs.end(), splits);
  }
  return Report(Status::OK());
}

hvd_status hvd_barrier(int32_t process_set) {
  Status s = CheckInit("hvd_barrier");
  if (!s.ok()) return Report(s);
  hvd::TensorEntry e;
  e.request.type = hvd::OpType::kBarrier;
  return RunBlocking("hvd_barrier", std::move(e), process_set, nullptr);
}

hvd_status hvd_join(int32_t process_set, int* last_rank) {
  Status s = CheckInit("hvd_join");
  if (!s.ok()) return Report(s);
  hvd::TensorEntry e;
  e.request.type = hvd::OpType::kJoin;
  e.request.name = "join." + std::to_string(process_set);
  int64_t last = -1;
  hvd_status st = RunBlocking("hvd_join", std::move(e), process_set, &last);
  if (st == HVD_OK && last_rank) *last_rank = static_cast<int>(last);
  return st;
}

hvd_status hvd_add_process_set(const int32_t* ranks, int n, int32_t* id) {
  const char* fn = "hvd_add_process_set";
  Status s = CheckInit(fn);
  if (!s.ok()) return Report(s);
  if (!ranks || n <= 0 || !id)
    return Fail(Code::kInvalidArgument, std::string(fn) + ": needs ranks, n > 0 and id");
  std::set<int32_t> unique(ranks, ranks + n);
  const int size = RT().topology().size;
  if (static_cast<int>(unique.size()) != n || *unique.begin() < 0 || *unique.rbegin() >= size) {
    return Fail(Code::kInvalidArgument, std::string(fn) + ": ranks must be distinct and in [0, " +
                                            std::to_string(size) + ")");
  }
  hvd::TensorEntry e;
  e.request.type = hvd::OpType::kAddProcessSet;
  e.request.set_ranks.assign(unique.begin(), unique.end());
  int64_t value = -1;
  hvd_status st = RunBlocking(fn, std::move(e), 0, &value);
  if (st == HVD_OK) *id = static_cast<int32_t>(value);
  return st;
}

hvd_status hvd_remove_process_set(int32_t id) {
  const char* fn = "hvd_remove_process_set";
  Status s = CheckInit(fn);
  if (!s.ok()) return Report(s);
  int rank = 0, size = 0;
  s = RT().SetInfo(id, &rank, &size);
  if (s.ok() && id == 0) s = Status::Invalid("the global process set 0 cannot be removed");
  if (!s.ok()) return Report(Status(s.code(), std::string(fn) + ": " + s.message()));
  hvd::TensorEntry e;
  e.request.type = hvd::OpType::kRemoveProcessSet;
  e.request.set_ranks = {id};
  return RunBlocking(fn, std::move(e), 0, nullptr);
}

int hvd_process_set_rank(int32_t id) {
  int rank = -1, size = -1;
  Status s = RT().SetInfo(id, &rank, &size);
  if (!s.ok()) Report(s);
  return s.ok() ? rank : -1;
}

int hvd_process_set_size(int32_t id) {
  int rank = -1, size = -1;
  Status s = RT().SetInfo(id, &rank, &size);
  if (!s.ok()) Report(s);
  return s.ok() ? size : -1;
}

int hvd_process_set_included(int32_t id) {
  int rank = -1, size = -1;
  Status s = RT().SetInfo(id, &rank, &size);
  if (!s.ok()) Report(s);
  return s.ok() && rank >= 0 ? 1 : 0;
}

hvd_status hvd_start_timeline(const char* path, int mark_cycles) {
  if (!path) return Fail(Code::kInvalidArgument, "hvd_start_timeline: path is NULL");
  Status s = RT().StartTimeline(path, mark_cycles != 0);
  if (!s.ok()) return Report(Status(s.code(), "hvd_start_timeline: " + s.message()));
  return HVD_OK;
}

hvd_status hvd_stop_timeline(void) {
  Status s = RT().StopTimeline();
  if (!s.ok()) return Report(Status(s.code(), "hvd_stop_timeline: " + s.message()));
  return HVD_OK;
}

}  // extern "C"

// For the other translation units of the C layer (capi_elastic.cc): sets the
// thread's last error exactly as the functions above do.
namespace hvd {
namespace capi {
hvd_status ReportStatus(const Status& s) {
  return Report(s);
}
}  // namespace capi
}  // namespace hvd
