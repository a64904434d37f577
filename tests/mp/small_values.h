// The inputs of the MPI-launched allreduce tests of hvd's own transports
// (ring_allreduce_test.cc, shm_comm_test.cc): small integers per rank and
// element whose sums and products over 4 ranks are exact in every type,
// float16 included, and what each reduction of them must give.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/common/types.h"

namespace hvd {
namespace mptest {

inline int Rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int Size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

inline int64_t V(int r, int64_t i) {
  return 1 + (r * 7 + i) % 3;
}

inline int64_t Expected(ReduceOp op, int64_t i) {
  int64_t acc = op == ReduceOp::kProduct ? 1
                : op == ReduceOp::kMin   ? 1000
                : op == ReduceOp::kMax   ? -1000
                                         : 0;
  for (int r = 0; r < Size(); ++r) {
    const int64_t v = V(r, i);
    if (op == ReduceOp::kSum) acc += v;
    if (op == ReduceOp::kProduct) acc *= v;
    if (op == ReduceOp::kMin) acc = std::min(acc, v);
    if (op == ReduceOp::kMax) acc = std::max(acc, v);
  }
  return acc;
}

// Float16 (IEEE half) of the small integers used here, and back.
inline uint16_t ToHalf(int64_t v) {
  float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (v == 0) return 0;
  const uint32_t exp = ((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>((exp << 10) | ((b >> 13) & 0x3ff));
}

inline double FromHalf(uint16_t h) {
  if (h == 0) return 0;
  const int exp = (h >> 10) & 0x1f;
  const double mant = 1.0 + (h & 0x3ff) / 1024.0;
  return mant * std::ldexp(1.0, exp - 15);
}

}  // namespace mptest
}  // namespace hvd
