// Every collective on CUDA tensors, exact results, under any launcher:
// 1 rank (NCCL) or N ranks sharing GPU 0 through host staging
// (HVD_GPU_OPERATIONS=mpi). Exits 77 (ctest SKIP) when no CUDA device is
// usable, so CI machines without GPUs report the reason instead of a failure.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <hvd/hvd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/mp/hvd_test_main.h"
#include "tests/mp/test_tensor.h"

using hvdtest::N;
using hvdtest::R;
using hvdtest::T;

namespace {

#define CU(expr) ASSERT_EQ((expr), cudaSuccess) << #expr
#define HVD(expr) ASSERT_EQ((expr), HVD_OK) << #expr << ": " << hvd_last_error()

// A host tensor (values as doubles, see test_tensor.h) with a device twin.
class GpuTensor {
 public:
  GpuTensor(T t, std::vector<int64_t> shape) : host_(t, shape), shape_(std::move(shape)) {
    const size_t bytes = static_cast<size_t>(host_.n()) * hvdtest::Size(t) + 1;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) == cudaSuccess) dev_.reset(p);
    dl_ = *host_.dl();
    dl_.data = dev_.get();
    dl_.device = {kDLCUDA, 0};
    dl_.shape = shape_.data();
  }
  hvdtest::Tensor& host() { return host_; }
  DLTensor* dl() { return &dl_; }
  void Upload() {
    cudaMemcpy(dev_.get(), host_.dl()->data,
               static_cast<size_t>(host_.n()) * hvdtest::Size(host_.type()),
               cudaMemcpyHostToDevice);
  }
  void Download() {
    cudaMemcpy(host_.dl()->data, dev_.get(),
               static_cast<size_t>(host_.n()) * hvdtest::Size(host_.type()),
               cudaMemcpyDeviceToHost);
  }

 private:
  struct Free {
    void operator()(void* p) const { cudaFree(p); }
  };
  hvdtest::Tensor host_;
  std::vector<int64_t> shape_;
  std::unique_ptr<void, Free> dev_;
  DLTensor dl_{};
};

// Copies a device result (hvd_result) to the host as doubles.
std::vector<double> ReadResult(const DLTensor& r, T t) {
  int64_t n = 1;
  for (int i = 0; i < r.ndim; ++i) n *= r.shape[i];
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * hvdtest::Size(t) + 1);
  cudaMemcpy(bytes.data(), static_cast<const uint8_t*>(r.data) + r.byte_offset,
             static_cast<size_t>(n) * hvdtest::Size(t), cudaMemcpyDeviceToHost);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = hvdtest::Tensor::Load(bytes.data() + i * hvdtest::Size(t), t);
  return v;
}

TEST(Gpu, AllreduceSumAverageEveryType) {
  for (T t : hvdtest::AllTypes()) {
    if (t == T::i16) continue;  // NCCL has no int16: Gpu.Int16ReduceIsUnsupported
    for (hvd_reduce_op op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX}) {
      GpuTensor x(t, {5, 3});
      for (int64_t i = 0; i < x.host().n(); ++i) x.host().Set(i, (R() + 1) * (i % 7));
      x.Upload();
      hvd_handle h = 0;
      const std::string name = std::string("ar.") + hvdtest::Name(t) + "." + std::to_string(op);
      HVD(hvd_allreduce_async(name.c_str(), x.dl(), x.dl(), op, nullptr, &h));
      HVD(hvd_wait(h, -1));
      HVD(hvd_release(h));
      x.Download();
      const double tri = N() * (N() + 1) / 2.0;
      for (int64_t i = 0; i < x.host().n(); ++i) {
        const double v = static_cast<double>(i % 7);
        double want = op == HVD_OP_SUM   ? tri * v
                      : op == HVD_OP_MIN ? v
                      : op == HVD_OP_MAX ? N() * v
                                         : tri * v / N();
        if (!hvdtest::IsFloat(t)) want = std::trunc(want);
        ASSERT_NEAR(x.host().Get(i), want, hvdtest::IsHalf(t) ? 0.07 * want + 1e-3 : 1e-9)
            << hvdtest::Name(t) << " op " << op << " [" << i << "]";
      }
    }
  }
}

TEST(Gpu, AllreduceStreamAndScale) {
  cudaStream_t s = nullptr;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GpuTensor x(T::f32, {1000});
  for (int64_t i = 0; i < 1000; ++i) x.host().Set(i, i);
  // Produced on the caller's stream: hvd must wait for this copy.
  CU(cudaMemcpyAsync(x.dl()->data, x.host().dl()->data, 4000, cudaMemcpyHostToDevice, s));
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.cuda_stream = s;
  o.prescale_factor = 2.0;
  o.postscale_factor = 0.5;
  hvd_handle h = 0;
  HVD(hvd_allreduce_async("ar.stream", x.dl(), x.dl(), HVD_OP_SUM, &o, &h));
  HVD(hvd_wait(h, -1));
  HVD(hvd_release(h));
  x.Download();
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(x.host().Get(i), static_cast<double>(N() * i));
  cudaStreamDestroy(s);
}

TEST(Gpu, GroupedAllreduceIsFused) {
  std::vector<std::unique_ptr<GpuTensor>> ts;
  std::vector<DLTensor*> dls;
  for (int k = 0; k < 10; ++k) {
    ts.push_back(std::make_unique<GpuTensor>(T::f32, std::vector<int64_t>{k + 1}));
    for (int64_t i = 0; i <= k; ++i) ts.back()->host().Set(i, k * 100 + i + R());
    ts.back()->Upload();
    dls.push_back(ts.back()->dl());
  }
  hvd_handle h = 0;
  HVD(hvd_grouped_allreduce_async(nullptr, dls.data(), dls.data(), 10, HVD_OP_AVERAGE, nullptr,
                                  &h));
  HVD(hvd_wait(h, -1));
  HVD(hvd_release(h));
  for (int k = 0; k < 10; ++k) {
    ts[k]->Download();
    for (int64_t i = 0; i <= k; ++i) {
      ASSERT_DOUBLE_EQ(ts[k]->host().Get(i), k * 100 + i + (N() - 1) / 2.0) << k << "," << i;
    }
  }
}

TEST(Gpu, AllgatherUnevenRows) {
  GpuTensor x(T::i32, {R() + 1, 2});
  for (int64_t i = 0; i < x.host().n(); ++i) x.host().Set(i, R() * 1000 + i);
  x.Upload();
  hvd_handle h = 0;
  HVD(hvd_allgather_async("ag", x.dl(), nullptr, &h));
  HVD(hvd_wait(h, -1));
  DLTensor r{};
  HVD(hvd_result(h, &r));
  ASSERT_EQ(r.device.device_type, kDLCUDA);
  std::vector<double> got = ReadResult(r, T::i32);
  size_t k = 0;
  for (int rank = 0; rank < N(); ++rank) {
    for (int64_t i = 0; i < (rank + 1) * 2; ++i) ASSERT_EQ(got[k++], rank * 1000 + i);
  }
  ASSERT_EQ(k, got.size());
  HVD(hvd_release(h));
}

// Each tensor of a grouped allgather/reducescatter gets a device result of
// its own (hvd_result_at), fused through one collective per dtype.
TEST(Gpu, GroupedAllgatherAndReducescatter) {
  std::vector<std::unique_ptr<GpuTensor>> ts;
  std::vector<const DLTensor*> dls;
  const T types[] = {T::f32, T::i16, T::b8};
  for (int k = 0; k < 3; ++k) {
    ts.push_back(std::make_unique<GpuTensor>(types[k], std::vector<int64_t>{R() + 1 + k, 2}));
    for (int64_t i = 0; i < ts.back()->host().n(); ++i)
      ts.back()->host().Set(i, types[k] == T::b8 ? (R() + i) % 2 : R() * 100 + i);
    ts.back()->Upload();
    dls.push_back(ts.back()->dl());
  }
  hvd_handle h = 0;
  HVD(hvd_grouped_allgather_async(nullptr, dls.data(), 3, nullptr, &h));
  HVD(hvd_wait(h, -1));
  for (int k = 0; k < 3; ++k) {
    DLTensor r{};
    HVD(hvd_result_at(h, k, &r));
    ASSERT_EQ(r.device.device_type, kDLCUDA);
    std::vector<double> got = ReadResult(r, types[k]);
    size_t at = 0;
    for (int rank = 0; rank < N(); ++rank) {
      for (int64_t i = 0; i < (rank + 1 + k) * 2; ++i, ++at) {
        ASSERT_LT(at, got.size());
        ASSERT_EQ(got[at], types[k] == T::b8 ? (rank + i) % 2 : rank * 100 + i) << k;
      }
    }
    ASSERT_EQ(at, got.size());
  }
  HVD(hvd_release(h));

  GpuTensor a(T::f32, {2 * N() + 1, 2}), b(T::f64, {N(), 3});
  for (int64_t i = 0; i < a.host().n(); ++i) a.host().Set(i, i + R());
  for (int64_t i = 0; i < b.host().n(); ++i) b.host().Set(i, 2 * i + R());
  a.Upload();
  b.Upload();
  const DLTensor* in[] = {a.dl(), b.dl()};
  HVD(hvd_grouped_reducescatter_async(nullptr, in, 2, HVD_OP_SUM, nullptr, &h));
  HVD(hvd_wait(h, -1));
  const double ranks_sum = N() * (N() - 1) / 2.0;
  DLTensor r{};
  HVD(hvd_result_at(h, 0, &r));
  std::vector<double> got = ReadResult(r, T::f32);
  int64_t first_row = 0;
  for (int k = 0; k < R(); ++k) first_row += 2 + (k < 1 ? 1 : 0);
  ASSERT_EQ(got.size(), static_cast<size_t>((2 + (R() < 1 ? 1 : 0)) * 2));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i],
              N() * static_cast<double>(first_row * 2 + static_cast<int64_t>(i)) + ranks_sum);
  HVD(hvd_result_at(h, 1, &r));
  got = ReadResult(r, T::f64);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    ASSERT_EQ(got[i],
              N() * 2.0 * static_cast<double>(R() * 3 + static_cast<int64_t>(i)) + ranks_sum);
  HVD(hvd_release(h));
}

// int16 reduces when the GPU tensors stage through a CPU backend, or alone
// (a set of one rank runs no backend); NCCL has no int16 type, and says so.
// bool reduces logically either way.
TEST(Gpu, Int16AndBool) {
  const char* ops = std::getenv("HVD_GPU_OPERATIONS");
  const bool staged = ops && (std::string(ops) == "mpi" || std::string(ops) == "gloo");
  GpuTensor x(T::i16, {4});
  for (int64_t i = 0; i < 4; ++i) x.host().Set(i, 1000 * (R() + 1) + i);
  x.Upload();
  hvd_handle h = 0;
  HVD(hvd_allreduce_async("i16.sum", x.dl(), x.dl(), HVD_OP_SUM, nullptr, &h));
  const hvd_status st = hvd_wait(h, -1);
  const std::string err = st == HVD_OK ? "" : hvd_last_error();
  HVD(hvd_release(h));
  if (staged || !hvd_nccl_built() || N() == 1) {
    ASSERT_EQ(st, HVD_OK) << err;
    x.Download();
    for (int64_t i = 0; i < 4; ++i) ASSERT_EQ(x.host().Get(i), 500.0 * N() * (N() + 1) + N() * i);
  } else {
    ASSERT_EQ(st, HVD_ERR_UNSUPPORTED);
    ASSERT_NE(err.find("int16"), std::string::npos) << err;
  }
  GpuTensor f(T::b8, {2});
  f.host().Set(0, 1);
  f.host().Set(1, R() == 0);
  f.Upload();
  HVD(hvd_allreduce_async("b8.and", f.dl(), f.dl(), HVD_OP_MIN, nullptr, &h));
  HVD(hvd_wait(h, -1));
  HVD(hvd_release(h));
  f.Download();
  ASSERT_EQ(f.host().Get(0), 1);
  ASSERT_EQ(f.host().Get(1), N() == 1 ? 1 : 0);
}

TEST(Gpu, Broadcast) {
  GpuTensor x(T::f64, {17});
  for (int64_t i = 0; i < 17; ++i) x.host().Set(i, R() == 0 ? i * 1.5 : -1);
  x.Upload();
  hvd_handle h = 0;
  HVD(hvd_broadcast_async("bc", x.dl(), 0, nullptr, &h));
  HVD(hvd_wait(h, -1));
  HVD(hvd_release(h));
  x.Download();
  for (int64_t i = 0; i < 17; ++i) ASSERT_EQ(x.host().Get(i), i * 1.5);
}

TEST(Gpu, Alltoall) {
  // Rank r sends (d + 1) rows to rank d; each row is r * 100 + d.
  std::vector<int32_t> splits(static_cast<size_t>(N()));
  int64_t rows = 0;
  for (int d = 0; d < N(); ++d) rows += (splits[d] = d + 1);
  GpuTensor x(T::i64, {rows});
  int64_t k = 0;
  for (int d = 0; d < N(); ++d) {
    for (int j = 0; j <= d; ++j) x.host().Set(k++, R() * 100 + d);
  }
  x.Upload();
  hvd_handle h = 0;
  HVD(hvd_alltoall_async("a2a", x.dl(), splits.data(), N(), nullptr, &h));
  HVD(hvd_wait(h, -1));
  DLTensor r{};
  HVD(hvd_result(h, &r));
  std::vector<double> got = ReadResult(r, T::i64);
  ASSERT_EQ(got.size(), static_cast<size_t>(N() * (R() + 1)));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], static_cast<double>(static_cast<int>(i) / (R() + 1) * 100 + R()));
  }
  HVD(hvd_release(h));
}

TEST(Gpu, ReducescatterUneven) {
  const int64_t dim0 = 2 * N() + 1;  // uneven: rank 0 gets one more row
  GpuTensor x(T::f32, {dim0, 3});
  for (int64_t i = 0; i < x.host().n(); ++i) x.host().Set(i, i + R());
  x.Upload();
  hvd_handle h = 0;
  HVD(hvd_reducescatter_async("rs", x.dl(), HVD_OP_SUM, nullptr, &h));
  HVD(hvd_wait(h, -1));
  DLTensor r{};
  HVD(hvd_result(h, &r));
  std::vector<double> got = ReadResult(r, T::f32);
  int64_t first_row = 0;
  for (int k = 0; k < R(); ++k) first_row += dim0 / N() + (k < dim0 % N() ? 1 : 0);
  const int64_t my_rows = dim0 / N() + (R() < dim0 % N() ? 1 : 0);
  ASSERT_EQ(got.size(), static_cast<size_t>(my_rows * 3));
  const double ranks_sum = N() * (N() - 1) / 2.0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i],
              N() * static_cast<double>(first_row * 3 + static_cast<int64_t>(i)) + ranks_sum);
  }
  HVD(hvd_release(h));
}

// The producer of the input is still running when hvd_allreduce_async is
// called: a host function holds the caller's stream for 200 ms, then a copy
// on that stream writes the input. Reading too early would see the stale
// values (-1), so the result is exact only if hvd waits for the stream.
TEST(Gpu, StreamOrderingNeverReadsStaleInput) {
  cudaStream_t s = nullptr;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int64_t n = 1 << 20;
  GpuTensor src(T::f32, {n}), x(T::f32, {n});
  for (int64_t i = 0; i < n; ++i) {
    src.host().Set(i, static_cast<double>(i % 1000));
    x.host().Set(i, -1);
  }
  src.Upload();
  x.Upload();
  CU(cudaLaunchHostFunc(
      s, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr));
  CU(cudaMemcpyAsync(x.dl()->data, src.dl()->data, n * 4, cudaMemcpyDeviceToDevice, s));
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.cuda_stream = s;
  hvd_handle h = 0;
  HVD(hvd_allreduce_async("ar.stale", x.dl(), x.dl(), HVD_OP_SUM, &o, &h));
  HVD(hvd_wait(h, -1));
  HVD(hvd_release(h));
  x.Download();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(x.host().Get(i), static_cast<double>(N() * (i % 1000))) << "[" << i << "]";
  }
  CU(cudaStreamDestroy(s));
}

// The caller's allocator hands out device memory for allgather results.
struct DeviceArena {
  std::vector<void*> blocks;
  int calls = 0;
  ~DeviceArena() {
    for (void* p : blocks) cudaFree(p);
  }
};

void* ArenaAlloc(size_t bytes, const int64_t*, int, DLDataType, DLDevice device, void* user) {
  auto* a = static_cast<DeviceArena*>(user);
  void* p = nullptr;
  if (device.device_type != kDLCUDA || cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
  a->blocks.push_back(p);
  ++a->calls;
  return p;
}

TEST(Gpu, AllocatorCallbackGetsDeviceMemory) {
  DeviceArena arena;
  GpuTensor x(T::f32, {R() + 2, 3});
  for (int64_t i = 0; i < x.host().n(); ++i) x.host().Set(i, R() * 100 + i);
  x.Upload();
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.allocator = ArenaAlloc;
  o.allocator_user_data = &arena;
  hvd_handle h = 0;
  HVD(hvd_allgather_async("ag.alloc", x.dl(), &o, &h));
  HVD(hvd_wait(h, -1));
  DLTensor r{};
  HVD(hvd_result(h, &r));
  ASSERT_EQ(arena.calls, 1);
  ASSERT_EQ(r.data, arena.blocks[0]);
  ASSERT_EQ(r.device.device_type, kDLCUDA);
  std::vector<double> got = ReadResult(r, T::f32);
  size_t k = 0;
  for (int rank = 0; rank < N(); ++rank) {
    for (int64_t i = 0; i < (rank + 2) * 3; ++i) ASSERT_EQ(got[k++], rank * 100 + i);
  }
  ASSERT_EQ(k, got.size());
  HVD(hvd_release(h));
}

// With the GPU nearly full, the allgather result (size x the input) cannot
// be allocated: the operation fails with an error that says so, and the
// next operation works again.
TEST(Gpu, DeviceOutOfMemoryIsAClearError) {
  if (N() != 1) GTEST_SKIP() << "one rank: peers of a failed rank would wait for its data";
  const int64_t n = 64 << 20;  // 256 MiB of float32
  GpuTensor x(T::f32, {n});
  x.Upload();
  std::vector<void*> filler;  // take the device's memory, keeping 128 MiB
  size_t free_b = 0, total_b = 0;
  CU(cudaMemGetInfo(&free_b, &total_b));
  for (size_t chunk = size_t{1} << 30; chunk >= (size_t{8} << 20);) {
    CU(cudaMemGetInfo(&free_b, &total_b));
    void* p = nullptr;
    if (free_b > chunk + (size_t{128} << 20) && cudaMalloc(&p, chunk) == cudaSuccess) {
      filler.push_back(p);
    } else {
      (void)cudaGetLastError();
      chunk /= 2;
    }
  }
  hvd_handle h = 0;
  hvd_status st = hvd_allgather_async("ag.oom", x.dl(), nullptr, &h);
  if (st == HVD_OK) st = hvd_wait(h, -1);
  const std::string err = hvd_last_error();
  if (h) hvd_release(h);
  for (void* p : filler) cudaFree(p);
  ASSERT_NE(st, HVD_OK);
  EXPECT_NE(err.find("device memory"), std::string::npos) << err;
  EXPECT_NE(err.find("ag.oom"), std::string::npos) << err;
  // hvd is still usable.
  GpuTensor y(T::f32, {4});
  for (int64_t i = 0; i < 4; ++i) y.host().Set(i, i);
  y.Upload();
  HVD(hvd_allreduce_async("ar.after_oom", y.dl(), y.dl(), HVD_OP_SUM, nullptr, &h));
  HVD(hvd_wait(h, -1));
  HVD(hvd_release(h));
  y.Download();
  for (int64_t i = 0; i < 4; ++i) ASSERT_EQ(y.host().Get(i), static_cast<double>(i));
}

// 10,000 operations (allreduce, fused pairs and allgather with hvd-owned
// results) leave device memory where it was after the first round.
TEST(Gpu, NoDeviceMemoryLeakOver10000Operations) {
  GpuTensor a(T::f32, {1024}), b(T::f16, {333});
  a.Upload();
  b.Upload();
  auto round = [&](int i) {
    hvd_handle h[3] = {0, 0, 0};
    const std::string s = std::to_string(i % 7);
    ASSERT_EQ(
        hvd_allreduce_async(("leak.a" + s).c_str(), a.dl(), a.dl(), HVD_OP_AVERAGE, nullptr, &h[0]),
        HVD_OK);
    ASSERT_EQ(
        hvd_allreduce_async(("leak.b" + s).c_str(), b.dl(), b.dl(), HVD_OP_SUM, nullptr, &h[1]),
        HVD_OK);
    ASSERT_EQ(hvd_allgather_async(("leak.g" + s).c_str(), b.dl(), nullptr, &h[2]), HVD_OK);
    for (hvd_handle x : h) {
      ASSERT_EQ(hvd_wait(x, -1), HVD_OK) << hvd_last_error();
      ASSERT_EQ(hvd_release(x), HVD_OK);
    }
  };
  for (int i = 0; i < 30; ++i) round(i);  // buffers and communicators exist now
  CU(cudaDeviceSynchronize());
  size_t free_before = 0, free_after = 0, total = 0;
  CU(cudaMemGetInfo(&free_before, &total));
  for (int i = 0; i < 10000 / 3; ++i) {
    round(i);
    if (HasFatalFailure()) return;
  }
  CU(cudaDeviceSynchronize());
  CU(cudaMemGetInfo(&free_after, &total));
  EXPECT_LE(free_before - std::min(free_before, free_after), size_t{2} << 20)
      << "free device memory went from " << free_before << " to " << free_after;
}

// NCCL cannot put two ranks of one communicator on the same GPU. With
// HVD_GPU_OPERATIONS=nccl (no staging fallback asked for) the first GPU
// collective must fail with an error that says so, on every rank.
TEST(GpuNccl, TwoRanksOnOneGpuIsAClearError) {
  const char* ops = std::getenv("HVD_GPU_OPERATIONS");
  if (N() < 2 || !ops || std::string(ops) != "nccl") {
    GTEST_SKIP() << "needs two ranks on one GPU and HVD_GPU_OPERATIONS=nccl";
  }
  GpuTensor x(T::f32, {8});
  x.Upload();
  hvd_handle h = 0;
  hvd_status st = hvd_allreduce_async("ar.dup", x.dl(), x.dl(), HVD_OP_SUM, nullptr, &h);
  if (st == HVD_OK) st = hvd_wait(h, 60000);
  const std::string err = hvd_last_error();
  if (h) hvd_release(h);
  ASSERT_NE(st, HVD_OK);
  EXPECT_NE(err.find("same GPU"), std::string::npos) << err;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  if (!hvd_cuda_built()) {
    std::printf("SKIP: libhvd was built without CUDA\n");
    return 77;
  }
  cudaSetDevice(0);  // every rank shares GPU 0 in the staging tests
  return hvdtest::RunTestsWithHvd(argc, argv);
}
