#include "core/common/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/common/half.h"

namespace hvd {
namespace {

// Integer sums and products wrap (as MPI's do) instead of overflowing
// signed arithmetic, which would be undefined behaviour.
template <typename T>
T Add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <typename T>
T Mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<sizeof(T) < sizeof(unsigned), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T>
void ReduceTyped(T* dst, const T* src, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      for (int64_t i = 0; i < n; ++i) dst[i] = Add(dst[i], src[i]);
      break;
    case ReduceOp::kMin:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::min(dst[i], src[i]);
      break;
    case ReduceOp::kMax:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::max(dst[i], src[i]);
      break;
    case ReduceOp::kProduct:
      for (int64_t i = 0; i < n; ++i) dst[i] = Mul(dst[i], src[i]);
      break;
    case ReduceOp::kAdasum:  // not element-wise: core/ops/adasum.cc, never here
      break;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void Reduce16(uint16_t* dst, const uint16_t* src, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    float a = ToF(dst[i]), b = ToF(src[i]), r = 0;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage:
        r = a + b;
        break;
      case ReduceOp::kMin:
        r = std::min(a, b);
        break;
      case ReduceOp::kMax:
        r = std::max(a, b);
        break;
      case ReduceOp::kProduct:
        r = a * b;
        break;
      case ReduceOp::kAdasum:  // not element-wise: core/ops/adasum.cc, never here
        r = a;
        break;
    }
    dst[i] = FromF(r);
  }
}

template <typename T>
void ScaleTyped(T* dst, const T* src, int64_t n, double f) {
  // Integers round to nearest: 6 * (1.0 / 3) is 1.999..., which must give 2.
  for (int64_t i = 0; i < n; ++i)
    dst[i] = static_cast<T>(std::llround(static_cast<double>(src[i]) * f));
}

template <>
void ScaleTyped<double>(double* dst, const double* src, int64_t n, double f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * f;
}

template <>
void ScaleTyped<float>(float* dst, const float* src, int64_t n, double f) {
  // Multiply in float so the compiler vectorises; the factor is a float too.
  const float ff = static_cast<float>(f);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * ff;
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void Scale16(uint16_t* dst, const uint16_t* src, int64_t n, double f) {
  const float ff = static_cast<float>(f);
  for (int64_t i = 0; i < n; ++i) dst[i] = FromF(ToF(src[i]) * ff);
}

}  // namespace

void ReduceInto(void* dst, const void* src, int64_t n, DataType dt, ReduceOp op) {
  switch (dt) {
    case DataType::kUInt8:
      return ReduceTyped(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, op);
    case DataType::kInt8:
      return ReduceTyped(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n, op);
    case DataType::kInt32:
      return ReduceTyped(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n, op);
    case DataType::kInt64:
      return ReduceTyped(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n, op);
    case DataType::kFloat32:
      return ReduceTyped(static_cast<float*>(dst), static_cast<const float*>(src), n, op);
    case DataType::kFloat64:
      return ReduceTyped(static_cast<double*>(dst), static_cast<const double*>(src), n, op);
    case DataType::kFloat16:
      return Reduce16<Float16ToFloat, FloatToFloat16>(static_cast<uint16_t*>(dst),
                                                      static_cast<const uint16_t*>(src), n, op);
    case DataType::kBFloat16:
      return Reduce16<BFloat16ToFloat, FloatToBFloat16>(static_cast<uint16_t*>(dst),
                                                        static_cast<const uint16_t*>(src), n, op);
  }
}

void ScaleCopy(void* dst, const void* src, int64_t n, DataType dt, double f) {
  if (n <= 0) return;  // empty tensors may have null data (memcpy must not see it)
  if (f == 1.0) {
    if (dst != src) std::memcpy(dst, src, static_cast<size_t>(n) * DataTypeSize(dt));
    return;
  }
  switch (dt) {
    case DataType::kUInt8:
      return ScaleTyped(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, f);
    case DataType::kInt8:
      return ScaleTyped(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n, f);
    case DataType::kInt32:
      return ScaleTyped(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n, f);
    case DataType::kInt64:
      return ScaleTyped(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n, f);
    case DataType::kFloat32:
      return ScaleTyped(static_cast<float*>(dst), static_cast<const float*>(src), n, f);
    case DataType::kFloat64:
      return ScaleTyped(static_cast<double*>(dst), static_cast<const double*>(src), n, f);
    case DataType::kFloat16:
      return Scale16<Float16ToFloat, FloatToFloat16>(static_cast<uint16_t*>(dst),
                                                     static_cast<const uint16_t*>(src), n, f);
    case DataType::kBFloat16:
      return Scale16<BFloat16ToFloat, FloatToBFloat16>(static_cast<uint16_t*>(dst),
                                                       static_cast<const uint16_t*>(src), n, f);
  }
}

void ScaleBuffer(void* buf, int64_t n, DataType dt, double f) {
  ScaleCopy(buf, buf, n, dt, f);
}

void ZeroBuffer(void* buf, int64_t n, DataType dt) {
  if (n <= 0) return;
  std::memset(buf, 0, static_cast<size_t>(n) * DataTypeSize(dt));  // +0.0 in every float format
}

}  // namespace hvd
