// Element types, reduction ops and collective kinds shared by every layer of
// the core. Values are part of the wire format: append, never renumber.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/common/status.h"

namespace hvd {

enum class DataType : uint8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kBFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kInt16 = 8,
  // One byte, 0 false, anything else true. Reductions are logical: sum and
  // max are OR, min and product are AND (the C API maps them to max/min).
  kBool = 9,
};
constexpr int kNumDataTypes = 10;

// kAdasum: allreduce only, floating-point CPU tensors (core/ops/adasum.cc).
enum class ReduceOp : uint8_t {
  kSum = 0,
  kAverage = 1,
  kMin = 2,
  kMax = 3,
  kProduct = 4,
  kAdasum = 5
};
constexpr int kNumReduceOps = 6;

enum class OpType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kAlltoall = 3,
  kReducescatter = 4,
  kBarrier = 5,
  kJoin = 6,
  kAddProcessSet = 7,
  kRemoveProcessSet = 8,
};
constexpr int kNumOpTypes = 9;

enum class DeviceKind : uint8_t { kCPU = 0, kCUDA = 1 };

struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int32_t id = 0;
  bool operator==(const Device& o) const { return kind == o.kind && id == o.id; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

size_t DataTypeSize(DataType dt);
const char* DataTypeName(DataType dt);
const char* ReduceOpName(ReduceOp op);
const char* OpTypeName(OpType t);       // "allreduce"
const char* OpTypeUpperName(OpType t);  // "ALLREDUCE", for the timeline
std::string DeviceName(const Device& d);

// DLPack <-> hvd conversions.
Status FromDLDataType(DLDataType in, DataType* out);
DLDataType ToDLDataType(DataType dt);
Status FromDLDevice(DLDevice in, Device* out);
DLDevice ToDLDevice(const Device& d);

}  // namespace hvd
