// Typed host tensors for the multi-process tests: values are set and read
// as doubles whatever the dtype, so one test body covers every dtype.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/common/half.h"
#include "hvd/hvd.h"

namespace hvdtest {

// b8: bool (DLPack code 6, one byte), which reduces logically and so is
// not in AllTypes (no average, no arithmetic): see BoolAnd/BoolOr tests.
enum class T { u8, i8, i32, i64, f16, bf16, f32, f64, i16, b8 };
// Every type that reduces arithmetically (every op, average included).
inline const std::vector<T>& AllTypes() {
  static const std::vector<T> all = {T::u8,  T::i8,   T::i16, T::i32, T::i64,
                                     T::f16, T::bf16, T::f32, T::f64};
  return all;
}
// Every type hvd moves (allgather, broadcast, alltoall): AllTypes and bool.
inline const std::vector<T>& MovedTypes() {
  static const std::vector<T> all = {T::u8,  T::i8,   T::i16, T::i32, T::i64,
                                     T::f16, T::bf16, T::f32, T::f64, T::b8};
  return all;
}
inline const char* Name(T t) {
  static const char* n[] = {"uint8",    "int8",    "int32",   "int64", "float16",
                            "bfloat16", "float32", "float64", "int16", "bool"};
  return n[static_cast<int>(t)];
}
inline bool IsFloat(T t) {
  return t == T::f16 || t == T::bf16 || t == T::f32 || t == T::f64;
}
inline bool IsHalf(T t) {
  return t == T::f16 || t == T::bf16;
}

inline DLDataType ToDL(T t) {
  switch (t) {
    case T::u8:
      return {kDLUInt, 8, 1};
    case T::i8:
      return {kDLInt, 8, 1};
    case T::i32:
      return {kDLInt, 32, 1};
    case T::i64:
      return {kDLInt, 64, 1};
    case T::f16:
      return {kDLFloat, 16, 1};
    case T::bf16:
      return {kDLBfloat, 16, 1};
    case T::f32:
      return {kDLFloat, 32, 1};
    case T::f64:
      return {kDLFloat, 64, 1};
    case T::i16:
      return {kDLInt, 16, 1};
    case T::b8:
      return {6 /* kDLBool */, 8, 1};
  }
  return {kDLFloat, 32, 1};
}

inline size_t Size(T t) {
  switch (t) {
    case T::u8:
    case T::i8:
    case T::b8:
      return 1;
    case T::f16:
    case T::bf16:
    case T::i16:
      return 2;
    case T::i32:
    case T::f32:
      return 4;
    default:
      return 8;
  }
}

class Tensor {
 public:
  // On the heap, or in `memory` the caller owns (at least the tensor's bytes).
  Tensor(T t, std::vector<int64_t> shape, uint8_t* memory = nullptr)
      : type_(t), shape_(std::move(shape)) {
    int64_t n = 1;
    for (auto d : shape_) n *= d;
    n_ = n;
    if (!memory) {
      bytes_.assign(static_cast<size_t>(n) * Size(t) + 1, 0);  // +1: never a null data pointer
      memory = bytes_.data();
    }
    data_ = memory;
    dl_.data = data_;
    dl_.device = {kDLCPU, 0};
    dl_.ndim = static_cast<int32_t>(shape_.size());
    dl_.dtype = ToDL(t);
    dl_.shape = shape_.data();
    dl_.strides = nullptr;
    dl_.byte_offset = 0;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  int64_t n() const { return n_; }
  T type() const { return type_; }
  DLTensor* dl() { return &dl_; }

  void Set(int64_t i, double v) { Store(data_ + i * Size(type_), type_, v); }
  double Get(int64_t i) const { return Load(data_ + i * Size(type_), type_); }

  static void Store(uint8_t* p, T t, double v) {
    switch (t) {
      case T::u8: {
        uint8_t x = static_cast<uint8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case T::i8: {
        int8_t x = static_cast<int8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case T::i32: {
        int32_t x = static_cast<int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case T::i64: {
        int64_t x = static_cast<int64_t>(v);
        std::memcpy(p, &x, 8);
        break;
      }
      case T::f16: {
        uint16_t x = hvd::FloatToFloat16(static_cast<float>(v));
        std::memcpy(p, &x, 2);
        break;
      }
      case T::bf16: {
        uint16_t x = hvd::FloatToBFloat16(static_cast<float>(v));
        std::memcpy(p, &x, 2);
        break;
      }
      case T::f32: {
        float x = static_cast<float>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case T::f64:
        std::memcpy(p, &v, 8);
        break;
      case T::i16: {
        int16_t x = static_cast<int16_t>(v);
        std::memcpy(p, &x, 2);
        break;
      }
      case T::b8: {
        uint8_t x = v != 0 ? 1 : 0;
        std::memcpy(p, &x, 1);
        break;
      }
    }
  }
  static double Load(const uint8_t* p, T t) {
    switch (t) {
      case T::u8: {
        uint8_t x;
        std::memcpy(&x, p, 1);
        return x;
      }
      case T::i8: {
        int8_t x;
        std::memcpy(&x, p, 1);
        return x;
      }
      case T::i32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        return x;
      }
      case T::i64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        return static_cast<double>(x);
      }
      case T::f16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        return hvd::Float16ToFloat(x);
      }
      case T::bf16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        return hvd::BFloat16ToFloat(x);
      }
      case T::f32: {
        float x;
        std::memcpy(&x, p, 4);
        return x;
      }
      case T::f64: {
        double x;
        std::memcpy(&x, p, 8);
        return x;
      }
      case T::i16: {
        int16_t x;
        std::memcpy(&x, p, 2);
        return x;
      }
      case T::b8: {
        uint8_t x;
        std::memcpy(&x, p, 1);
        return x != 0 ? 1 : 0;  // any non-zero byte is true
      }
    }
    return 0;
  }

 private:
  T type_;
  std::vector<int64_t> shape_;
  int64_t n_ = 0;
  std::vector<uint8_t> bytes_;
  uint8_t* data_;
  DLTensor dl_{};
};

// This rank and the world size, short for the tests' expected values.
inline int R() {
  return hvd_rank();
}
inline int N() {
  return hvd_size();
}

// Waits for `h` (up to timeout_ms), releases it and returns its status.
inline hvd_status WaitAndRelease(hvd_handle h, int timeout_ms) {
  hvd_status s = hvd_wait(h, timeout_ms);
  hvd_release(h);
  return s;
}

}  // namespace hvdtest
