#include "core/common/types.h"

#include <array>
#include <utility>

#include "core/common/dtype_dispatch.h"

namespace hvd {

size_t DataTypeSize(DataType dt) {
  return VisitDataType(
      dt, [](auto tag) { return sizeof(HostElementT<decltype(tag)::value>); },
      [] { return size_t{0}; });
}

const char* DataTypeName(DataType dt) {
  static const char* const kNames[] = {"uint8",    "int8",    "int32",   "int64", "float16",
                                       "bfloat16", "float32", "float64", "int16", "bool"};
  return PerDataType(kNames, dt, "unknown");
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

// DLPack's kDLBool (DLPack 0.8; the dlpack.h hvd builds with may predate it).
constexpr uint8_t kDLBoolCode = 6;

// DLPack's type code and bits of each DataType, in enum order.
constexpr uint8_t kDLCodes[] = {kDLUInt,   kDLInt,   kDLInt,   kDLInt, kDLFloat,
                                kDLBfloat, kDLFloat, kDLFloat, kDLInt, kDLBoolCode};

template <size_t... I>
constexpr std::array<uint8_t, kNumDataTypes> ElementBits(std::index_sequence<I...>) {
  return {{static_cast<uint8_t>(8 * sizeof(std::tuple_element_t<I, HostElements>))...}};
}
constexpr std::array<uint8_t, kNumDataTypes> kDLBits =
    ElementBits(std::make_index_sequence<kNumDataTypes>{});

// The inverse, for one lookup per submitted tensor: the DataType of DLPack
// code c (0..kMaxDLCode) with 8 << k bits at [c][k]; -1: none.
constexpr int kMaxDLCode = kDLBoolCode;
constexpr int BitsIndex(int bits) {
  return bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : bits == 64 ? 3 : -1;
}
constexpr std::array<std::array<int8_t, 4>, kMaxDLCode + 1> kFromDL = [] {
  std::array<std::array<int8_t, 4>, kMaxDLCode + 1> t{};
  for (auto& row : t) {
    for (auto& v : row) v = -1;
  }
  for (int i = 0; i < kNumDataTypes; ++i)
    t[kDLCodes[i]][BitsIndex(kDLBits[i])] = static_cast<int8_t>(i);
  return t;
}();

Status FromDLDataType(DLDataType in, DataType* out) {
  if (in.lanes != 1) return Status::Invalid("vector dtypes (lanes != 1) are not supported");
  const int k = BitsIndex(in.bits);
  const int found = in.code <= kMaxDLCode && k >= 0 ? kFromDL[in.code][k] : -1;
  if (found >= 0) {
    *out = static_cast<DataType>(found);
    return Status::OK();
  }
  return Status::Invalid("unsupported dtype (code " + std::to_string(in.code) + ", " +
                         std::to_string(in.bits) +
                         " bits); supported: uint8, int8, int16, int32, int64, "
                         "float16, bfloat16, float32, float64, bool");
}

DLDataType ToDLDataType(DataType dt) {
  DLDataType r;
  r.lanes = 1;
  r.bits = static_cast<uint8_t>(DataTypeSize(dt) * 8);
  r.code = PerDataType(kDLCodes, dt, static_cast<uint8_t>(kDLFloat));
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

}  // namespace hvd
