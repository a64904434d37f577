// Multi-process tests of the C API: run under mpirun or hvdrun with 2-4
// ranks. Every rank runs the same tests in the same order; results are
// checked exactly, per rank. Collectives are always executed even when an
// expectation fails (EXPECT, not ASSERT), so a failure never hangs peers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"
#include "test_tensor.h"
#include "tests/common/huge_buffer.h"

using hvdtest::N;
using hvdtest::R;
using hvdtest::T;
using hvdtest::Tensor;

namespace {

hvd_status Wait(hvd_handle h) {
  return hvdtest::WaitAndRelease(h, 60000);
}

hvd_status Allreduce(const char* name, Tensor& in, Tensor& out, hvd_reduce_op op,
                     const hvd_op_options* o = nullptr) {
  hvd_handle h;
  hvd_status s = hvd_allreduce_async(name, in.dl(), out.dl(), op, o, &h);
  if (s != HVD_OK) return s;
  return Wait(h);
}

double Tolerance(T t, double expect) {
  if (t == T::f16) return std::max(1e-3, std::fabs(expect) * 2e-3);
  if (t == T::bf16) return std::max(1e-2, std::fabs(expect) * 1e-2);
  if (t == T::f32) return 1e-5 * std::max(1.0, std::fabs(expect));
  return 1e-12;
}

// Value rank r contributes at element i: small, so every dtype is exact.
double V(int r, int64_t i) {
  return 1 + (r + i) % 3;
}

double Expected(hvd_reduce_op op, int64_t i, T t) {
  double sum = 0, mn = 1e9, mx = -1e9, prod = 1;
  for (int r = 0; r < N(); ++r) {
    double v = V(r, i);
    sum += v;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    prod *= v;
  }
  switch (op) {
    case HVD_OP_SUM:
      return sum;
    case HVD_OP_AVERAGE:
      return hvdtest::IsFloat(t) ? sum / N() : std::trunc(sum * (1.0 / N()));
    case HVD_OP_MIN:
      return mn;
    case HVD_OP_MAX:
      return mx;
    case HVD_OP_PRODUCT:
      return prod;
    case HVD_OP_ADASUM:  // tests/mp/adasum_test.cc
      break;
  }
  return 0;
}

TEST(Topology, RanksAreConsistent) {
  EXPECT_GE(R(), 0);
  EXPECT_LT(R(), N());
  EXPECT_GE(hvd_local_rank(), 0);
  EXPECT_LT(hvd_local_rank(), hvd_local_size());
  EXPECT_LE(hvd_local_size(), N());
  EXPECT_GE(hvd_cross_rank(), 0);
  EXPECT_LT(hvd_cross_rank(), hvd_cross_size());
  EXPECT_EQ(hvd_is_initialized(), 1);
  EXPECT_EQ(hvd_mpi_enabled() + hvd_gloo_enabled() >= 1, true);
  // Everyone agrees on the size: allreduce of 1s.
  Tensor a(T::i32, {1}), b(T::i32, {1});
  a.Set(0, 1);
  ASSERT_EQ(Allreduce("topology.size", a, b, HVD_OP_SUM), HVD_OK) << hvd_last_error();
  EXPECT_EQ(b.Get(0), N());
}

TEST(Allreduce, EveryTypeAndOp) {
  const hvd_reduce_op ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
  for (T t : hvdtest::AllTypes()) {
    for (hvd_reduce_op op : ops) {
      Tensor in(t, {17}), out(t, {17});
      for (int64_t i = 0; i < in.n(); ++i) in.Set(i, V(R(), i));
      std::string name = std::string("every.") + hvdtest::Name(t) + "." + std::to_string(op);
      ASSERT_EQ(Allreduce(name.c_str(), in, out, op), HVD_OK) << name << ": " << hvd_last_error();
      for (int64_t i = 0; i < in.n(); ++i) {
        double e = Expected(op, i, t);
        EXPECT_NEAR(out.Get(i), e, Tolerance(t, e)) << name << " element " << i;
      }
      for (int64_t i = 0; i < in.n(); ++i) EXPECT_EQ(in.Get(i), V(R(), i)) << "input modified";
    }
  }
}

// Averages larger than the backend's allreduce piece (512 KiB inside one
// host on the project's VM, 4 MiB across hosts) are scaled piece by piece:
// every piece, the short last one included, must come out averaged once.
TEST(Allreduce, AverageOverManyPieces) {
  const int64_t n = (5LL << 20) / 4 + 7;  // over one 4 MiB piece, odd tail
  for (T t : {T::f32, T::f64}) {
    for (bool in_place : {false, true}) {
      Tensor in(t, {n}), out(t, {n});
      for (int64_t i = 0; i < n; ++i) in.Set(i, V(R(), i));
      Tensor& dst = in_place ? in : out;
      const std::string name =
          std::string("avg.pieces.") + hvdtest::Name(t) + (in_place ? ".inplace" : "");
      ASSERT_EQ(Allreduce(name.c_str(), in, dst, HVD_OP_AVERAGE), HVD_OK) << hvd_last_error();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = Expected(HVD_OP_AVERAGE, i, t);
        if (std::fabs(dst.Get(i) - e) > Tolerance(t, e)) ++bad;
      }
      EXPECT_EQ(bad, 0) << name;
    }
  }
}

TEST(Allreduce, InPlaceAndScaled) {
  for (T t : {T::f32, T::f64, T::f16, T::i32}) {
    Tensor a(t, {2, 3});
    for (int64_t i = 0; i < a.n(); ++i) a.Set(i, V(R(), i));
    hvd_op_options o = HVD_OP_OPTIONS_INIT;
    o.prescale_factor = 2.0;
    o.postscale_factor = 0.5;
    std::string name = std::string("inplace.") + hvdtest::Name(t);
    ASSERT_EQ(Allreduce(name.c_str(), a, a, HVD_OP_SUM, &o), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < a.n(); ++i) {
      double e = Expected(HVD_OP_SUM, i, t);
      EXPECT_NEAR(a.Get(i), e, Tolerance(t, e)) << name;
    }
  }
  Tensor in(T::f32, {4}), out(T::f32, {4});
  for (int64_t i = 0; i < 4; ++i) in.Set(i, 1.0);
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.postscale_factor = 3.0;
  ASSERT_EQ(Allreduce("scaled.avg", in, out, HVD_OP_AVERAGE, &o), HVD_OK) << hvd_last_error();
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(out.Get(i), 3.0f);
}

TEST(Allreduce, EmptyAndScalar) {
  Tensor e(T::f32, {0}), eo(T::f32, {0});
  EXPECT_EQ(Allreduce("empty", e, eo, HVD_OP_SUM), HVD_OK) << hvd_last_error();
  Tensor s(T::i64, {}), so(T::i64, {});
  s.Set(0, R() + 1);
  ASSERT_EQ(Allreduce("scalar", s, so, HVD_OP_SUM), HVD_OK) << hvd_last_error();
  EXPECT_EQ(so.Get(0), N() * (N() + 1) / 2);
}

TEST(Allgather, VariableRowsEveryType) {
  for (T t : hvdtest::AllTypes()) {
    const int64_t cols = 3;
    Tensor in(t, {R() + 1, cols});
    for (int64_t row = 0; row <= R(); ++row) {
      for (int64_t c = 0; c < cols; ++c) in.Set(row * cols + c, (R() * 10 + row * 3 + c) % 100);
    }
    std::string name = std::string("gather.") + hvdtest::Name(t);
    hvd_handle h;
    ASSERT_EQ(hvd_allgather_async(name.c_str(), in.dl(), nullptr, &h), HVD_OK) << hvd_last_error();
    ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
    DLTensor res;
    ASSERT_EQ(hvd_result(h, &res), HVD_OK) << hvd_last_error();
    const int64_t rows = N() * (N() + 1) / 2;
    ASSERT_EQ(res.ndim, 2);
    EXPECT_EQ(res.shape[0], rows);
    EXPECT_EQ(res.shape[1], cols);
    int64_t k = 0;
    const auto* p = static_cast<const uint8_t*>(res.data);
    for (int r = 0; r < N(); ++r) {
      for (int64_t row = 0; row <= r; ++row) {
        for (int64_t c = 0; c < cols; ++c, ++k) {
          EXPECT_EQ(Tensor::Load(p + k * hvdtest::Size(t), t), (r * 10 + row * 3 + c) % 100)
              << name << " from rank " << r;
        }
      }
    }
    hvd_release(h);
  }
}

// Allocator callback: memory comes from the caller.
std::vector<std::unique_ptr<std::vector<uint8_t>>> g_allocs;
void* TestAlloc(size_t bytes, const int64_t*, int, DLDataType, DLDevice, void* user) {
  ++*static_cast<int*>(user);
  g_allocs.push_back(std::make_unique<std::vector<uint8_t>>(bytes + 1));
  return g_allocs.back()->data();
}

TEST(Allgather, CallerAllocator) {
  Tensor in(T::f32, {2});
  in.Set(0, R());
  in.Set(1, -R());
  int calls = 0;
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.allocator = TestAlloc;
  o.allocator_user_data = &calls;
  hvd_handle h;
  ASSERT_EQ(hvd_allgather_async("gather.alloc", in.dl(), &o, &h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
  DLTensor res;
  ASSERT_EQ(hvd_result(h, &res), HVD_OK);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(res.data, g_allocs.back()->data());
  const float* f = static_cast<const float*>(res.data);
  for (int r = 0; r < N(); ++r) {
    EXPECT_EQ(f[2 * r], r);
    EXPECT_EQ(f[2 * r + 1], -r);
  }
  hvd_release(h);
}

void* NullAlloc(size_t, const int64_t*, int, DLDataType, DLDevice, void*) {
  return nullptr;
}

TEST(Allgather, FailingAllocatorOnOneRankHangsNobody) {
  Tensor in(T::i32, {1});
  in.Set(0, R());
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  if (R() == 0) o.allocator = NullAlloc;
  hvd_handle h;
  ASSERT_EQ(hvd_allgather_async("gather.nullalloc", in.dl(), &o, &h), HVD_OK);
  hvd_status s = hvd_wait(h, 60000);
  if (R() == 0) {
    EXPECT_EQ(s, HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hvd_last_error()).find("allocator returned NULL"), std::string::npos);
  } else {
    EXPECT_EQ(s, HVD_OK) << hvd_last_error();
    DLTensor res;
    ASSERT_EQ(hvd_result(h, &res), HVD_OK);
    EXPECT_EQ(static_cast<const int32_t*>(res.data)[N() - 1], N() - 1);
  }
  hvd_release(h);
}

TEST(Broadcast, EveryRootEveryType) {
  for (int root = 0; root < N(); ++root) {
    for (T t : hvdtest::AllTypes()) {
      Tensor a(t, {3, 3});
      for (int64_t i = 0; i < a.n(); ++i) a.Set(i, R() == root ? (root * 10 + i) % 100 : 0);
      std::string name = "bcast." + std::to_string(root) + "." + hvdtest::Name(t);
      hvd_handle h;
      ASSERT_EQ(hvd_broadcast_async(name.c_str(), a.dl(), root, nullptr, &h), HVD_OK)
          << hvd_last_error();
      ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
      for (int64_t i = 0; i < a.n(); ++i) EXPECT_EQ(a.Get(i), (root * 10 + i) % 100) << name;
    }
  }
}

TEST(Allreduce, ManyInFlight) {
  const int kCount = 200;
  std::vector<std::unique_ptr<Tensor>> ins, outs;
  std::vector<hvd_handle> hs(kCount);
  for (int k = 0; k < kCount; ++k) {
    int64_t n = 1 + (k * 37) % 1000;
    ins.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{n}));
    outs.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{n}));
    for (int64_t i = 0; i < n; ++i) ins[k]->Set(i, k + R() + i % 7);
    std::string name = "many." + std::to_string(k);
    ASSERT_EQ(
        hvd_allreduce_async(name.c_str(), ins[k]->dl(), outs[k]->dl(), HVD_OP_SUM, nullptr, &hs[k]),
        HVD_OK)
        << hvd_last_error();
  }
  const double rank_sum = N() * (N() - 1) / 2.0;
  for (int k = 0; k < kCount; ++k) {
    ASSERT_EQ(Wait(hs[k]), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < outs[k]->n(); ++i) {
      ASSERT_EQ(outs[k]->Get(i), N() * (k + i % 7) + rank_sum) << "tensor " << k;
    }
  }
}

TEST(Allreduce, OutOfOrderSubmission) {
  const char* names[] = {"ooo.A", "ooo.B", "ooo.C"};
  std::vector<std::unique_ptr<Tensor>> ins, outs;
  for (int k = 0; k < 3; ++k) {
    ins.push_back(std::make_unique<Tensor>(T::f64, std::vector<int64_t>{10 * (k + 1)}));
    outs.push_back(std::make_unique<Tensor>(T::f64, std::vector<int64_t>{10 * (k + 1)}));
    for (int64_t i = 0; i < ins[k]->n(); ++i) ins[k]->Set(i, (k + 1) * 1000 + R());
  }
  std::vector<hvd_handle> hs(3);
  for (int j = 0; j < 3; ++j) {
    int k = R() % 2 == 0 ? j : 2 - j;  // odd ranks submit C, B, A
    ASSERT_EQ(
        hvd_allreduce_async(names[k], ins[k]->dl(), outs[k]->dl(), HVD_OP_SUM, nullptr, &hs[k]),
        HVD_OK);
  }
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(Wait(hs[k]), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < outs[k]->n(); ++i) {
      EXPECT_EQ(outs[k]->Get(i), N() * (k + 1) * 1000.0 + N() * (N() - 1) / 2.0);
    }
  }
}

TEST(Allreduce, ThousandStepsThroughTheCache) {
  Tensor w(T::f32, {64}), b(T::f32, {3}), c(T::i32, {5});
  Tensor wo(T::f32, {64}), bo(T::f32, {3}), co(T::i32, {5});
  for (int step = 0; step < 1000; ++step) {
    for (int64_t i = 0; i < 64; ++i) w.Set(i, step % 13 + R());
    for (int64_t i = 0; i < 3; ++i) b.Set(i, -step % 7 - R());
    for (int64_t i = 0; i < 5; ++i) c.Set(i, step + R() * 2);
    hvd_handle h[3];
    ASSERT_EQ(hvd_allreduce_async("step.w", w.dl(), wo.dl(), HVD_OP_SUM, nullptr, &h[0]), HVD_OK);
    ASSERT_EQ(hvd_allreduce_async("step.b", b.dl(), bo.dl(), HVD_OP_SUM, nullptr, &h[1]), HVD_OK);
    ASSERT_EQ(hvd_allreduce_async("step.c", c.dl(), co.dl(), HVD_OP_MAX, nullptr, &h[2]), HVD_OK);
    for (auto x : h) ASSERT_EQ(Wait(x), HVD_OK) << hvd_last_error();
    const double rs = N() * (N() - 1) / 2.0;
    ASSERT_EQ(wo.Get(63), N() * (step % 13) + rs) << "step " << step;
    ASSERT_EQ(bo.Get(0), N() * (-step % 7) - rs) << "step " << step;
    ASSERT_EQ(co.Get(4), step + (N() - 1) * 2) << "step " << step;
  }
}

// More tensors per step than cache slots (mpi.collectives.np3.small_cache
// runs everything with 2): each step some run from the cache and the rest
// are negotiated in full, and every result is exact.
TEST(Allreduce, MoreTensorsPerStepThanCacheSlots) {
  constexpr int kTensors = 6;
  std::vector<std::unique_ptr<Tensor>> in, out;
  for (int i = 0; i < kTensors; ++i) {
    in.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{4}));
    out.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{4}));
  }
  for (int step = 0; step < 40; ++step) {
    hvd_handle h[kTensors];
    for (int i = 0; i < kTensors; ++i) {
      for (int64_t k = 0; k < 4; ++k) in[i]->Set(k, i * 100 + step + k + R());
      const std::string name = "overflow." + std::to_string(i);
      ASSERT_EQ(
          hvd_allreduce_async(name.c_str(), in[i]->dl(), out[i]->dl(), HVD_OP_SUM, nullptr, &h[i]),
          HVD_OK);
    }
    for (auto x : h) ASSERT_EQ(Wait(x), HVD_OK) << hvd_last_error();
    const double rs = N() * (N() - 1) / 2.0;
    for (int i = 0; i < kTensors; ++i) {
      for (int64_t k = 0; k < 4; ++k) {
        ASSERT_EQ(out[i]->Get(k), N() * (i * 100 + step + k) + rs) << "step " << step << " " << i;
      }
    }
  }
}

// hvd_wait steps the set's loop on the waiting thread (loop_progress.h):
// several threads waiting on one set take turns at the step with each
// other and with the loop's thread, through short timeouts that give up
// mid-session and completion callbacks that wait from inside a step, and
// every result is exact.
struct WaitInCallback {
  std::mutex mu;  // keeps `other` alive while a callback waits on it
  hvd_handle other = 0;
  std::atomic<int> calls{0};
  std::atomic<int> bad{0};
  void Set(hvd_handle h) {
    std::lock_guard<std::mutex> lock(mu);
    other = h;
  }
};

void WaitFromCallback(hvd_handle, hvd_status s, void* user) {
  auto* w = static_cast<WaitInCallback*>(user);
  // Another thread's handle, waited on from inside a step (on hvd's thread
  // or a waiting caller's): it must return, done or timed out, never
  // deadlock on the step it runs in.
  hvd_status o = HVD_OK;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->other) o = hvd_wait(w->other, 2);
  }
  if (s != HVD_OK || (o != HVD_OK && o != HVD_ERR_TIMEOUT)) w->bad++;
  w->calls++;
}

TEST(Allreduce, WaitersOnSeveralThreadsTakeTurnsAtTheLoop) {
  constexpr int kThreads = 4, kRounds = 150, kElems = 33;
  std::atomic<int> failures{0};
  WaitInCallback cb;
  auto worker = [&](int t) {
    Tensor in(T::f64, {kElems}), out(T::f64, {kElems});
    for (int round = 0; round < kRounds; ++round) {
      for (int64_t i = 0; i < kElems; ++i) in.Set(i, 1000.0 * t + round + R() + i);
      const std::string name = "turns." + std::to_string(t) + "." + std::to_string(round);
      hvd_op_options o = HVD_OP_OPTIONS_INIT;
      if (t == 0) {
        o.callback = WaitFromCallback;
        o.callback_user_data = &cb;
      }
      hvd_handle h = 0;
      if (hvd_allreduce_async(name.c_str(), in.dl(), out.dl(), HVD_OP_SUM, &o, &h) != HVD_OK) {
        failures++;
        continue;
      }
      if (t == 1) cb.Set(h);
      hvd_status s;
      if (t == 2) {  // sessions that time out and begin again
        while ((s = hvd_wait(h, 0)) == HVD_ERR_TIMEOUT) {
          s = hvd_wait(h, 1);
          if (s != HVD_ERR_TIMEOUT) break;
        }
      } else {
        s = hvd_wait(h, 60000);
      }
      if (t == 1) cb.Set(0);
      hvd_release(h);
      const double rs = N() * (N() - 1) / 2.0;
      for (int64_t i = 0; i < kElems; ++i) {
        if (s != HVD_OK || out.Get(i) != N() * (1000.0 * t + round + i) + rs) {
          failures++;
          break;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << hvd_last_error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (cb.calls.load() < kRounds && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(cb.calls.load(), kRounds);
  EXPECT_EQ(cb.bad.load(), 0);
}

// Tensors that are views of one flat buffer (inputs and outputs adjacent)
// are reduced without the fusion buffer, in place and out of place.
TEST(Allreduce, AdjacentViewsOfOneBuffer) {
  const int kTensors = 64;
  const int64_t kLen = 16;
  const int64_t total = kTensors * kLen;
  std::vector<float> in(static_cast<size_t>(total)), out(in.size());
  std::vector<int64_t> shape(kTensors, kLen);
  auto view = [&](float* base, int k) {
    DLTensor t{};
    t.data = base + k * kLen;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = &shape[static_cast<size_t>(k)];
    return t;
  };
  for (int step = 0; step < 3; ++step) {    // the first negotiates, the rest hit the cache
    for (int mode = 0; mode < 2; ++mode) {  // out of place SUM, in place AVERAGE
      for (int64_t i = 0; i < total; ++i) in[static_cast<size_t>(i)] = float(V(R(), i) + step);
      std::fill(out.begin(), out.end(), -1.0f);
      float* dst = mode == 0 ? out.data() : in.data();
      const hvd_reduce_op op = mode == 1 ? HVD_OP_AVERAGE : HVD_OP_SUM;
      std::vector<DLTensor> ti, to;
      std::vector<std::string> names;
      for (int k = 0; k < kTensors; ++k) {
        ti.push_back(view(in.data(), k));
        to.push_back(view(dst, k));
        names.push_back("adj." + std::to_string(mode) + "." + std::to_string(k));
      }
      std::vector<hvd_handle> hs(kTensors);
      for (int k = 0; k < kTensors; ++k) {
        ASSERT_EQ(hvd_allreduce_async(names[k].c_str(), &ti[k], &to[k], op, nullptr, &hs[k]),
                  HVD_OK)
            << hvd_last_error();
      }
      for (auto h : hs) ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
      for (int64_t i = 0; i < total; ++i) {
        const double expect = Expected(op, i, T::f32) + (op == HVD_OP_AVERAGE ? step : N() * step);
        ASSERT_EQ(dst[i], expect) << "mode " << mode << " step " << step << " element " << i;
      }
    }
  }
}

TEST(Errors, MismatchedShapesDtypesAndRoots) {
  Tensor a(T::f32, {R() == 0 ? 4 : 5}), ao(T::f32, {R() == 0 ? 4 : 5});
  EXPECT_EQ(Allreduce("mismatch.shape", a, ao, HVD_OP_SUM), HVD_ERR_MISMATCH);
  std::string msg = hvd_last_error();
  EXPECT_NE(msg.find("mismatch.shape"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0: [4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5]"), std::string::npos) << msg;

  Tensor d(R() == 0 ? T::f32 : T::i32, {3}), dout(R() == 0 ? T::f32 : T::i32, {3});
  EXPECT_EQ(Allreduce("mismatch.dtype", d, dout, HVD_OP_SUM), HVD_ERR_MISMATCH);
  msg = hvd_last_error();
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;

  Tensor o(T::f32, {3}), oo(T::f32, {3});
  EXPECT_EQ(Allreduce("mismatch.op", o, oo, R() == 0 ? HVD_OP_SUM : HVD_OP_MAX), HVD_ERR_MISMATCH);
  EXPECT_NE(std::string(hvd_last_error()).find("reduce ops"), std::string::npos);

  Tensor r(T::f32, {3});
  hvd_handle h;
  ASSERT_EQ(hvd_broadcast_async("mismatch.root", r.dl(), R() == 0 ? 0 : N() - 1, nullptr, &h),
            HVD_OK);
  EXPECT_EQ(Wait(h), HVD_ERR_MISMATCH);
  EXPECT_NE(std::string(hvd_last_error()).find("root"), std::string::npos);

  // The job carries on normally afterwards.
  Tensor ok(T::f32, {2}), oko(T::f32, {2});
  ok.Set(0, 1);
  ASSERT_EQ(Allreduce("after.mismatch", ok, oko, HVD_OP_SUM), HVD_OK) << hvd_last_error();
  EXPECT_EQ(oko.Get(0), N());
}

TEST(Errors, InvalidArgumentsAreStatusCodes) {
  Tensor a(T::f32, {4}), b(T::f32, {5});
  hvd_handle h = 0;
  EXPECT_EQ(hvd_allreduce_async("x", nullptr, a.dl(), HVD_OP_SUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("input is NULL"), std::string::npos);
  EXPECT_EQ(hvd_allreduce_async("x", a.dl(), a.dl(), HVD_OP_SUM, nullptr, nullptr),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_allreduce_async("x", a.dl(), b.dl(), HVD_OP_SUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_allreduce_async("x", a.dl(), a.dl(), static_cast<hvd_reduce_op>(42), nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  DLTensor bad = *a.dl();
  bad.dtype = {kDLComplex, 64, 1};
  EXPECT_EQ(hvd_allreduce_async("x", &bad, &bad, HVD_OP_SUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("dtype"), std::string::npos);
  int64_t neg_shape[1] = {-3};
  bad = *a.dl();
  bad.shape = neg_shape;
  EXPECT_EQ(hvd_allreduce_async("x", &bad, &bad, HVD_OP_SUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  Tensor m(T::f32, {2, 2});
  int64_t strides[2] = {1, 2};
  bad = *m.dl();
  bad.strides = strides;
  EXPECT_EQ(hvd_allreduce_async("x", &bad, &bad, HVD_OP_SUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("contiguous"), std::string::npos);
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.struct_size = 0;
  EXPECT_EQ(hvd_allreduce_async("x", a.dl(), a.dl(), HVD_OP_SUM, &o, &h), HVD_ERR_INVALID_ARGUMENT);
  o = HVD_OP_OPTIONS_INIT;
  o.process_set = 42;
  EXPECT_EQ(hvd_allreduce_async("x", a.dl(), a.dl(), HVD_OP_SUM, &o, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("process set 42"), std::string::npos);
  EXPECT_EQ(hvd_broadcast_async("x", a.dl(), N(), nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_broadcast_async("x", a.dl(), -1, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_allgather_async("x", nullptr, nullptr, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_poll(123456789), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_wait(-5, 0), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_release(987654321), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_result(1, nullptr), HVD_ERR_INVALID_ARGUMENT);

  // A name used twice among operations in flight is refused (deterministic
  // inside one grouped call), then double release.
  Tensor c(T::f32, {4}), co(T::f32, {4});
  const char* dup_names[] = {"dup", "dup"};
  const DLTensor* dup_in[] = {c.dl(), c.dl()};
  DLTensor* dup_out[] = {co.dl(), co.dl()};
  EXPECT_EQ(hvd_grouped_allreduce_async(dup_names, dup_in, dup_out, 2, HVD_OP_SUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("already pending"), std::string::npos);
  ASSERT_EQ(hvd_allreduce_async("dup", c.dl(), co.dl(), HVD_OP_SUM, nullptr, &h), HVD_OK);
  EXPECT_EQ(hvd_wait(h, 60000), HVD_OK);
  DLTensor res;
  EXPECT_EQ(hvd_result(h, &res), HVD_ERR_INVALID_ARGUMENT);  // allreduce has no hvd-owned result
  EXPECT_EQ(hvd_release(h), HVD_OK);
  EXPECT_EQ(hvd_release(h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("already released"), std::string::npos);
  EXPECT_NE(std::string(hvd_last_error()).find("hvd_release: unknown handle"), std::string::npos);
  EXPECT_EQ(hvd_poll(h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(hvd_status_string(HVD_ERR_MISMATCH), "");
  EXPECT_EQ(hvd_init(), HVD_ERR_ALREADY_INITIALIZED);
}

struct CallbackRecord {
  std::atomic<int> calls{0};
  std::atomic<int> status{1};
  std::atomic<hvd_handle> handle{0};
};
void RecordCallback(hvd_handle h, hvd_status s, void* user) {
  auto* rec = static_cast<CallbackRecord*>(user);
  rec->handle = h;
  rec->status = s;
  rec->calls++;
}

TEST(Handles, CallbackAndPoll) {
  CallbackRecord rec;
  Tensor a(T::f32, {8}), ao(T::f32, {8});
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.callback = RecordCallback;
  o.callback_user_data = &rec;
  hvd_handle h;
  ASSERT_EQ(hvd_allreduce_async("callback", a.dl(), ao.dl(), HVD_OP_SUM, &o, &h), HVD_OK);
  hvd_status s;
  while ((s = hvd_poll(h)) == HVD_IN_PROGRESS) {
  }
  EXPECT_EQ(s, HVD_OK);
  EXPECT_EQ(hvd_wait(h, -1), HVD_OK);
  // The callback runs after the handle reads as done (it may poll its own
  // handle), so on a loaded machine it can come a little later: wait for it
  // by the clock. A loop of 1000 hvd_wait calls, which return at once on a
  // done handle, takes microseconds and could end before the callback ran.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rec.calls == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(rec.calls, 1);
  EXPECT_EQ(rec.status, HVD_OK);
  EXPECT_EQ(rec.handle, h);
  hvd_release(h);
}

TEST(Alltoall, UnevenSplitsAndEqualSplits) {
  const int cols = 2;
  // Rank me sends d + 1 rows to rank d.
  int64_t rows = 0;
  std::vector<int32_t> splits(N());
  for (int d = 0; d < N(); ++d) rows += (splits[d] = d + 1);
  for (T t : {T::f32, T::i64, T::u8, T::i16}) {
    Tensor in(t, {rows, cols});
    int64_t k = 0;
    for (int d = 0; d < N(); ++d) {
      for (int j = 0; j <= d; ++j) {
        for (int c = 0; c < cols; ++c) in.Set(k++, R() * 20 + d * 4 + j + c);
      }
    }
    std::string name = std::string("a2a.") + hvdtest::Name(t);
    hvd_handle h;
    ASSERT_EQ(hvd_alltoall_async(name.c_str(), in.dl(), splits.data(), N(), nullptr, &h), HVD_OK)
        << hvd_last_error();
    ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
    DLTensor res;
    ASSERT_EQ(hvd_result(h, &res), HVD_OK);
    EXPECT_EQ(res.shape[0], N() * (R() + 1));
    std::vector<int32_t> recv(N());
    int count = 0;
    ASSERT_EQ(hvd_result_splits(h, recv.data(), N(), &count), HVD_OK);
    EXPECT_EQ(count, N());
    const auto* p = static_cast<const uint8_t*>(res.data);
    k = 0;
    for (int from = 0; from < N(); ++from) {
      EXPECT_EQ(recv[from], R() + 1);
      for (int j = 0; j <= R(); ++j) {
        for (int c = 0; c < cols; ++c, ++k) {
          EXPECT_EQ(Tensor::Load(p + k * hvdtest::Size(t), t), from * 20 + R() * 4 + j + c)
              << name << " from " << from;
        }
      }
    }
    hvd_release(h);
  }
  Tensor eq(T::i32, {2 * N()});
  for (int64_t i = 0; i < eq.n(); ++i) eq.Set(i, R() * 100 + i);
  hvd_handle h;
  ASSERT_EQ(hvd_alltoall_async("a2a.equal", eq.dl(), nullptr, 0, nullptr, &h), HVD_OK);
  ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
  DLTensor res;
  ASSERT_EQ(hvd_result(h, &res), HVD_OK);
  const int32_t* v = static_cast<const int32_t*>(res.data);
  for (int from = 0; from < N(); ++from) {
    EXPECT_EQ(v[2 * from], from * 100 + 2 * R());
    EXPECT_EQ(v[2 * from + 1], from * 100 + 2 * R() + 1);
  }
  hvd_release(h);
  // Wrong splits are refused locally with a clear message.
  int32_t wrong[1] = {1};
  EXPECT_EQ(hvd_alltoall_async("a2a.bad", eq.dl(), wrong, 1, nullptr, &h),
            N() == 1 ? HVD_ERR_INVALID_ARGUMENT : HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("splits"), std::string::npos);
}

// This rank's block of a reduce-scatter over n rows: the first n % N()
// ranks get one row more.
struct Block {
  int64_t rows, first;
};
Block MyBlock(int64_t n) {
  Block b{n / N() + (R() < n % N() ? 1 : 0), 0};
  for (int k = 0; k < R(); ++k) b.first += n / N() + (k < n % N() ? 1 : 0);
  return b;
}

// Submits a reduce-scatter of `in`, waits, and fills *res with its result.
void ReduceScatter(const std::string& name, Tensor& in, hvd_reduce_op op, hvd_handle* h,
                   DLTensor* res) {
  ASSERT_EQ(hvd_reducescatter_async(name.c_str(), in.dl(), op, nullptr, h), HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(hvd_wait(*h, 120000), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_result(*h, res), HVD_OK);
}

TEST(Reducescatter, OddRowsSumAndAverage) {
  const int64_t n = 2 * N() + 1, cols = 2;
  for (hvd_reduce_op op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
    for (T t : {T::f32, T::f64, T::i32, T::i16}) {
      Tensor in(t, {n, cols});
      for (int64_t row = 0; row < n; ++row) {
        for (int64_t c = 0; c < cols; ++c) in.Set(row * cols + c, R() + 1 + row + c);
      }
      std::string name = "rs." + std::to_string(op) + hvdtest::Name(t);
      hvd_handle h;
      DLTensor res;
      ASSERT_NO_FATAL_FAILURE(ReduceScatter(name, in, op, &h, &res));
      const Block b = MyBlock(n);
      ASSERT_EQ(res.shape[0], b.rows);
      const auto* p = static_cast<const uint8_t*>(res.data);
      for (int64_t row = 0; row < b.rows; ++row) {
        for (int64_t c = 0; c < cols; ++c) {
          double sum = N() * (N() + 1) / 2.0 + N() * (b.first + row + c);
          double e = op == HVD_OP_SUM
                         ? sum
                         : (hvdtest::IsFloat(t) ? sum / N() : std::trunc(sum * (1.0 / N())));
          EXPECT_NEAR(Tensor::Load(p + (row * cols + c) * hvdtest::Size(t), t), e, 1e-5) << name;
        }
      }
      hvd_release(h);
    }
  }
}

// Larger than the allreduce chunk (512 KiB on one host, 4 MiB across): the
// MPI backend then goes in rounds through a staging buffer; uneven blocks.
TEST(Reducescatter, LargeUnevenInRounds) {
  const int64_t n = 1100000 + N() + 1;  // int32: > 4 MiB
  Tensor in(T::i32, {n});
  for (int64_t row = 0; row < n; ++row) in.Set(row, R() + row % 1000);
  hvd_handle h;
  DLTensor res;
  ASSERT_NO_FATAL_FAILURE(ReduceScatter("rs.large", in, HVD_OP_SUM, &h, &res));
  const Block b = MyBlock(n);
  ASSERT_EQ(res.shape[0], b.rows);
  const auto* v = static_cast<const int32_t*>(res.data);
  for (int64_t i = 0; i < b.rows; ++i) {
    ASSERT_EQ(v[i], N() * (N() - 1) / 2 + N() * ((b.first + i) % 1000)) << "row " << b.first + i;
  }
  hvd_release(h);
}

TEST(Reducescatter, SeveralInFlightAreFusedCorrectly) {
  // Different row counts and widths; submitted together so they fuse.
  const int64_t dims[3][2] = {{2 * N() + 1, 3}, {N(), 1}, {1, 4}};
  std::vector<std::unique_ptr<Tensor>> ins;
  std::vector<hvd_handle> hs(3);
  for (int t = 0; t < 3; ++t) {
    ins.push_back(std::make_unique<Tensor>(T::f64, std::vector<int64_t>{dims[t][0], dims[t][1]}));
    for (int64_t i = 0; i < ins[t]->n(); ++i) ins[t]->Set(i, 100 * t + i + R());
    std::string name = "rs.fused." + std::to_string(t);
    ASSERT_EQ(hvd_reducescatter_async(name.c_str(), ins[t]->dl(), HVD_OP_SUM, nullptr, &hs[t]),
              HVD_OK);
  }
  for (int t = 0; t < 3; ++t) {
    ASSERT_EQ(hvd_wait(hs[t], 60000), HVD_OK) << hvd_last_error();
    DLTensor res;
    ASSERT_EQ(hvd_result(hs[t], &res), HVD_OK);
    const int64_t cols = dims[t][1];
    const Block b = MyBlock(dims[t][0]);
    ASSERT_EQ(res.shape[0], b.rows);
    const double* v = static_cast<const double*>(res.data);
    for (int64_t i = 0; i < b.rows * cols; ++i) {
      EXPECT_EQ(v[i], N() * (100.0 * t + b.first * cols + i) + N() * (N() - 1) / 2.0)
          << "tensor " << t << " element " << i;
    }
    hvd_release(hs[t]);
  }
}

TEST(Grouped, CompleteTogether) {
  Tensor a(T::f32, {3}), b(T::f32, {5}), c(T::f32, {1});
  Tensor ao(T::f32, {3}), bo(T::f32, {5}), co(T::f32, {1});
  for (auto* t : {&a, &b, &c}) {
    for (int64_t i = 0; i < t->n(); ++i) t->Set(i, R() + i);
  }
  const char* names[] = {"g.a", "g.b", "g.c"};
  const DLTensor* ins[] = {a.dl(), b.dl(), c.dl()};
  DLTensor* outs[] = {ao.dl(), bo.dl(), co.dl()};
  hvd_handle h;
  ASSERT_EQ(hvd_grouped_allreduce_async(names, ins, outs, 3, HVD_OP_SUM, nullptr, &h), HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  for (auto* t : {&ao, &bo, &co}) {
    for (int64_t i = 0; i < t->n(); ++i) EXPECT_EQ(t->Get(i), N() * (N() - 1) / 2.0 + N() * i);
  }
}

// hvd_get_stats counts the bytes allreduced and the collectives that
// carried them (a grouped allreduce is one while fusion is on), and the
// large ones through shared memory; a caller's older, smaller struct keeps
// the bytes past its size.
TEST(Stats, CountAllreducedBytesAndCollectives) {
  hvd_stats a{};
  a.struct_size = sizeof a;
  hvd_stats b = a, c = a;
  ASSERT_EQ(hvd_get_stats(&a), HVD_OK) << hvd_last_error();
  Tensor x(T::f32, {10}), xo(T::f32, {10});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Allreduce("stats.x", x, xo, HVD_OP_SUM), HVD_OK);
  ASSERT_EQ(hvd_get_stats(&b), HVD_OK);
  EXPECT_EQ(b.allreduced_bytes - a.allreduced_bytes, 5u * 40);
  EXPECT_EQ(b.host_allreduces - a.host_allreduces, 5u);

  Tensor p(T::f32, {3}), q(T::f32, {5}), po(T::f32, {3}), qo(T::f32, {5});
  const char* names[] = {"stats.p", "stats.q"};
  const DLTensor* ins[] = {p.dl(), q.dl()};
  DLTensor* outs[] = {po.dl(), qo.dl()};
  hvd_handle h;
  ASSERT_EQ(hvd_grouped_allreduce_async(names, ins, outs, 2, HVD_OP_SUM, nullptr, &h), HVD_OK);
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_get_stats(&c), HVD_OK);
  const char* threshold = std::getenv("HVD_FUSION_THRESHOLD");
  const bool fused = !(threshold && std::string(threshold) == "0");
  EXPECT_EQ(c.allreduced_bytes - b.allreduced_bytes, 8u * 4);
  EXPECT_EQ(c.host_allreduces - b.host_allreduces, fused ? 1u : 2u);

  hvd_stats old{};
  old.struct_size = offsetof(hvd_stats, host_allreduces);
  old.host_allreduces = 12345;
  ASSERT_EQ(hvd_get_stats(&old), HVD_OK);
  EXPECT_EQ(old.allreduced_bytes, c.allreduced_bytes);
  EXPECT_EQ(old.host_allreduces, 12345u);

  // Large allreduces (below the direct path's 1 MiB): through shared memory
  // (HVD_SHARED_MEMORY on) each is one chosen call (the ranks all on one
  // host) or two (hierarchically, a reduce-scatter and an allgather inside
  // the host), some streamed; without shared memory none.
  Tensor big(T::f32, {(1 << 18) - 1024}), bigo(T::f32, {(1 << 18) - 1024});
  constexpr uint64_t kBig = 6;
  for (uint64_t i = 0; i < kBig; ++i)
    ASSERT_EQ(Allreduce("stats.big", big, bigo, HVD_OP_SUM), HVD_OK);
  hvd_stats d = a;
  ASSERT_EQ(hvd_get_stats(&d), HVD_OK);
  const uint64_t chosen = d.shm_chosen_calls - c.shm_chosen_calls;
  EXPECT_TRUE(chosen == 0 || chosen == kBig || chosen == 2 * kBig) << chosen;
  EXPECT_LE(d.shm_streamed_calls - c.shm_streamed_calls, chosen);
  // The first large call faults the segment in, the second is timed plain,
  // the third streaming.
  if (chosen > 0 && c.shm_chosen_calls == 0) {
    EXPECT_GE(d.shm_streamed_calls - c.shm_streamed_calls, 1u);
  }
}

// With HVD_SHARED_MEMORY_MPI_ALLREDUCE=1 (mpi.collectives.np2.mpi_allreduce_path)
// a host-local allreduce of 2 MiB or more may take Open MPI's own, with
// HVD_SHARED_MEMORY_PEER_READS=1 (mpi.collectives.np2.peer_reads_path) one
// of 1 MiB or more in huge pages (as numpy's arrays) the direct path: rank 0
// times each path twice, in turn, before it chooses, so 8 calls of 3 MiB
// take the second path at least twice, on every rank alike, with exact sums
// and averages.
bool EnvIsOne(const char* var) {
  const char* v = std::getenv(var);
  return v && std::string(v) == "1";
}

TEST(Stats, SecondPathWhenAskedFor) {
  const bool mpi = EnvIsOne("HVD_SHARED_MEMORY_MPI_ALLREDUCE");
  if (!mpi && !EnvIsOne("HVD_SHARED_MEMORY_PEER_READS")) {
    GTEST_SKIP() << "runs with HVD_SHARED_MEMORY_MPI_ALLREDUCE=1 or HVD_SHARED_MEMORY_PEER_READS=1";
  }
  const int64_t n = (3 << 20) / 4;
  const hvd::testing::HugeBuffer xs(4 << 20, 64), ys(4 << 20, 64);  // whole huge pages
  if (!mpi) {
    Tensor huge(T::i32, {1});  // on every rank
    huge.Set(0, hvd::testing::KernelScansPageMaps() && xs.huge_bytes() >= n * 4 &&
                    ys.huge_bytes() >= n * 4);
    ASSERT_EQ(Allreduce("mpi_path.huge", huge, huge, HVD_OP_MIN), HVD_OK);
    if (huge.Get(0) == 0) GTEST_SKIP() << "no huge pages here, or no PAGEMAP_SCAN (Linux 6.7)";
  }
  hvd_stats a{};
  a.struct_size = sizeof a;
  ASSERT_EQ(hvd_get_stats(&a), HVD_OK);
  Tensor x(T::f32, {n}, xs.data()), y(T::f32, {n}, ys.data());
  for (int k = 0; k < 8; ++k) {
    const bool average = k % 2 == 1;
    for (int64_t i = 0; i < n; ++i) x.Set(i, V(R(), i));
    Tensor& out = k % 4 < 2 ? x : y;  // in place and not
    ASSERT_EQ(Allreduce("mpi_path", x, out, average ? HVD_OP_AVERAGE : HVD_OP_SUM), HVD_OK)
        << hvd_last_error();
    for (int64_t i = 0; i < n; ++i) {
      const double sum = Expected(HVD_OP_SUM, i, T::f32);
      ASSERT_NEAR(out.Get(i), average ? sum / N() : sum, Tolerance(T::f32, sum)) << k << " " << i;
    }
  }
  hvd_stats b = a;
  ASSERT_EQ(hvd_get_stats(&b), HVD_OK);
  const auto mine = static_cast<double>(mpi ? b.shm_backend_calls - a.shm_backend_calls
                                            : b.shm_peer_read_calls - a.shm_peer_read_calls);
  Tensor calls(T::i64, {2});  // the most and minus the fewest over the ranks
  calls.Set(0, mine);
  calls.Set(1, -mine);
  ASSERT_EQ(Allreduce("mpi_path.calls", calls, calls, HVD_OP_MAX), HVD_OK);
  EXPECT_GE(calls.Get(0), 2.0);
  EXPECT_EQ(calls.Get(0), -calls.Get(1)) << "the ranks took different paths";
}

// hvd_wait's time is counted and split where the collective started: the
// last rank submits 300 ms late, so every other rank's one wait spends at
// least 250 ms negotiating (waiting for it) and the late rank's almost none.
TEST(Stats, WaitsSplitSlowerRanksFromData) {
  hvd_stats a{};
  a.struct_size = sizeof a;
  hvd_stats b = a;
  Tensor x(T::f32, {1 << 16}), xo(T::f32, {1 << 16});
  for (int64_t i = 0; i < x.n(); ++i) x.Set(i, V(R(), i));
  ASSERT_EQ(Allreduce("stats.warm", x, xo, HVD_OP_SUM), HVD_OK) << hvd_last_error();
  const bool late = R() == N() - 1;
  ASSERT_EQ(hvd_get_stats(&a), HVD_OK);
  if (late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(Allreduce("stats.wait", x, xo, HVD_OP_SUM), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_get_stats(&b), HVD_OK);
  for (int64_t i = 0; i < xo.n(); ++i) ASSERT_EQ(xo.Get(i), Expected(HVD_OP_SUM, i, T::f32)) << i;
  const uint64_t negotiating = b.wait_negotiating_ns - a.wait_negotiating_ns;
  EXPECT_LE(b.waits - a.waits, 1u);
  EXPECT_LE(negotiating, b.wait_ns - a.wait_ns);
  if (late) {
    EXPECT_LT(negotiating, 250'000'000u) << "the late rank waited for no one";
  } else {
    EXPECT_EQ(b.waits - a.waits, 1u);
    EXPECT_GE(negotiating, 250'000'000u);
    // Then it waited for the data, briefly: the collective's start was marked.
    EXPECT_GT(b.wait_ns - a.wait_ns - negotiating, 0u);
    EXPECT_LT(b.wait_ns - a.wait_ns - negotiating, 250'000'000u);
  }
}

// Tensors in hvd_alloc_shared memory on every rank: five adjacent views of
// one buffer (as a bucket of gradients) summed in place as a group, and one
// of them reduced out of place into another shared buffer: exact results.
// Where all ranks share one host and shared memory carried the collectives,
// every one went between the buffers (shm_mapped_calls), not through the
// slots: each allreduced byte moved 2 bytes on each rank (read once, written
// once). Bad arguments are errors naming the call.
TEST(Allreduce, TensorsInSharedBuffers) {
  constexpr int kTensors = 5;
  int64_t elems = int64_t{1} << 16;  // 256 KiB each
  float *buf = nullptr, *out = nullptr;
  ASSERT_EQ(hvd_alloc_shared(kTensors * elems * 4, reinterpret_cast<void**>(&buf)), HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(hvd_alloc_shared(elems * 4, reinterpret_cast<void**>(&out)), HVD_OK);
  for (int64_t i = 0; i < kTensors * elems; ++i) buf[i] = static_cast<float>(V(R(), i));
  DLTensor views[kTensors + 1] = {};
  const char* names[kTensors] = {"shared.0", "shared.1", "shared.2", "shared.3", "shared.4"};
  const DLTensor* ins[kTensors];
  DLTensor* outs[kTensors];
  for (int t = 0; t <= kTensors; ++t) {
    views[t].data = t < kTensors ? buf + t * elems : out;
    views[t].device = {kDLCPU, 0};
    views[t].ndim = 1;
    views[t].dtype = {kDLFloat, 32, 1};
    views[t].shape = &elems;
    if (t < kTensors) ins[t] = outs[t] = &views[t];
  }
  hvd_stats a{};
  a.struct_size = sizeof a;
  hvd_stats b = a;
  ASSERT_EQ(hvd_get_stats(&a), HVD_OK);
  hvd_handle h;
  ASSERT_EQ(hvd_grouped_allreduce_async(names, ins, outs, kTensors, HVD_OP_SUM, nullptr, &h),
            HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  for (int64_t i = 0; i < kTensors * elems; ++i) {
    ASSERT_EQ(buf[i], Expected(HVD_OP_SUM, i, T::f32)) << i;
  }
  ASSERT_EQ(hvd_allreduce_async("shared.out", &views[1], &views[kTensors], HVD_OP_MAX, nullptr, &h),
            HVD_OK);
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_get_stats(&b), HVD_OK);
  for (int64_t i = 0; i < elems; ++i) ASSERT_EQ(out[i], Expected(HVD_OP_SUM, elems + i, T::f32));
  // Across hosts (the hierarchy) shared memory carries only the host's part;
  // without it (HVD_SHARED_MEMORY=0) no call chooses its stores.
  const uint64_t chosen = b.shm_chosen_calls - a.shm_chosen_calls;
  if (hvd_local_size() == hvd_size() && chosen > 0) {
    EXPECT_EQ(b.shm_mapped_calls - a.shm_mapped_calls, b.host_allreduces - a.host_allreduces);
    // Shares of an element more or less where the count does not divide.
    EXPECT_NEAR(static_cast<double>(b.host_bytes_moved - a.host_bytes_moved) /
                    static_cast<double>(b.allreduced_bytes - a.allreduced_bytes),
                2.0, 1e-4);
  }
  ASSERT_EQ(hvd_free_shared(out), HVD_OK);
  ASSERT_EQ(hvd_free_shared(buf), HVD_OK);

  void* p = nullptr;
  EXPECT_EQ(hvd_alloc_shared(0, &p), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(hvd_last_error(), "hvd_alloc_shared: 0 bytes");
  EXPECT_EQ(hvd_free_shared(buf), HVD_ERR_INVALID_ARGUMENT);  // freed already
  EXPECT_NE(std::string(hvd_last_error()).find("not a buffer from hvd_alloc_shared"),
            std::string::npos)
      << hvd_last_error();
}

// A large result out of place between shared buffers (past every machine's
// streaming-store threshold, StreamingStoreBytes: at most 64 MiB), into an
// output 4 bytes off 16-byte alignment, where streaming stores cannot start:
// every element exact, the floats on either side untouched.
TEST(Allreduce, LargeOutOfPlaceBetweenSharedBuffers) {
  const int64_t n = (int64_t{64} << 20) / 4 + 5;
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(hvd_alloc_shared(n * 4, reinterpret_cast<void**>(&in)), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_alloc_shared((n + 2) * 4, reinterpret_cast<void**>(&out)), HVD_OK)
      << hvd_last_error();
  for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 1000 + R());
  std::fill(out, out + n + 2, -1.0f);
  int64_t shape = n;
  DLTensor x{}, y{};
  x.data = in;
  y.data = out + 1;
  for (DLTensor* t : {&x, &y}) {
    t->device = {kDLCPU, 0};
    t->ndim = 1;
    t->dtype = {kDLFloat, 32, 1};
    t->shape = &shape;
  }
  hvd_handle h;
  ASSERT_EQ(hvd_allreduce_async("shared.large", &x, &y, HVD_OP_SUM, nullptr, &h), HVD_OK);
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  const float ranks = static_cast<float>(N() * (N() - 1) / 2);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[n + 1], -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i + 1], static_cast<float>(N() * (i % 1000)) + ranks) << i;
    ASSERT_EQ(in[i], static_cast<float>(i % 1000 + R())) << i;
  }
  ASSERT_EQ(hvd_free_shared(out), HVD_OK);
  ASSERT_EQ(hvd_free_shared(in), HVD_OK);
}

// ------------------------------------------------------------------- bool

// Rank r's flag at element i: true for about a third of (rank, element).
bool Flag(int r, int64_t i) {
  return (r + i) % 3 == 0;
}

// bool reduces logically: SUM and MAX are or, MIN and PRODUCT are and.
TEST(Bool, ReducesLogicallyEverywhere) {
  const int64_t n = 7;
  for (hvd_reduce_op op : {HVD_OP_SUM, HVD_OP_MAX, HVD_OP_MIN, HVD_OP_PRODUCT}) {
    const bool is_or = op == HVD_OP_SUM || op == HVD_OP_MAX;
    Tensor in(T::b8, {n}), out(T::b8, {n});
    for (int64_t i = 0; i < n; ++i) in.Set(i, Flag(R(), i));
    const std::string name = "bool.ar." + std::to_string(op);
    ASSERT_EQ(Allreduce(name.c_str(), in, out, op), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < n; ++i) {
      bool any = false, all = true;
      for (int r = 0; r < N(); ++r) {
        any = any || Flag(r, i);
        all = all && Flag(r, i);
      }
      EXPECT_EQ(out.Get(i), (is_or ? any : all) ? 1 : 0) << name << " element " << i;
    }
  }
  // Reducescatter: or of this rank's block.
  const int64_t rows = 2 * N() + 1;
  Tensor rs(T::b8, {rows});
  for (int64_t i = 0; i < rows; ++i) rs.Set(i, Flag(R(), i));
  hvd_handle h;
  ASSERT_EQ(hvd_reducescatter_async("bool.rs", rs.dl(), HVD_OP_SUM, nullptr, &h), HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
  DLTensor res;
  ASSERT_EQ(hvd_result(h, &res), HVD_OK);
  EXPECT_EQ(res.dtype.code, 6);
  EXPECT_EQ(res.dtype.bits, 8);
  const Block b = MyBlock(rows);
  ASSERT_EQ(res.shape[0], b.rows);
  for (int64_t i = 0; i < b.rows; ++i) {
    bool any = false;
    for (int r = 0; r < N(); ++r) any = any || Flag(r, b.first + i);
    EXPECT_EQ(static_cast<const uint8_t*>(res.data)[i], any ? 1 : 0) << "row " << b.first + i;
  }
  hvd_release(h);
}

TEST(Bool, MovesUnchanged) {
  // Allgather of R() + 1 flags per rank.
  Tensor in(T::b8, {R() + 1});
  for (int64_t i = 0; i <= R(); ++i) in.Set(i, Flag(R(), i));
  hvd_handle h;
  ASSERT_EQ(hvd_allgather_async("bool.ag", in.dl(), nullptr, &h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
  DLTensor res;
  ASSERT_EQ(hvd_result(h, &res), HVD_OK);
  ASSERT_EQ(res.shape[0], N() * (N() + 1) / 2);
  int64_t k = 0;
  for (int r = 0; r < N(); ++r) {
    for (int64_t i = 0; i <= r; ++i, ++k) {
      EXPECT_EQ(static_cast<const uint8_t*>(res.data)[k], Flag(r, i) ? 1 : 0) << r << "," << i;
    }
  }
  hvd_release(h);
  // Broadcast from the last rank, alltoall of one flag per peer.
  Tensor bc(T::b8, {5});
  for (int64_t i = 0; i < 5; ++i) bc.Set(i, Flag(R(), i));
  ASSERT_EQ(hvd_broadcast_async("bool.bc", bc.dl(), N() - 1, nullptr, &h), HVD_OK);
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(bc.Get(i), Flag(N() - 1, i) ? 1 : 0);
  Tensor a2a(T::b8, {N()});
  for (int d = 0; d < N(); ++d) a2a.Set(d, Flag(R(), d));
  ASSERT_EQ(hvd_alltoall_async("bool.a2a", a2a.dl(), nullptr, 0, nullptr, &h), HVD_OK);
  ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_result(h, &res), HVD_OK);
  for (int from = 0; from < N(); ++from) {
    EXPECT_EQ(static_cast<const uint8_t*>(res.data)[from], Flag(from, R()) ? 1 : 0);
  }
  hvd_release(h);
}

TEST(Bool, AverageAndScalingAreRefused) {
  Tensor in(T::b8, {2}), out(T::b8, {2});
  hvd_handle h = 0;
  EXPECT_EQ(hvd_allreduce_async("bool.avg", in.dl(), out.dl(), HVD_OP_AVERAGE, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("bool"), std::string::npos) << hvd_last_error();
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.postscale_factor = 0.5;
  EXPECT_EQ(hvd_allreduce_async("bool.scaled", in.dl(), out.dl(), HVD_OP_SUM, &o, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("scaled"), std::string::npos) << hvd_last_error();
  const DLTensor* ins[] = {in.dl()};
  EXPECT_EQ(hvd_grouped_reducescatter_async(nullptr, ins, 1, HVD_OP_AVERAGE, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("inputs[0] is bool"), std::string::npos)
      << hvd_last_error();
}

// ------------------------------------------- grouped allgather/reducescatter

// Tensor k of a grouped test, rank r, element i: small integers, exact in
// every dtype (int8 included).
double GV(int k, int r, int64_t i) {
  return (k * 7 + r * 5 + i) % 50;
}

// Reads result k of handle h and checks it against every rank's rows of
// tensor k (rows_of(r) rows of `row` elements each, values GV).
template <typename RowsOf>
void ExpectGathered(hvd_handle h, int k, T t, int64_t row, RowsOf rows_of,
                    const std::vector<int64_t>& inner) {
  DLTensor res;
  ASSERT_EQ(hvd_result_at(h, k, &res), HVD_OK) << hvd_last_error();
  int64_t total = 0;
  for (int r = 0; r < N(); ++r) total += rows_of(r);
  ASSERT_EQ(res.ndim, static_cast<int>(1 + inner.size())) << "tensor " << k;
  EXPECT_EQ(res.shape[0], total) << "tensor " << k;
  for (size_t d = 0; d < inner.size(); ++d) EXPECT_EQ(res.shape[d + 1], inner[d]);
  EXPECT_EQ(res.dtype.bits, hvdtest::ToDL(t).bits);
  EXPECT_EQ(res.dtype.code, hvdtest::ToDL(t).code);
  const auto* p = static_cast<const uint8_t*>(res.data);
  int64_t at = 0;
  for (int r = 0; r < N(); ++r) {
    for (int64_t i = 0; i < rows_of(r) * row; ++i, ++at) {
      double want = GV(k, r, i);
      if (t == T::b8) want = want != 0 ? 1 : 0;
      EXPECT_EQ(Tensor::Load(p + at * hvdtest::Size(t), t), want)
          << "tensor " << k << " (" << hvdtest::Name(t) << ") from rank " << r << " element " << i;
    }
  }
}

// Uneven first dimensions, mixed shapes and dtypes (two of them shared, so
// those fuse), bool included; every tensor gets its own result.
TEST(GroupedAllgather, UnevenRowsMixedShapesAndTypes) {
  struct Spec {
    T t;
    std::vector<int64_t> inner;  // dimensions after the first
    int64_t (*rows)(int r);
  };
  const Spec specs[] = {
      {T::f32, {3}, [](int r) -> int64_t { return r + 1; }},
      {T::i16, {}, [](int r) -> int64_t { return 2 * r + 1; }},
      {T::f32, {2, 2}, [](int r) -> int64_t { return r % 2; }},  // rank 0 sends no rows
      {T::b8, {2}, [](int r) -> int64_t { return r + 2; }},
      {T::u8, {1}, [](int) -> int64_t { return 3; }},
      {T::i8, {}, [](int r) -> int64_t { return r; }},
      {T::i32, {2}, [](int r) -> int64_t { return 1 + r % 3; }},
      {T::i64, {}, [](int) -> int64_t { return 1; }},
      {T::f16, {2}, [](int r) -> int64_t { return r + 1; }},
      {T::bf16, {2}, [](int r) -> int64_t { return r + 1; }},
      {T::f64, {3}, [](int r) -> int64_t { return N() - r; }},
  };
  const int count = static_cast<int>(sizeof(specs) / sizeof(specs[0]));
  for (bool named : {true, false}) {
    std::vector<std::unique_ptr<Tensor>> ts;
    std::vector<const DLTensor*> ins;
    std::vector<std::string> name_store;
    std::vector<const char*> names;
    for (int k = 0; k < count; ++k) {
      std::vector<int64_t> shape = {specs[k].rows(R())};
      shape.insert(shape.end(), specs[k].inner.begin(), specs[k].inner.end());
      ts.push_back(std::make_unique<Tensor>(specs[k].t, shape));
      for (int64_t i = 0; i < ts[k]->n(); ++i) ts[k]->Set(i, GV(k, R(), i));
      ins.push_back(ts[k]->dl());
      name_store.push_back("gag." + std::to_string(k));
    }
    for (auto& n : name_store) names.push_back(n.c_str());
    hvd_handle h;
    ASSERT_EQ(
        hvd_grouped_allgather_async(named ? names.data() : nullptr, ins.data(), count, nullptr, &h),
        HVD_OK)
        << hvd_last_error();
    ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
    for (int k = 0; k < count; ++k) {
      int64_t row = 1;
      for (auto d : specs[k].inner) row *= d;
      ExpectGathered(h, k, specs[k].t, row, specs[k].rows, specs[k].inner);
    }
    // hvd_result is result 0; indices outside the group are refused.
    DLTensor r0, rk;
    ASSERT_EQ(hvd_result(h, &r0), HVD_OK);
    ASSERT_EQ(hvd_result_at(h, 0, &rk), HVD_OK);
    EXPECT_EQ(r0.data, rk.data);
    EXPECT_EQ(hvd_result_at(h, count, &rk), HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hvd_last_error()).find("outside"), std::string::npos);
    EXPECT_EQ(hvd_result_at(h, -1, &rk), HVD_ERR_INVALID_ARGUMENT);
    hvd_release(h);
  }
}

TEST(GroupedAllgather, CallerAllocatorGetsEveryResult) {
  Tensor a(T::f64, {R() + 1}), b(T::i32, {2, 2});
  for (int64_t i = 0; i < a.n(); ++i) a.Set(i, GV(0, R(), i));
  for (int64_t i = 0; i < b.n(); ++i) b.Set(i, GV(1, R(), i));
  int calls = 0;
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.allocator = TestAlloc;
  o.allocator_user_data = &calls;
  const DLTensor* ins[] = {a.dl(), b.dl()};
  hvd_handle h;
  ASSERT_EQ(hvd_grouped_allgather_async(nullptr, ins, 2, &o, &h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
  EXPECT_EQ(calls, 2);
  DLTensor r0, r1;
  ASSERT_EQ(hvd_result_at(h, 0, &r0), HVD_OK);
  ASSERT_EQ(hvd_result_at(h, 1, &r1), HVD_OK);
  EXPECT_NE(r0.data, r1.data);
  ExpectGathered(h, 0, T::f64, 1, [](int r) -> int64_t { return r + 1; }, {});
  ExpectGathered(h, 1, T::i32, 2, [](int) -> int64_t { return 2; }, {2});
  hvd_release(h);
}

// This rank's block of tensor k of a grouped reduce-scatter: rows of `cols`
// elements, rank r's input GV-like values shifted by r.
TEST(GroupedReducescatter, UnevenSplitsOpsAndScaling) {
  struct Spec {
    T t;
    int64_t rows;  // first dimension (uneven for most sizes)
    int64_t cols;
  };
  const Spec specs[] = {
      {T::f32, 2 * N() + 1, 2}, {T::i32, N(), 3},     {T::f64, 1, 4},
      {T::i16, 3 * N() + 2, 1}, {T::f32, N() + 1, 1}, {T::i64, 2 * N() - 1, 2},
      {T::f16, N() + 1, 2},     {T::bf16, N(), 1},    {T::u8, N() + 1, 1},
      {T::i8, N(), 2},
  };
  const int count = static_cast<int>(sizeof(specs) / sizeof(specs[0]));
  struct Case {
    hvd_reduce_op op;
    double pre, post;
  };
  for (Case c : {Case{HVD_OP_SUM, 1, 1}, Case{HVD_OP_AVERAGE, 1, 1}, Case{HVD_OP_SUM, 2, 0.25}}) {
    std::vector<std::unique_ptr<Tensor>> ts;
    std::vector<const DLTensor*> ins;
    for (int k = 0; k < count; ++k) {
      ts.push_back(
          std::make_unique<Tensor>(specs[k].t, std::vector<int64_t>{specs[k].rows, specs[k].cols}));
      for (int64_t i = 0; i < ts[k]->n(); ++i) ts[k]->Set(i, (i + k) % 10 + R());
      ins.push_back(ts[k]->dl());
    }
    hvd_op_options o = HVD_OP_OPTIONS_INIT;
    o.prescale_factor = c.pre;
    o.postscale_factor = c.post;
    const bool scaled = c.pre != 1 || c.post != 1;
    hvd_handle h;
    ASSERT_EQ(hvd_grouped_reducescatter_async(nullptr, ins.data(), count, c.op, &o, &h), HVD_OK)
        << hvd_last_error();
    ASSERT_EQ(hvd_wait(h, 60000), HVD_OK) << hvd_last_error();
    for (int k = 0; k < count; ++k) {
      const T t = specs[k].t;
      const int64_t cols = specs[k].cols;
      DLTensor res;
      ASSERT_EQ(hvd_result_at(h, k, &res), HVD_OK) << hvd_last_error();
      const Block b = MyBlock(specs[k].rows);
      ASSERT_EQ(res.ndim, 2);
      ASSERT_EQ(res.shape[0], b.rows) << "tensor " << k;
      EXPECT_EQ(res.shape[1], cols);
      const auto* p = static_cast<const uint8_t*>(res.data);
      for (int64_t i = 0; i < b.rows * cols; ++i) {
        const int64_t at = b.first * cols + i;
        const double sum = N() * static_cast<double>((at + k) % 10) + N() * (N() - 1) / 2.0;
        double want = sum;
        if (c.op == HVD_OP_AVERAGE) {
          want = hvdtest::IsFloat(t) ? sum / N() : std::trunc(sum * (1.0 / N()));
        } else if (scaled) {
          if (!hvdtest::IsFloat(t)) continue;  // integer scaling: Allreduce.InPlaceAndScaled
          want = sum * c.pre * c.post;
        }
        EXPECT_NEAR(Tensor::Load(p + i * hvdtest::Size(t), t), want, Tolerance(t, want))
            << "tensor " << k << " (" << hvdtest::Name(t) << ") op " << c.op << " element " << at;
      }
    }
    hvd_release(h);
  }
}

TEST(GroupedReducescatter, ProcessSetOfEvenRanks) {
  if (N() < 3) GTEST_SKIP() << "needs 3 ranks";
  std::vector<int32_t> evens;
  for (int r = 0; r < N(); r += 2) evens.push_back(r);
  int32_t set = 0;
  ASSERT_EQ(hvd_add_process_set(evens.data(), static_cast<int>(evens.size()), &set), HVD_OK)
      << hvd_last_error();
  if (R() % 2 == 0) {
    const int m = static_cast<int>(evens.size()), me = R() / 2;
    Tensor a(T::f32, {2 * m + 1}), g(T::i32, {me + 1});
    for (int64_t i = 0; i < a.n(); ++i) a.Set(i, i + R());
    for (int64_t i = 0; i < g.n(); ++i) g.Set(i, 10 * R() + i);
    hvd_op_options o = HVD_OP_OPTIONS_INIT;
    o.process_set = set;
    const DLTensor* rs_in[] = {a.dl()};
    const DLTensor* ag_in[] = {g.dl()};
    hvd_handle rs, ag;
    ASSERT_EQ(hvd_grouped_reducescatter_async(nullptr, rs_in, 1, HVD_OP_SUM, &o, &rs), HVD_OK)
        << hvd_last_error();
    ASSERT_EQ(hvd_grouped_allgather_async(nullptr, ag_in, 1, &o, &ag), HVD_OK) << hvd_last_error();
    ASSERT_EQ(hvd_wait(rs, 60000), HVD_OK) << hvd_last_error();
    ASSERT_EQ(hvd_wait(ag, 60000), HVD_OK) << hvd_last_error();
    DLTensor res;
    ASSERT_EQ(hvd_result_at(rs, 0, &res), HVD_OK);
    int64_t first = 0;
    for (int k = 0; k < me; ++k) first += 2 + (k < 1 ? 1 : 0);
    const int64_t mine = 2 + (me < 1 ? 1 : 0);
    ASSERT_EQ(res.shape[0], mine);
    double rank_sum = 0;
    for (int32_t r : evens) rank_sum += r;
    for (int64_t i = 0; i < mine; ++i) {
      EXPECT_EQ(static_cast<const float*>(res.data)[i], m * (first + i) + rank_sum);
    }
    ASSERT_EQ(hvd_result_at(ag, 0, &res), HVD_OK);
    const auto* v = static_cast<const int32_t*>(res.data);
    int64_t at = 0;
    for (int j = 0; j < m; ++j) {
      for (int64_t i = 0; i <= j; ++i) EXPECT_EQ(v[at++], 10 * evens[j] + i);
    }
    EXPECT_EQ(res.shape[0], at);
    hvd_release(rs);
    hvd_release(ag);
  }
  ASSERT_EQ(hvd_remove_process_set(set), HVD_OK) << hvd_last_error();
}

TEST(Grouped, BadArgumentsAreClearErrors) {
  Tensor a(T::f32, {2}), scalar(T::f32, {});
  const DLTensor* ins[] = {a.dl(), scalar.dl()};
  const DLTensor* with_null[] = {a.dl(), nullptr};
  hvd_handle h = 0;
  auto refused = [](hvd_status s, const char* needle) {
    EXPECT_EQ(s, HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hvd_last_error()).find(needle), std::string::npos) << hvd_last_error();
  };
  refused(hvd_grouped_allgather_async(nullptr, ins, 0, nullptr, &h), "count > 0");
  refused(hvd_grouped_allgather_async(nullptr, nullptr, 1, nullptr, &h), "non-NULL inputs");
  refused(hvd_grouped_allgather_async(nullptr, with_null, 2, nullptr, &h), "inputs[1] is NULL");
  refused(hvd_grouped_allgather_async(nullptr, ins, 1, nullptr, nullptr), "handle is NULL");
  refused(hvd_grouped_reducescatter_async(nullptr, ins, 2, HVD_OP_SUM, nullptr, &h),
          "inputs[1] is a scalar");
  refused(hvd_grouped_reducescatter_async(nullptr, ins, 1, HVD_OP_MIN, nullptr, &h),
          "HVD_OP_SUM and HVD_OP_AVERAGE");
  DLTensor res;
  refused(hvd_result_at(987654321, 0, &res), "hvd_result_at");
}

TEST(Sync, BarrierAndJoin) {
  EXPECT_EQ(hvd_barrier(0), HVD_OK) << hvd_last_error();
  // Rank r runs r + 1 steps, then joins; joined ranks contribute zeros.
  for (int step = 0; step <= R(); ++step) {
    Tensor a(T::f32, {4}), ao(T::f32, {4});
    for (int64_t i = 0; i < 4; ++i) a.Set(i, R() + 1);
    ASSERT_EQ(Allreduce("join.t", a, ao, HVD_OP_SUM), HVD_OK) << hvd_last_error();
    double expect = 0;
    for (int r = step; r < N(); ++r) expect += r + 1;
    EXPECT_EQ(ao.Get(0), expect) << "step " << step;
  }
  int last = -1;
  EXPECT_EQ(hvd_join(0, &last), HVD_OK) << hvd_last_error();
  EXPECT_EQ(last, N() - 1);
  EXPECT_EQ(hvd_barrier(0), HVD_OK) << hvd_last_error();
}

TEST(ProcessSets, EvenAndOddSetsRunConcurrently) {
  std::vector<int32_t> evens, odds;
  for (int r = 0; r < N(); ++r) (r % 2 ? odds : evens).push_back(r);
  int32_t even_id = -1, odd_id = -1;
  ASSERT_EQ(hvd_add_process_set(evens.data(), static_cast<int>(evens.size()), &even_id), HVD_OK)
      << hvd_last_error();
  EXPECT_GT(even_id, 0);
  if (!odds.empty()) {
    ASSERT_EQ(hvd_add_process_set(odds.data(), static_cast<int>(odds.size()), &odd_id), HVD_OK)
        << hvd_last_error();
    EXPECT_NE(odd_id, even_id);
  }
  const bool even = R() % 2 == 0;
  const int32_t mine = even ? even_id : odd_id;
  const auto& members = even ? evens : odds;
  EXPECT_EQ(hvd_process_set_included(mine), 1);
  EXPECT_EQ(hvd_process_set_size(mine), static_cast<int>(members.size()));
  EXPECT_EQ(hvd_process_set_rank(mine), R() / 2);
  if (!odds.empty()) {
    EXPECT_EQ(hvd_process_set_included(even ? odd_id : even_id), 0);
  }
  EXPECT_EQ(hvd_process_set_rank(777), -1);

  // Both sets reduce at the same time, plus a global op in flight.
  Tensor a(T::i32, {6}), ao(T::i32, {6}), g(T::i32, {1}), go(T::i32, {1});
  for (int64_t i = 0; i < 6; ++i) a.Set(i, R() + 1);
  g.Set(0, 1);
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.process_set = mine;
  hvd_handle hs, hg;
  ASSERT_EQ(hvd_allreduce_async("ps.sum", a.dl(), ao.dl(), HVD_OP_SUM, &o, &hs), HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(hvd_allreduce_async("ps.global", g.dl(), go.dl(), HVD_OP_SUM, nullptr, &hg), HVD_OK);
  ASSERT_EQ(Wait(hs), HVD_OK) << hvd_last_error();
  ASSERT_EQ(Wait(hg), HVD_OK) << hvd_last_error();
  double expect = 0;
  for (int r : members) expect += r + 1;
  EXPECT_EQ(ao.Get(5), expect);
  EXPECT_EQ(go.Get(0), N());

  // Broadcast inside the set from its rank 0, allgather inside the set.
  Tensor b(T::f32, {2});
  b.Set(0, R());
  ASSERT_EQ(hvd_broadcast_async("ps.bcast", b.dl(), 0, &o, &hs), HVD_OK) << hvd_last_error();
  ASSERT_EQ(Wait(hs), HVD_OK) << hvd_last_error();
  EXPECT_EQ(b.Get(0), members[0]);

  // An op on a set this rank is not in is refused.
  if (!odds.empty()) {
    hvd_op_options other = HVD_OP_OPTIONS_INIT;
    other.process_set = even ? odd_id : even_id;
    EXPECT_EQ(hvd_allreduce_async("ps.notmine", a.dl(), ao.dl(), HVD_OP_SUM, &other, &hs),
              HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hvd_last_error()).find("not a member"), std::string::npos);
  }
  EXPECT_EQ(hvd_remove_process_set(even_id), HVD_OK) << hvd_last_error();
  if (!odds.empty()) {
    EXPECT_EQ(hvd_remove_process_set(odd_id), HVD_OK) << hvd_last_error();
  }
  EXPECT_EQ(hvd_process_set_size(even_id), -1);
  EXPECT_EQ(hvd_remove_process_set(0), HVD_ERR_INVALID_ARGUMENT);
}

// Calls before hvd_init must fail cleanly; checked before RUN_ALL_TESTS.
std::string CheckBeforeInit() {
  std::string bad;
  Tensor a(T::f32, {2});
  hvd_handle h;
  if (hvd_is_initialized() != 0) bad += "is_initialized; ";
  if (hvd_rank() != -1) bad += "rank; ";
  if (hvd_allreduce_async("x", a.dl(), a.dl(), HVD_OP_SUM, nullptr, &h) != HVD_ERR_NOT_INITIALIZED)
    bad += "allreduce; ";
  if (std::string(hvd_last_error()).find("not initialized") == std::string::npos)
    bad += "message; ";
  if (hvd_barrier(0) != HVD_ERR_NOT_INITIALIZED) bad += "barrier; ";
  if (hvd_shutdown() != HVD_OK) bad += "shutdown before init; ";
  return bad;
}

std::string g_before_init;

// Init, a burst of asynchronous allreduces, shutdown, again and again: the
// negotiation messages of one incarnation must never reach the next (MPI
// reuses a freed communicator's context id for the next duplicate).
bool ReinitCycles() {
  constexpr int kCycles = 8, kTensors = 300;
  for (int c = 0; c < kCycles; ++c) {
    if (hvd_init() != HVD_OK) {
      std::fprintf(stderr, "FAILED: init of cycle %d: %s\n", c, hvd_last_error());
      return false;
    }
    std::deque<Tensor> t;  // Tensor points into itself: never moved
    std::vector<hvd_handle> h(kTensors, 0);
    for (int i = 0; i < kTensors; ++i) t.emplace_back(T::f32, std::vector<int64_t>{4});
    for (int i = 0; i < kTensors; ++i) {
      t[i].Set(0, static_cast<float>(hvd_rank() + i + c));
      const std::string name = "cycle." + std::to_string(i);
      if (hvd_allreduce_async(name.c_str(), t[i].dl(), t[i].dl(), HVD_OP_SUM, nullptr, &h[i]) !=
          HVD_OK) {
        std::fprintf(stderr, "FAILED: cycle %d submit %d: %s\n", c, i, hvd_last_error());
        return false;
      }
    }
    const int n = hvd_size();
    for (int i = 0; i < kTensors; ++i) {
      const float want = static_cast<float>(n * (n - 1) / 2 + n * (i + c));
      if (hvd_wait(h[i], 60000) != HVD_OK || t[i].Get(0) != want) {
        std::fprintf(stderr, "FAILED: cycle %d tensor %d: got %g, want %g: %s\n", c, i,
                     static_cast<double>(t[i].Get(0)), static_cast<double>(want), hvd_last_error());
        return false;
      }
      hvd_release(h[i]);
    }
    if (hvd_shutdown() != HVD_OK) {
      std::fprintf(stderr, "FAILED: shutdown of cycle %d: %s\n", c, hvd_last_error());
      return false;
    }
  }
  return true;
}

TEST(Lifecycle, CallsBeforeInitFailCleanly) {
  EXPECT_EQ(g_before_init, "");
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_before_init = CheckBeforeInit();
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error());
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  // After shutdown: calls fail with a status, and init works again.
  if (hvd_shutdown() != HVD_OK) rc = 1;
  Tensor a(T::f32, {2}), ao(T::f32, {2});
  hvd_handle h;
  if (hvd_allreduce_async("x", a.dl(), ao.dl(), HVD_OP_SUM, nullptr, &h) !=
      HVD_ERR_NOT_INITIALIZED) {
    std::fprintf(stderr, "FAILED: allreduce after shutdown did not return NOT_INITIALIZED\n");
    rc = 1;
  }
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "FAILED: re-init: %s\n", hvd_last_error());
    return 1;
  }
  a.Set(0, 2);
  if (Allreduce("reinit", a, ao, HVD_OP_SUM) != HVD_OK || ao.Get(0) != 2 * hvd_size()) {
    std::fprintf(stderr, "FAILED: allreduce after re-init: %s\n", hvd_last_error());
    rc = 1;
  }
  hvd_shutdown();
  if (!ReinitCycles()) rc = 1;
  return rc;
}
