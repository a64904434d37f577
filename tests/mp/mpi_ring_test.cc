// MpiRingAllreduce (core/backends/mpi/mpi_ring_allreduce.cc, the cross-host
// step of hierarchical allreduce on MPI) on its own, under mpirun at np 2-4:
// exact results on every rank for counts below, at and around multiples of
// the ranks and of the piece size (so blocks of unequal length, a short
// last piece and an empty one), tiny pieces (many messages in flight),
// in place and not, integer, float and 16-bit types, every reduction.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/backends/mpi/mpi_ring_allreduce.h"
#include "core/common/types.h"

namespace hvd {
namespace {

int Rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int Size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// Small values: sums over 4 ranks and products fit every type exactly.
int64_t V(int r, int64_t i) {
  return 1 + (r * 7 + i) % 3;
}

int64_t Expected(ReduceOp op, int64_t i) {
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
uint16_t ToHalf(int64_t v) {
  float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (v == 0) return 0;
  const uint32_t exp = ((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>((exp << 10) | ((b >> 13) & 0x3ff));
}

double FromHalf(uint16_t h) {
  if (h == 0) return 0;
  const int exp = (h >> 10) & 0x1f;
  const double mant = 1.0 + (h & 0x3ff) / 1024.0;
  return mant * std::ldexp(1.0, exp - 15);
}

template <typename T>
int64_t Reduce(MpiRingAllreduce& ring, DataType dt, ReduceOp op, int64_t n, bool in_place) {
  std::vector<T> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), T{});
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (sizeof(T) == 2) {
      in[i] = ToHalf(V(Rank(), i));
    } else {
      in[i] = static_cast<T>(V(Rank(), i));
    }
  }
  T* dst = in_place ? in.data() : out.data();
  const Status s = ring.Run(MPI_COMM_WORLD, in.data(), dst, n, dt, op);
  EXPECT_TRUE(s.ok()) << s.message();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double got;
    if constexpr (sizeof(T) == 2) {
      got = FromHalf(dst[i]);
    } else {
      got = static_cast<double>(dst[i]);
    }
    if (got != static_cast<double>(Expected(op, i)) && bad++ < 3) {
      ADD_FAILURE() << "n=" << n << " element " << i << ": " << got << " != " << Expected(op, i);
    }
  }
  if (!in_place) {  // the input is left alone
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (sizeof(T) != 2) bad += in[i] != static_cast<T>(V(Rank(), i));
    }
  }
  return bad;
}

std::vector<int64_t> Counts(int64_t piece_elems) {
  const int64_t p = Size();
  std::vector<int64_t> v = {0, 1, 2, p - 1, p, p + 1, 2 * p + 1, 1000, 4099};
  // Blocks of k pieces and one element more or less, so the longer blocks
  // have a last piece of one element and the shorter an empty one.
  for (int64_t k : {int64_t{1}, int64_t{3}}) {
    for (int64_t d : {int64_t{-1}, int64_t{0}, int64_t{1}}) v.push_back(p * k * piece_elems + d);
    v.push_back(p * k * piece_elems + 1 + (p - 1) * k * piece_elems);  // first block one longer
  }
  v.push_back(70001);
  return v;
}

TEST(MpiRing, EveryOpAndCountWithTinyPieces) {
  // 8-byte pieces: two floats per message, hundreds of messages in flight.
  MpiRingAllreduce ring(8);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (int64_t n : Counts(2)) {
      if (n < 0 || n > 5000) continue;
      EXPECT_EQ(Reduce<float>(ring, DataType::kFloat32, op, n, false), 0) << "f32 n=" << n;
      EXPECT_EQ(Reduce<int32_t>(ring, DataType::kInt32, op, n, true), 0) << "i32 n=" << n;
    }
  }
}

TEST(MpiRing, PieceBoundaries) {
  // 1 KiB pieces (256 floats, 128 doubles), counts around whole pieces.
  MpiRingAllreduce ring(1024);
  for (int64_t n : Counts(256)) {
    if (n < 0) continue;
    EXPECT_EQ(Reduce<float>(ring, DataType::kFloat32, ReduceOp::kSum, n, false), 0) << "n=" << n;
    EXPECT_EQ(Reduce<float>(ring, DataType::kFloat32, ReduceOp::kSum, n, true), 0) << "n=" << n;
  }
  for (int64_t n : Counts(128)) {
    if (n < 0) continue;
    EXPECT_EQ(Reduce<double>(ring, DataType::kFloat64, ReduceOp::kMax, n, true), 0) << "n=" << n;
    EXPECT_EQ(Reduce<int64_t>(ring, DataType::kInt64, ReduceOp::kSum, n, false), 0) << "n=" << n;
  }
}

TEST(MpiRing, HalfAndDefaultPieces) {
  MpiRingAllreduce small(6);  // 3 halves per piece
  for (int64_t n : Counts(3)) {
    if (n < 0 || n > 5000) continue;
    EXPECT_EQ(Reduce<uint16_t>(small, DataType::kFloat16, ReduceOp::kSum, n, false), 0)
        << "n=" << n;
  }
  MpiRingAllreduce ring;  // 256 KiB: several pieces from 1 M floats at np=4
  for (int64_t n : {int64_t{300007}, int64_t{1} << 20, (int64_t{1} << 20) + 5}) {
    EXPECT_EQ(Reduce<float>(ring, DataType::kFloat32, ReduceOp::kSum, n, true), 0) << "n=" << n;
  }
}

}  // namespace
}  // namespace hvd

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
