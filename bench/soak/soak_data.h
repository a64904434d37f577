// Deterministic tensor contents for the soak: every rank can compute every
// other rank's input from (op key, rank, element), and so the exact result
// of any collective, locally. Values are small integers (or their products
// with powers of two), so every dtype, every summation order and every
// backend gives them exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hvd/hvd.h"

namespace soak {

struct Dtype {
  const char* name;
  DLDataType dl;
  int bytes;
  bool is_float;
  bool is_signed;
};

// uint8, int8, int32, int64, float16, bfloat16, float32, float64.
const std::vector<Dtype>& AllDtypes();

// Element i of a buffer of type t as a double, and back. Exact for the
// values the soak uses.
double Load(const Dtype& t, const void* buf, int64_t i);
void Store(const Dtype& t, void* buf, int64_t i, double v);

// splitmix64's finaliser: a cheap, well-mixed hash.
uint64_t Mix(uint64_t x);

// A value in [lo, hi], fixed by (key, rank, i).
int64_t Draw(uint64_t key, int rank, int64_t i, int64_t lo, int64_t hi);

// What the values of one collective are used for; decides their range so
// that results fit every dtype exactly, up to 8 ranks.
enum class Use { kPlain, kSum, kMinMax, kProduct };

struct Range {
  int64_t lo, hi;
};
Range RangeFor(Use use, const Dtype& t);

}  // namespace soak
