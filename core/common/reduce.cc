#include "core/common/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/common/dtype_dispatch.h"
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

// dst[i] = f(dst[i], src[i]) in blocks of a fixed size. GCC's -O2 cost
// model vectorises only loops whose vector code replaces the scalar loop
// entirely, and dst may be src, so the plain loop stays scalar, several
// times slower on large buffers. Each block is computed into a
// temporary before it is stored, which keeps dst == src exact.
template <typename T, typename F>
void Blocked(T* dst, const T* src, int64_t n, F f) {
  constexpr int kBlock = 16;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T tmp[kBlock];
    for (int k = 0; k < kBlock; ++k) tmp[k] = f(dst[i + k], src[i + k]);
    for (int k = 0; k < kBlock; ++k) dst[i + k] = tmp[k];
  }
  for (; i < n; ++i) dst[i] = f(dst[i], src[i]);
}

template <typename T>
void ReduceTyped(T* dst, const T* src, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      Blocked(dst, src, n, [](T a, T b) { return Add(a, b); });
      break;
    case ReduceOp::kMin:
      Blocked(dst, src, n, [](T a, T b) { return std::min(a, b); });
      break;
    case ReduceOp::kMax:
      Blocked(dst, src, n, [](T a, T b) { return std::max(a, b); });
      break;
    case ReduceOp::kProduct:
      Blocked(dst, src, n, [](T a, T b) { return Mul(a, b); });
      break;
    case ReduceOp::kAdasum:  // not element-wise: core/ops/adasum.cc, never here
      break;
  }
}

// H: one of the 16-bit float formats below (H::ToF, H::FromF).
template <typename H>
void Reduce16(uint16_t* dst, const uint16_t* src, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    float a = H::ToF(dst[i]), b = H::ToF(src[i]), r = 0;
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
    dst[i] = H::FromF(r);
  }
}

template <typename T>
void ScaleTyped(T* dst, const T* src, int64_t n, double f) {
  // Integers: the product in double, truncated toward zero, as Horovod
  // computes scaling and averages (its programs and tests compare against
  // exactly that).
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<double>(src[i]) * f);
}

template <>
void ScaleTyped<double>(double* dst, const double* src, int64_t n, double f) {
  if (double d; ScaleIsDivision(f, &d)) {
    Blocked(dst, src, n, [d](double, double s) { return s / d; });
    return;
  }
  Blocked(dst, src, n, [f](double, double s) { return s * f; });
}

template <>
void ScaleTyped<float>(float* dst, const float* src, int64_t n, double f) {
  if (double d; ScaleIsDivision(f, &d)) {
    const float fd = static_cast<float>(d);
    Blocked(dst, src, n, [fd](float, float s) { return s / fd; });
    return;
  }
  // Multiply in float so it vectorises; the factor is a float too.
  const float ff = static_cast<float>(f);
  Blocked(dst, src, n, [ff](float, float s) { return s * ff; });
}

template <typename H>
void Scale16(uint16_t* dst, const uint16_t* src, int64_t n, double f) {
  if (double d; ScaleIsDivision(f, &d)) {
    const float fd = static_cast<float>(d);
    for (int64_t i = 0; i < n; ++i) dst[i] = H::FromF(H::ToF(src[i]) / fd);
    return;
  }
  const float ff = static_cast<float>(f);
  for (int64_t i = 0; i < n; ++i) dst[i] = H::FromF(H::ToF(src[i]) * ff);
}

// The 16-bit float formats compute in float through these conversions.
template <DataType D>
struct Half {
  static constexpr bool kIs = false;
};
template <>
struct Half<DataType::kFloat16> {
  static constexpr bool kIs = true;
  static float ToF(uint16_t v) { return Float16ToFloat(v); }
  static uint16_t FromF(float f) { return FloatToFloat16(f); }
};
template <>
struct Half<DataType::kBFloat16> {
  static constexpr bool kIs = true;
  static float ToF(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t FromF(float f) { return FloatToBFloat16(f); }
};

// Calls plain(T* dst, const T* src) for the element type T of dt, or, for
// the 16-bit floats, half(Half<D>{}, uint16_t* dst, const uint16_t* src).
template <typename Plain, typename Half16Fn>
void VisitHost(DataType dt, void* dst, const void* src, Plain plain, Half16Fn half) {
  VisitDataType(
      dt,
      [&](auto tag) {
        constexpr DataType D = decltype(tag)::value;
        using T = HostElementT<D>;
        if constexpr (Half<D>::kIs) {
          half(Half<D>{}, static_cast<T*>(dst), static_cast<const T*>(src));
        } else {
          plain(static_cast<T*>(dst), static_cast<const T*>(src));
        }
      },
      [] {});
}

}  // namespace

void ReduceInto(void* dst, const void* src, int64_t n, DataType dt, ReduceOp op) {
  VisitHost(
      dt, dst, src, [&](auto* d, const auto* s) { ReduceTyped(d, s, n, op); },
      [&](auto h, uint16_t* d, const uint16_t* s) { Reduce16<decltype(h)>(d, s, n, op); });
}

bool ScaleIsDivision(double f, double* n) {
  if (!(f > 0 && f < 1)) return false;
  const double d = std::nearbyint(1.0 / f);
  if (d > (1 << 24) || 1.0 / d != f) return false;
  const auto i = static_cast<uint32_t>(d);
  if ((i & (i - 1)) == 0) return false;
  *n = d;
  return true;
}

void ScaleCopy(void* dst, const void* src, int64_t n, DataType dt, double f) {
  if (n <= 0) return;  // empty tensors may have null data (memcpy must not see it)
  if (f == 1.0) {
    if (dst != src) std::memcpy(dst, src, static_cast<size_t>(n) * DataTypeSize(dt));
    return;
  }
  VisitHost(
      dt, dst, src, [&](auto* d, const auto* s) { ScaleTyped(d, s, n, f); },
      [&](auto h, uint16_t* d, const uint16_t* s) { Scale16<decltype(h)>(d, s, n, f); });
}

void ScaleBuffer(void* buf, int64_t n, DataType dt, double f) {
  ScaleCopy(buf, buf, n, dt, f);
}

void ZeroBuffer(void* buf, int64_t n, DataType dt) {
  if (n <= 0) return;
  std::memset(buf, 0, static_cast<size_t>(n) * DataTypeSize(dt));  // +0.0 in every float format
}

}  // namespace hvd
