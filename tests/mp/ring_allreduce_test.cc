// The two ring allreduces of hierarchical allreduce's cross-host step on
// their own, under mpirun at np 2-4: MpiRingAllreduce
// (core/algorithms/mpi/mpi_ring_allreduce.cc) and TcpRing
// (core/algorithms/tcp_ring.cc, on loopback sockets, set up over an
// MpiComm). Exact results on every rank for counts below, at and around
// multiples of the ranks and of the piece size (so blocks of unequal
// length, a short last piece and an empty one), tiny pieces (many messages
// in flight), in place and not, integer, float and 16-bit types, every
// reduction. TcpRing also: a set-up that fails on one member fails on all,
// and a call fails (never hangs) when a neighbour closes, stalls, or
// another thread aborts it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/algorithms/mpi/mpi_ring_allreduce.h"
#include "core/algorithms/tcp_ring.h"
#include "core/backends/mpi/mpi_comm.h"
#include "core/common/types.h"
#include "tests/mp/small_values.h"

namespace hvd {
namespace {

using mptest::Expected;
using mptest::FromHalf;
using mptest::Rank;
using mptest::Size;
using mptest::ToHalf;
using mptest::V;

// One of the two rings with a given piece size: in, out, count, type, op.
using Ring = std::function<Status(const void*, void*, int64_t, DataType, ReduceOp)>;

// A Comm over a duplicate of MPI_COMM_WORLD, for TcpRing's set-up.
std::unique_ptr<Comm> WorldComm() {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  return std::make_unique<MpiComm>(dup, 0);
}

std::unique_ptr<TcpRing> MakeTcpRing(double timeout_s = 60) {
  std::unique_ptr<Comm> comm = WorldComm();
  std::unique_ptr<TcpRing> ring;
  const Status s = TcpRing::Create(comm.get(), "127.0.0.1", timeout_s, {}, &ring);
  EXPECT_TRUE(s.ok()) << s.message();
  return ring;
}

enum class Impl { kMpi, kTcp };

Ring MakeRing(Impl impl, int64_t piece_bytes) {
  if (impl == Impl::kMpi) {
    auto ring = std::make_shared<MpiRingAllreduce>(piece_bytes);
    return [ring](const void* in, void* out, int64_t n, DataType dt, ReduceOp op) {
      return ring->Run(MPI_COMM_WORLD, in, out, n, dt, op);
    };
  }
  std::shared_ptr<TcpRing> ring = MakeTcpRing();
  if (!ring) return nullptr;
  ring->set_piece_bytes(piece_bytes);
  return [ring](const void* in, void* out, int64_t n, DataType dt, ReduceOp op) {
    if (in != out && n > 0) std::memcpy(out, in, static_cast<size_t>(n) * DataTypeSize(dt));
    return ring->Allreduce(out, n, dt, op);
  };
}

template <typename T>
int64_t Reduce(const Ring& ring, DataType dt, ReduceOp op, int64_t n, bool in_place) {
  std::vector<T> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), T{});
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (sizeof(T) == 2) {
      in[i] = ToHalf(V(Rank(), i));
    } else {
      in[i] = static_cast<T>(V(Rank(), i));
    }
  }
  T* dst = in_place ? in.data() : out.data();
  const Status s = ring(in.data(), dst, n, dt, op);
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

class RingTest : public ::testing::TestWithParam<Impl> {};

TEST_P(RingTest, EveryOpAndCountWithTinyPieces) {
  // 8-byte pieces: two floats per message, hundreds of messages in flight.
  const Ring ring = MakeRing(GetParam(), 8);
  ASSERT_TRUE(ring);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (int64_t n : Counts(2)) {
      if (n < 0 || n > 5000) continue;
      EXPECT_EQ(Reduce<float>(ring, DataType::kFloat32, op, n, false), 0) << "f32 n=" << n;
      EXPECT_EQ(Reduce<int32_t>(ring, DataType::kInt32, op, n, true), 0) << "i32 n=" << n;
    }
  }
}

TEST_P(RingTest, PieceBoundaries) {
  // 1 KiB pieces (256 floats, 128 doubles), counts around whole pieces.
  const Ring ring = MakeRing(GetParam(), 1024);
  ASSERT_TRUE(ring);
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

TEST_P(RingTest, HalfAndDefaultPieces) {
  const Ring small = MakeRing(GetParam(), 6);  // 3 halves per piece
  ASSERT_TRUE(small);
  for (int64_t n : Counts(3)) {
    if (n < 0 || n > 5000) continue;
    EXPECT_EQ(Reduce<uint16_t>(small, DataType::kFloat16, ReduceOp::kSum, n, false), 0)
        << "n=" << n;
  }
  // 256 KiB: several pieces from 1 M floats at np=4
  const Ring ring = MakeRing(GetParam(), MpiRingAllreduce::kDefaultPieceBytes);
  ASSERT_TRUE(ring);
  for (int64_t n : {int64_t{300007}, int64_t{1} << 20, (int64_t{1} << 20) + 5}) {
    EXPECT_EQ(Reduce<float>(ring, DataType::kFloat32, ReduceOp::kSum, n, true), 0) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Impls, RingTest, ::testing::Values(Impl::kMpi, Impl::kTcp),
                         [](const ::testing::TestParamInfo<Impl>& i) {
                           return i.param == Impl::kMpi ? "Mpi" : "Tcp";
                         });

// One member cannot listen (an address not on this host): every member's
// set-up fails, and that member's message says why.
TEST(TcpRing, SetUpFailsOnEveryMemberTogether) {
  std::unique_ptr<Comm> comm = WorldComm();
  std::unique_ptr<TcpRing> ring;
  const bool bad = Rank() == Size() - 1;
  const Status s =
      TcpRing::Create(comm.get(), bad ? "192.0.2.1" : "127.0.0.1", 10, {}, &ring);  // TEST-NET-1
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(ring, nullptr);
  if (bad) {
    EXPECT_NE(s.message().find("cannot listen"), std::string::npos) << s.message();
  } else if (Rank() == Size() - 2) {  // its left neighbour cannot connect to it
    EXPECT_NE(s.message().find("could not listen"), std::string::npos) << s.message();
  } else {
    EXPECT_NE(s.message().find("cross-host ring"), std::string::npos) << s.message();
  }
}

// The left neighbour of rank 0 closes its ring while rank 0 waits for it:
// rank 0 fails at once, naming it.
TEST(TcpRing, ClosedNeighbourFailsTheCall) {
  std::unique_ptr<TcpRing> ring = MakeTcpRing();
  ASSERT_TRUE(ring);
  const int left = Size() - 1;
  if (Rank() == 0) {
    std::vector<float> v(1 << 20, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = ring->Allreduce(v.data(), static_cast<int64_t>(v.size()), DataType::kFloat32,
                                     ReduceOp::kSum);
    EXPECT_EQ(s.code(), Code::kPeerLost) << s.message();
    EXPECT_NE(s.message().find("ring rank " + std::to_string(left)), std::string::npos)
        << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  } else if (Rank() == left) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ring.reset();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Nobody else calls: rank 0 times out naming the neighbour it waits for;
// then Abort from another thread ends a call at once.
TEST(TcpRing, StalledNeighbourTimesOutAndAbortEndsTheWait) {
  std::unique_ptr<TcpRing> ring = MakeTcpRing(/*timeout_s=*/0.5);
  std::unique_ptr<TcpRing> slow = MakeTcpRing(/*timeout_s=*/60);
  ASSERT_TRUE(ring && slow);
  if (Rank() == 0) {
    std::vector<float> v(1000, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    Status s = ring->Allreduce(v.data(), 1000, DataType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(s.code(), Code::kTimeout) << s.message();
    EXPECT_NE(s.message().find("for data from ring rank " + std::to_string(Size() - 1)),
              std::string::npos)
        << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    s = ring->Allreduce(v.data(), 1000, DataType::kFloat32, ReduceOp::kSum);  // out of step now
    EXPECT_EQ(s.code(), Code::kTimeout) << s.message();
    EXPECT_NE(s.message().find("unusable since an earlier call failed"), std::string::npos)
        << s.message();
    std::thread stop([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      slow->Abort();
    });
    t0 = std::chrono::steady_clock::now();
    s = slow->Allreduce(v.data(), 1000, DataType::kFloat32, ReduceOp::kSum);
    stop.join();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("aborted"), std::string::npos) << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the others keep their rings open until here
}

}  // namespace
}  // namespace hvd
