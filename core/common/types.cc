#include "core/common/types.h"

namespace hvd {

size_t DataTypeSize(DataType dt) {
  switch (dt) {
    case DataType::kUInt8:
    case DataType::kInt8:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

const char* DataTypeName(DataType dt) {
  static const char* const kNames[] = {"uint8",   "int8",     "int32",   "int64",
                                       "float16", "bfloat16", "float32", "float64"};
  auto i = static_cast<size_t>(dt);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

const char* ReduceOpName(ReduceOp op) {
  static const char* const kNames[] = {"sum", "average", "min", "max", "product", "adasum"};
  auto i = static_cast<size_t>(op);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

const char* OpTypeName(OpType t) {
  static const char* const kNames[] = {"allreduce", "allgather",       "broadcast",
                                       "alltoall",  "reducescatter",   "barrier",
                                       "join",      "add_process_set", "remove_process_set"};
  auto i = static_cast<size_t>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

const char* OpTypeUpperName(OpType t) {
  static const char* const kNames[] = {"ALLREDUCE", "ALLGATHER",       "BROADCAST",
                                       "ALLTOALL",  "REDUCESCATTER",   "BARRIER",
                                       "JOIN",      "ADD_PROCESS_SET", "REMOVE_PROCESS_SET"};
  auto i = static_cast<size_t>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "UNKNOWN";
}

std::string DeviceName(const Device& d) {
  return d.kind == DeviceKind::kCPU ? "cpu" : "cuda:" + std::to_string(d.id);
}

Status FromDLDataType(DLDataType in, DataType* out) {
  if (in.lanes != 1) return Status::Invalid("vector dtypes (lanes != 1) are not supported");
  switch (in.code) {
    case kDLUInt:
      if (in.bits == 8) return *out = DataType::kUInt8, Status::OK();
      break;
    case kDLInt:
      if (in.bits == 8) return *out = DataType::kInt8, Status::OK();
      if (in.bits == 32) return *out = DataType::kInt32, Status::OK();
      if (in.bits == 64) return *out = DataType::kInt64, Status::OK();
      break;
    case kDLFloat:
      if (in.bits == 16) return *out = DataType::kFloat16, Status::OK();
      if (in.bits == 32) return *out = DataType::kFloat32, Status::OK();
      if (in.bits == 64) return *out = DataType::kFloat64, Status::OK();
      break;
    case kDLBfloat:
      if (in.bits == 16) return *out = DataType::kBFloat16, Status::OK();
      break;
    default:
      break;
  }
  return Status::Invalid("unsupported dtype (code " + std::to_string(in.code) + ", " +
                         std::to_string(in.bits) +
                         " bits); supported: uint8, int8, int32, int64, "
                         "float16, bfloat16, float32, float64");
}

DLDataType ToDLDataType(DataType dt) {
  DLDataType r;
  r.lanes = 1;
  r.bits = static_cast<uint8_t>(DataTypeSize(dt) * 8);
  switch (dt) {
    case DataType::kUInt8:
      r.code = kDLUInt;
      break;
    case DataType::kInt8:
    case DataType::kInt32:
    case DataType::kInt64:
      r.code = kDLInt;
      break;
    case DataType::kBFloat16:
      r.code = kDLBfloat;
      break;
    default:
      r.code = kDLFloat;
      break;
  }
  return r;
}

Status FromDLDevice(DLDevice in, Device* out) {
  if (in.device_type == kDLCPU || in.device_type == kDLCUDAHost) {
    *out = Device{DeviceKind::kCPU, 0};
    return Status::OK();
  }
  if (in.device_type == kDLCUDA || in.device_type == kDLCUDAManaged) {
    *out = Device{DeviceKind::kCUDA, in.device_id};
    return Status::OK();
  }
  return Status::Invalid("unsupported device type " + std::to_string(in.device_type) +
                         " (supported: CPU, CUDA)");
}

DLDevice ToDLDevice(const Device& d) {
  DLDevice r;
  r.device_type = d.kind == DeviceKind::kCPU ? kDLCPU : kDLCUDA;
  r.device_id = d.id;
  return r;
}

bool IsFloatingPoint(DataType dt) {
  return dt == DataType::kFloat16 || dt == DataType::kBFloat16 || dt == DataType::kFloat32 ||
         dt == DataType::kFloat64;
}

}  // namespace hvd
