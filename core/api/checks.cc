#include "core/api/checks.h"

#include <cmath>

#include "core/runtime/runtime.h"

namespace hvd {
namespace api {

Status CheckOptions(const OpOptions& o) {
  if (!std::isfinite(o.prescale) || !std::isfinite(o.postscale)) {
    return Status::Invalid("prescale/postscale factors must be finite");
  }
  if (o.process_set < 0) {
    return Status::Invalid("negative process set id " + std::to_string(o.process_set));
  }
  return Status::OK();
}

void FillInput(const Tensor& t, TensorEntry* e) {
  Request& q = e->request;
  q.dtype = t.dtype;
  q.device = t.device;
  q.shape.assign(t.shape, t.shape + t.ndim);
  e->num_elements = t.num_elements;
  e->bytes = t.num_elements * static_cast<int64_t>(DataTypeSize(t.dtype));
  e->input = t.data;
}

Status CheckOutput(const char* what, const char* input_what, const Tensor& t, TensorEntry* e) {
  if (t.num_elements != e->num_elements || t.dtype != e->request.dtype) {
    return Status::Invalid(
        std::string(what) + " must have the " + input_what + "'s dtype and element count (" +
        input_what + " " + DataTypeName(e->request.dtype) + " x" + std::to_string(e->num_elements) +
        ", " + what + " " + DataTypeName(t.dtype) + " x" + std::to_string(t.num_elements) + ")");
  }
  e->output = t.data;
  return Status::OK();
}

Status CheckScatterOp(ReduceOp op) {
  if (op != ReduceOp::kSum && op != ReduceOp::kAverage) {
    return Status::Invalid("only HVD_OP_SUM and HVD_OP_AVERAGE are supported");
  }
  return Status::OK();
}

Status CheckAdasumTensor(const char* what, const TensorEntry& e) {
  const DataType dt = e.request.dtype;
  if (dt != DataType::kFloat16 && dt != DataType::kBFloat16 && dt != DataType::kFloat32 &&
      dt != DataType::kFloat64) {
    return Status::Invalid(std::string("HVD_OP_ADASUM needs a floating-point ") + what + ", got " +
                           DataTypeName(dt));
  }
  if (e.request.device.kind != DeviceKind::kCPU) {
    return Status::Unsupported(
        std::string("HVD_OP_ADASUM runs on CPU tensors only (MPI or Gloo); ") + what +
        " is on a CUDA device");
  }
  return Status::OK();
}

Status SetReduceOp(const char* what, ReduceOp op, const OpOptions& o, TensorEntry* e) {
  e->request.reduce_op = op;
  if (e->request.dtype != DataType::kBool) return Status::OK();
  if (op == ReduceOp::kAverage || op == ReduceOp::kAdasum) {
    return Status::Invalid(std::string(what) + " is bool, which reduces with " +
                           "HVD_OP_SUM/MAX (logical or) or HVD_OP_MIN/PRODUCT (logical and), not " +
                           ReduceOpName(op));
  }
  if (o.prescale != 1.0 || o.postscale != 1.0) {
    return Status::Invalid(std::string(what) +
                           " is bool, which cannot be scaled (prescale/postscale factors must "
                           "be 1)");
  }
  if (op == ReduceOp::kSum) e->request.reduce_op = ReduceOp::kMax;
  if (op == ReduceOp::kProduct) e->request.reduce_op = ReduceOp::kMin;
  return Status::OK();
}

std::string ItemName(const char* list, size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "]";
}

}  // namespace api
}  // namespace hvd
