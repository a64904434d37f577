// Point-to-point messages through the C API (hvd_send_async,
// hvd_recv_async, hvd_batch_isend_irecv) under mpirun or hvdrun with 2-4
// ranks: a ring exchange with exact per-rank values (single calls and
// batches, several dtypes and sizes), order per pair and tag, separate
// streams per tag and per process set, size mismatches in both directions,
// argument errors, and (P2PDeadline.*, run alone with a short
// HVD_OP_TIMEOUT_SECONDS) a peer that never sends. Each test ends in a
// barrier so no rank runs ahead into the next one's messages.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"
#include "hvd_test_main.h"
#include "test_tensor.h"

using hvdtest::N;
using hvdtest::R;
using hvdtest::T;
using hvdtest::Tensor;

namespace {

hvd_status Wait(hvd_handle h) {
  return hvdtest::WaitAndRelease(h, 120000);
}

hvd_status Send(Tensor& t, int dest, int tag, const hvd_p2p_options* o = nullptr) {
  hvd_handle h = 0;
  hvd_status s = hvd_send_async(t.dl(), dest, tag, o, &h);
  return s != HVD_OK ? s : Wait(h);
}

hvd_status Recv(Tensor& t, int src, int tag, const hvd_p2p_options* o = nullptr) {
  hvd_handle h = 0;
  hvd_status s = hvd_recv_async(t.dl(), src, tag, o, &h);
  return s != HVD_OK ? s : Wait(h);
}

void Barrier() {
  ASSERT_EQ(hvd_barrier(0), HVD_OK) << hvd_last_error();
}

// The value element i of rank r's message carries.
double Value(int r, int64_t i, T t) {
  if (t == T::b8) return (r + i) % 2;
  const bool small = hvdtest::IsHalf(t) || t == T::u8 || t == T::i8 || t == T::i16;
  return small ? (r * 7 + i) % 100 : r * 1000 + i;
}

void Fill(Tensor& t, int r) {
  for (int64_t i = 0; i < t.n(); ++i) t.Set(i, Value(r, i, t.type()));
}

void ExpectFrom(const Tensor& t, int r, const std::string& what) {
  for (int64_t i = 0; i < t.n(); ++i) {
    ASSERT_EQ(t.Get(i), Value(r, i, t.type())) << what << ": element " << i << " on rank " << R();
  }
}

TEST(P2P, RingExchangeSingleCalls) {
  const int next = (R() + 1) % N(), prev = (R() + N() - 1) % N();
  for (T t : hvdtest::MovedTypes()) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{300000}}) {
      Tensor out(t, {n}), in(t, {n});
      Fill(out, R());
      hvd_handle hs = 0, hr = 0;
      // Receive first on even ranks, send first on odd ones: order of
      // posting must not matter.
      if (R() % 2 == 0) {
        ASSERT_EQ(hvd_recv_async(in.dl(), prev, 5, nullptr, &hr), HVD_OK) << hvd_last_error();
        ASSERT_EQ(hvd_send_async(out.dl(), next, 5, nullptr, &hs), HVD_OK) << hvd_last_error();
      } else {
        ASSERT_EQ(hvd_send_async(out.dl(), next, 5, nullptr, &hs), HVD_OK) << hvd_last_error();
        ASSERT_EQ(hvd_recv_async(in.dl(), prev, 5, nullptr, &hr), HVD_OK) << hvd_last_error();
      }
      EXPECT_EQ(Wait(hs), HVD_OK) << hvd_last_error();
      EXPECT_EQ(Wait(hr), HVD_OK) << hvd_last_error();
      ExpectFrom(in, prev, std::string(hvdtest::Name(t)) + " x" + std::to_string(n));
    }
  }
  Barrier();
}

TEST(P2P, RingExchangeBatchBothWays) {
  const int next = (R() + 1) % N(), prev = (R() + N() - 1) % N();
  Tensor to_next(T::f32, {257}), to_prev(T::f32, {257}), from_prev(T::f32, {257}),
      from_next(T::f32, {257});
  Fill(to_next, R());
  Fill(to_prev, R() + 50);
  hvd_p2p_op ops[4] = {HVD_P2P_OP_INIT, HVD_P2P_OP_INIT, HVD_P2P_OP_INIT, HVD_P2P_OP_INIT};
  ops[0] = {sizeof(hvd_p2p_op), HVD_P2P_SEND, to_next.dl(), next, 1};
  ops[1] = {sizeof(hvd_p2p_op), HVD_P2P_RECV, from_prev.dl(), prev, 1};
  ops[2] = {sizeof(hvd_p2p_op), HVD_P2P_SEND, to_prev.dl(), prev, 2};
  ops[3] = {sizeof(hvd_p2p_op), HVD_P2P_RECV, from_next.dl(), next, 2};
  hvd_handle h = 0;
  ASSERT_EQ(hvd_batch_isend_irecv(ops, 4, nullptr, &h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  ExpectFrom(from_prev, prev, "from the previous rank");
  ExpectFrom(from_next, next + 50, "from the next rank");
  Barrier();
}

// Rank 0 sends 6 messages on each of tags 3 and 4, interleaved; rank 1
// posts all tag-4 receives before the tag-3 ones. Each tag's messages
// arrive in order, whatever the order of the other tag.
TEST(P2P, OrderPerPairAndTag) {
  constexpr int kMessages = 6;
  if (R() == 0) {
    std::vector<std::unique_ptr<Tensor>> msgs;
    std::vector<hvd_handle> hs;
    for (int k = 0; k < kMessages; ++k) {
      for (int tag : {3, 4}) {
        msgs.push_back(std::make_unique<Tensor>(T::i64, std::vector<int64_t>{64}));
        Fill(*msgs.back(), tag * 100 + k);
        hvd_handle h = 0;
        ASSERT_EQ(hvd_send_async(msgs.back()->dl(), 1, tag, nullptr, &h), HVD_OK);
        hs.push_back(h);
      }
    }
    for (hvd_handle h : hs) EXPECT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  } else if (R() == 1) {
    std::vector<std::unique_ptr<Tensor>> got;
    std::vector<hvd_handle> hs;
    for (int tag : {4, 3}) {
      for (int k = 0; k < kMessages; ++k) {
        got.push_back(std::make_unique<Tensor>(T::i64, std::vector<int64_t>{64}));
        hvd_handle h = 0;
        ASSERT_EQ(hvd_recv_async(got.back()->dl(), 0, tag, nullptr, &h), HVD_OK);
        hs.push_back(h);
      }
    }
    for (hvd_handle h : hs) EXPECT_EQ(Wait(h), HVD_OK) << hvd_last_error();
    for (int k = 0; k < kMessages; ++k) {
      ExpectFrom(*got[static_cast<size_t>(k)], 400 + k, "tag 4 message " + std::to_string(k));
      ExpectFrom(*got[static_cast<size_t>(kMessages + k)], 300 + k,
                 "tag 3 message " + std::to_string(k));
    }
  }
  Barrier();
}

// The same tag in a process set is its own stream: ranks 0 and 1 exchange
// on tag 0 in the world and in a set {0, 1} that numbers them alike.
TEST(P2P, ProcessSetIsItsOwnStream) {
  int32_t ranks[2] = {0, 1};
  int32_t set = 0;
  ASSERT_EQ(hvd_add_process_set(ranks, 2, &set), HVD_OK) << hvd_last_error();
  if (R() < 2) {
    hvd_p2p_options o = HVD_P2P_OPTIONS_INIT;
    o.process_set = set;
    const int peer = 1 - R();
    Tensor world_out(T::f64, {10}), set_out(T::f64, {10}), world_in(T::f64, {10}),
        set_in(T::f64, {10});
    Fill(world_out, R());
    Fill(set_out, R() + 10);
    hvd_handle h[4];
    // The set's message is sent first but received last.
    ASSERT_EQ(hvd_send_async(set_out.dl(), peer, 0, &o, &h[0]), HVD_OK) << hvd_last_error();
    ASSERT_EQ(hvd_send_async(world_out.dl(), peer, 0, nullptr, &h[1]), HVD_OK);
    ASSERT_EQ(hvd_recv_async(world_in.dl(), peer, 0, nullptr, &h[2]), HVD_OK);
    ASSERT_EQ(hvd_recv_async(set_in.dl(), peer, 0, &o, &h[3]), HVD_OK);
    for (hvd_handle x : h) EXPECT_EQ(Wait(x), HVD_OK) << hvd_last_error();
    ExpectFrom(world_in, peer, "world stream");
    ExpectFrom(set_in, peer + 10, "set stream");
  } else {
    hvd_p2p_options o = HVD_P2P_OPTIONS_INIT;
    o.process_set = set;
    Tensor t(T::f32, {1});
    hvd_handle h = 0;
    EXPECT_EQ(hvd_send_async(t.dl(), 0, 0, &o, &h), HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hvd_last_error()).find("not a member"), std::string::npos)
        << hvd_last_error();
  }
  Barrier();
  ASSERT_EQ(hvd_remove_process_set(set), HVD_OK) << hvd_last_error();
}

// Sizes must match: a larger message than the buffer and a smaller one are
// both HVD_ERR_MISMATCH naming the sender, and the stream stays usable.
TEST(P2P, SizeMismatch) {
  if (R() == 0) {
    Tensor big(T::f32, {8}), small(T::f32, {2}), ok(T::f32, {4});
    Fill(big, 0);
    Fill(small, 0);
    Fill(ok, 0);
    EXPECT_EQ(Send(big, 1, 9), HVD_OK) << hvd_last_error();
    EXPECT_EQ(Send(small, 1, 9), HVD_OK) << hvd_last_error();
    EXPECT_EQ(Send(ok, 1, 9), HVD_OK) << hvd_last_error();
  } else if (R() == 1) {
    Tensor buf(T::f32, {4});
    EXPECT_EQ(Recv(buf, 0, 9), HVD_ERR_MISMATCH);
    const std::string e1 = hvd_last_error();
    EXPECT_NE(e1.find("hvd_recv_async from rank 0"), std::string::npos) << e1;
    // MPI knows only that it was larger (truncation), Gloo the size.
    EXPECT_TRUE(e1.find("larger than the receive buffer (16 bytes)") != std::string::npos ||
                e1.find("has 32 bytes, the receive buffer 16") != std::string::npos)
        << e1;
    EXPECT_EQ(Recv(buf, 0, 9), HVD_ERR_MISMATCH);
    const std::string e2 = hvd_last_error();
    EXPECT_NE(e2.find("has 8 bytes, the receive buffer 16"), std::string::npos) << e2;
    EXPECT_EQ(Recv(buf, 0, 9), HVD_OK) << hvd_last_error();
    ExpectFrom(buf, 0, "the message after two mismatches");
  }
  Barrier();
}

TEST(P2P, ArgumentErrors) {
  Tensor t(T::f32, {4});
  hvd_handle h = 7;
  EXPECT_EQ(hvd_send_async(t.dl(), R(), 0, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("is not another rank"), std::string::npos)
      << hvd_last_error();
  EXPECT_EQ(hvd_recv_async(t.dl(), N(), 0, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_send_async(t.dl(), (R() + 1) % N(), -1, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("tag -1"), std::string::npos) << hvd_last_error();
  EXPECT_EQ(hvd_send_async(t.dl(), (R() + 1) % N(), HVD_P2P_MAX_TAG + 1, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_send_async(nullptr, (R() + 1) % N(), 0, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  hvd_p2p_options bad = HVD_P2P_OPTIONS_INIT;
  bad.struct_size = 1;
  EXPECT_EQ(hvd_send_async(t.dl(), (R() + 1) % N(), 0, &bad, &h), HVD_ERR_INVALID_ARGUMENT);
  bad = HVD_P2P_OPTIONS_INIT;
  bad.process_set = 77;
  EXPECT_EQ(hvd_send_async(t.dl(), (R() + 1) % N(), 0, &bad, &h), HVD_ERR_INVALID_ARGUMENT);
  hvd_p2p_op op = HVD_P2P_OP_INIT;
  op.tensor = t.dl();
  op.peer = (R() + 1) % N();
  op.kind = static_cast<hvd_p2p_kind>(5);
  EXPECT_EQ(hvd_batch_isend_irecv(&op, 1, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("ops[0].kind"), std::string::npos)
      << hvd_last_error();
  EXPECT_EQ(hvd_batch_isend_irecv(&op, 0, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  Barrier();
}

// Run alone with HVD_OP_TIMEOUT_SECONDS of a few seconds: rank 1 waits for
// a message rank 0 never sends and fails with HVD_ERR_TIMEOUT naming rank 0.
TEST(P2PDeadline, PeerThatNeverSends) {
  if (R() == 1) {
    Tensor t(T::f32, {4});
    EXPECT_EQ(Recv(t, 0, 11), HVD_ERR_TIMEOUT);
    const std::string e = hvd_last_error();
    EXPECT_NE(e.find("hvd_recv_async from rank 0 (host "), std::string::npos) << e;
    std::printf("deadline error: %s\n", e.c_str());
  } else {
    // Rank 1 is busy for the deadline and a probe: a barrier entered now
    // would outlast the deadline itself.
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }
  Barrier();
}

// Run alone with HVD_P2P=0: no p2p communicator, calls refused clearly.
TEST(P2POff, Refused) {
  Tensor t(T::f32, {4});
  hvd_handle h = 0;
  EXPECT_EQ(hvd_send_async(t.dl(), (R() + 1) % N(), 0, nullptr, &h), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(hvd_last_error()).find("HVD_P2P=0"), std::string::npos) << hvd_last_error();
  Barrier();
}

}  // namespace

int main(int argc, char** argv) {
  return hvdtest::RunTestsWithHvd(argc, argv);
}
