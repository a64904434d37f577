#include "bench/soak/soak_data.h"

#include <cmath>
#include <cstring>

namespace soak {

namespace {

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int32_t fexp = static_cast<int32_t>((x >> 23) & 0xff);
  uint32_t mant = x & 0x7fffff;
  if (fexp == 0) return static_cast<uint16_t>(sign);  // zero (float subnormals round to 0)
  const int32_t exp = fexp - 127 + 15;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {  // half subnormal
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const uint32_t x =
      exp == 31 ? (sign | 0x7f800000 | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

template <typename T>
T At(const void* buf, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(buf) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void Put(void* buf, int64_t i, T v) {
  std::memcpy(static_cast<char*>(buf) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

}  // namespace

const std::vector<Dtype>& AllDtypes() {
  static const std::vector<Dtype> all = {
      {"uint8", {kDLUInt, 8, 1}, 1, false, false},
      {"int8", {kDLInt, 8, 1}, 1, false, true},
      {"int32", {kDLInt, 32, 1}, 4, false, true},
      {"int64", {kDLInt, 64, 1}, 8, false, true},
      {"float16", {kDLFloat, 16, 1}, 2, true, true},
      {"bfloat16", {kDLBfloat, 16, 1}, 2, true, true},
      {"float32", {kDLFloat, 32, 1}, 4, true, true},
      {"float64", {kDLFloat, 64, 1}, 8, true, true},
  };
  return all;
}

double Load(const Dtype& t, const void* buf, int64_t i) {
  switch (t.dl.code) {
    case kDLUInt:
      return At<uint8_t>(buf, i);
    case kDLInt:
      return t.bytes == 1   ? At<int8_t>(buf, i)
             : t.bytes == 4 ? At<int32_t>(buf, i)
                            : static_cast<double>(At<int64_t>(buf, i));
    case kDLBfloat:
      return BFloat16ToFloat(At<uint16_t>(buf, i));
    default:
      return t.bytes == 2   ? HalfToFloat(At<uint16_t>(buf, i))
             : t.bytes == 4 ? At<float>(buf, i)
                            : At<double>(buf, i);
  }
}

void Store(const Dtype& t, void* buf, int64_t i, double v) {
  switch (t.dl.code) {
    case kDLUInt:
      return Put(buf, i, static_cast<uint8_t>(v));
    case kDLInt:
      if (t.bytes == 1) return Put(buf, i, static_cast<int8_t>(v));
      if (t.bytes == 4) return Put(buf, i, static_cast<int32_t>(v));
      return Put(buf, i, static_cast<int64_t>(v));
    case kDLBfloat:
      return Put(buf, i, FloatToBFloat16(static_cast<float>(v)));
    default:
      if (t.bytes == 2) return Put(buf, i, FloatToHalf(static_cast<float>(v)));
      if (t.bytes == 4) return Put(buf, i, static_cast<float>(v));
      return Put(buf, i, v);
  }
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int64_t Draw(uint64_t key, int rank, int64_t i, int64_t lo, int64_t hi) {
  const uint64_t h = Mix(key ^ (static_cast<uint64_t>(rank) << 56) ^ static_cast<uint64_t>(i));
  return lo + static_cast<int64_t>(h % static_cast<uint64_t>(hi - lo + 1));
}

Range RangeFor(Use use, const Dtype& t) {
  switch (use) {
    case Use::kSum:  // 8 ranks * 8 * (prescale 2) * (postscale 2) = 256: exact in bfloat16
      return t.is_signed ? Range{-8, 8} : Range{0, 8};
    case Use::kProduct:  // {-1, 1, 2}: see InputValue in soak_ops.cc
      return t.is_signed ? Range{-1, 2} : Range{1, 2};
    case Use::kMinMax:
    case Use::kPlain:
      break;
  }
  return t.is_signed ? Range{-100, 100} : Range{0, 200};
}

}  // namespace soak
