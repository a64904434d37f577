// C arguments into core/api/api.h's types: options, callbacks, reduce ops,
// DLTensors and the arrays of grouped operations.
#include <cmath>
#include <string>
#include <vector>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

api::Allocator ToAllocator(hvd_allocator fn, void* user) {
  if (!fn) return nullptr;
  return
      [fn, user](size_t bytes, const std::vector<int64_t>& shape, DataType dt, const Device& dev) {
        return fn(bytes, shape.data(), static_cast<int>(shape.size()), ToDLDataType(dt),
                  ToDLDevice(dev), user);
      };
}

// The element count of a validated shape; errors for negative or absurd
// ones and for strides that are not row-major.
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

}  // namespace

Status ReadOpOptions(const hvd_op_options* in, const char* fn, api::OpOptions* out) {
  if (!in) return Status::OK();  // *out holds the defaults: the common case, per tensor
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  HVD_RETURN_IF_ERROR(ReadOptions(in, &o, fn));
  out->process_set = o.process_set;
  out->prescale = o.prescale_factor;
  out->postscale = o.postscale_factor;
  out->allocator = ToAllocator(o.allocator, o.allocator_user_data);
  out->callback = ToCallback(o.callback, o.callback_user_data);
  out->cuda_stream = o.cuda_stream;
  return Status::OK();
}

api::Callback ToCallback(hvd_callback fn, void* user) {
  if (!fn) return nullptr;
  return
      [fn, user](int64_t id, const Status& s) { fn(id, static_cast<hvd_status>(s.code()), user); };
}

Status ReadReduceOp(const char* fn, int op, ReduceOp* out) {
  if (op < HVD_OP_SUM || op > HVD_OP_ADASUM) {
    return Status::Invalid(std::string(fn) + ": unknown reduce op " + std::to_string(op));
  }
  *out = static_cast<ReduceOp>(op);
  return Status::OK();
}

// The "fn: what" prefix of a message is built only on failure: this runs
// once or twice per submitted tensor.
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, api::Tensor* v) {
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
  if (v->device.kind == DeviceKind::kCUDA && !api::CudaBuilt()) {
    return Status::Unsupported(where() +
                               " is on a CUDA device; this build of hvd handles CPU "
                               "tensors only (GPU support: HVD_WITH_CUDA/NCCL)");
  }
  int64_t n = 0;
  HVD_RETURN_IF_ERROR(CountElements(t, where, &n));
  if (!t->data && n > 0) return Status::Invalid(where() + " has NULL data");
  v->shape = t->shape;
  v->ndim = t->ndim;
  v->num_elements = n;
  v->data = static_cast<uint8_t*>(t->data) + t->byte_offset;
  return Status::OK();
}

Status ReadOutput(const char* fn, const char* what, const DLTensor* input, const api::Tensor& in,
                  const DLTensor* t, api::Tensor* out) {
  if (t && SameLayout(t, input) && (t->data || in.num_elements == 0)) {
    *out = in;
    out->data = static_cast<uint8_t*>(t->data) + t->byte_offset;
    return Status::OK();
  }
  return ReadTensor(fn, what, t, out);
}

Status ReadSingle(const char* fn, const hvd_op_options* opts, const char* what,
                  const DLTensor* input, const hvd_handle* handle, api::OpOptions* o,
                  api::Tensor* t) {
  HVD_RETURN_IF_ERROR(CheckInit(fn));
  HVD_RETURN_IF_ERROR(ReadOpOptions(opts, fn, o));
  HVD_RETURN_IF_ERROR(ReadTensor(fn, what, input, t));
  if (!handle) return Status::Invalid(std::string(fn) + ": handle is NULL");
  return Status::OK();
}

Status ReadGroup(const char* fn, const char* const* names, const DLTensor* const* inputs,
                 DLTensor* const* outputs, bool with_outputs, int count,
                 std::vector<api::GroupItem>* items) {
  if (count <= 0 || !inputs || (with_outputs && !outputs)) {
    return Status::Invalid(std::string(fn) + ": needs count > 0 and non-NULL inputs" +
                           (with_outputs ? "/outputs" : ""));
  }
  items->resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const std::string what = "inputs[" + std::to_string(i) + "]";
    api::GroupItem& item = (*items)[static_cast<size_t>(i)];
    if (names && names[i]) item.name = names[i];
    HVD_RETURN_IF_ERROR(ReadTensor(fn, what.c_str(), inputs[i], &item.input));
    if (with_outputs) {
      const std::string owhat = "outputs[" + std::to_string(i) + "]";
      HVD_RETURN_IF_ERROR(
          ReadOutput(fn, owhat.c_str(), inputs[i], item.input, outputs[i], &item.output));
    }
  }
  return Status::OK();
}

}  // namespace capi
}  // namespace hvd
