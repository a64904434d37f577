// Device kernels behind cuda_kernels.h. Kept in one small file: nvcc is slow.
#include <algorithm>
#include <string>

#include "core/common/reduce.h"
#include "core/cuda/cuda_kernels.h"
#include "core/cuda/device_element.h"

namespace hvd {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kLargeCopyBytes = 1 << 20;

int BlocksFor(int64_t n) {
  // Grid-stride loops: a bounded grid covers any size.
  return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 4096));
}

template <typename T>
struct ScaleOp {  // integers: computed in double, truncated toward zero (as Horovod, and the host)
  __device__ static T Apply(T v, double f) {
    return static_cast<T>(static_cast<double>(v) * f);
  }
};
template <>
struct ScaleOp<float> {
  __device__ static float Apply(float v, double f) { return v * static_cast<float>(f); }
};
template <>
struct ScaleOp<double> {
  __device__ static double Apply(double v, double f) { return v * f; }
};
template <>
struct ScaleOp<__half> {
  __device__ static __half Apply(__half v, double f) {
    return __float2half_rn(__half2float(v) * static_cast<float>(f));
  }
};
template <>
struct ScaleOp<__nv_bfloat16> {
  __device__ static __nv_bfloat16 Apply(__nv_bfloat16 v, double f) {
    return __float2bfloat16_rn(__bfloat162float(v) * static_cast<float>(f));
  }
};

// Floats divided by d (ScaleIsDivision: an average over a number of ranks
// that is not a power of two), as on the host.
template <typename T>
struct DivideOp {
  __device__ static T Apply(T v, double d) { return ScaleOp<T>::Apply(v, 1.0 / d); }
};
template <>
struct DivideOp<float> {
  __device__ static float Apply(float v, double d) { return v / static_cast<float>(d); }
};
template <>
struct DivideOp<double> {
  __device__ static double Apply(double v, double d) { return v / d; }
};
template <>
struct DivideOp<__half> {
  __device__ static __half Apply(__half v, double d) {
    return __float2half_rn(__half2float(v) / static_cast<float>(d));
  }
};
template <>
struct DivideOp<__nv_bfloat16> {
  __device__ static __nv_bfloat16 Apply(__nv_bfloat16 v, double d) {
    return __float2bfloat16_rn(__bfloat162float(v) / static_cast<float>(d));
  }
};

template <typename T, typename Op>
__global__ void ScaleKernel(T* dst, const T* src, int64_t n, double f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    dst[i] = Op::Apply(src[i], f);
  }
}

template <typename T>
Status Launch(void* dst, const void* src, int64_t n, double f, cudaStream_t s) {
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(src);
  if (double div; ScaleIsDivision(f, &div)) {
    ScaleKernel<T, DivideOp<T>><<<BlocksFor(n), kThreads, 0, s>>>(d, x, n, div);
  } else {
    ScaleKernel<T, ScaleOp<T>><<<BlocksFor(n), kThreads, 0, s>>>(d, x, n, f);
  }
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::OK();
  return Status::Backend(std::string("CUDA: scale kernel launch: ") + cudaGetErrorString(e));
}

// Passed by value as a kernel parameter: no device-side descriptor array to
// allocate or copy (64 * 24 bytes is well inside the parameter limit).
struct RegionBatch {
  CopyRegion r[kMaxRegionsPerLaunch];
  int n;
};

// One block per region, 16-byte moves where both pointers and the size
// allow it (the fusion buffer and framework allocations usually do).
__global__ void BatchedCopyKernel(RegionBatch batch) {
  const CopyRegion& reg = batch.r[blockIdx.x];
  const auto* s = static_cast<const unsigned char*>(reg.src);
  auto* d = static_cast<unsigned char*>(reg.dst);
  const bool vec = ((reinterpret_cast<uintptr_t>(s) | reinterpret_cast<uintptr_t>(d)) & 15) == 0;
  int64_t done = 0;
  if (vec) {
    const int64_t n16 = reg.bytes / 16;
    for (int64_t i = threadIdx.x; i < n16; i += blockDim.x) {
      reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
    }
    done = n16 * 16;
  }
  for (int64_t i = done + threadIdx.x; i < reg.bytes; i += blockDim.x) d[i] = s[i];
}

}  // namespace

Status ScaleCopyAsync(void* dst, const void* src, int64_t n, DataType dt, double f,
                      cudaStream_t s) {
  if (n <= 0) return Status::OK();
  if (f == 1.0) {
    if (dst == src) return Status::OK();
    cudaError_t e = cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * DataTypeSize(dt),
                                    cudaMemcpyDeviceToDevice, s);
    if (e == cudaSuccess) return Status::OK();
    return Status::Backend(std::string("CUDA: cudaMemcpyAsync: ") + cudaGetErrorString(e));
  }
  return VisitDataType(
      dt, [&](auto tag) { return Launch<DeviceElementT<decltype(tag)::value>>(dst, src, n, f, s); },
      [] { return Status::Internal("scale: unknown dtype"); });
}

Status BatchedCopyAsync(const CopyRegion* regions, size_t n, cudaStream_t s) {
  RegionBatch batch;
  size_t i = 0;
  while (i < n) {
    batch.n = 0;
    int64_t largest = 0;
    for (; i < n && batch.n < static_cast<int>(kMaxRegionsPerLaunch); ++i) {
      if (regions[i].bytes <= 0) continue;
      if (regions[i].bytes >= kLargeCopyBytes) {
        // One block would crawl through it; the copy engine runs at full speed.
        cudaError_t e =
            cudaMemcpyAsync(regions[i].dst, regions[i].src, static_cast<size_t>(regions[i].bytes),
                            cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) {
          return Status::Backend(std::string("CUDA: cudaMemcpyAsync: ") + cudaGetErrorString(e));
        }
        continue;
      }
      batch.r[batch.n++] = regions[i];
      largest = std::max(largest, regions[i].bytes);
    }
    if (batch.n == 0) break;
    // Small copies need few threads; large ones get a full block each.
    const int threads = largest >= 16 * 1024 ? 1024 : 256;
    BatchedCopyKernel<<<batch.n, threads, 0, s>>>(batch);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      return Status::Backend(std::string("CUDA: batched copy launch: ") + cudaGetErrorString(e));
    }
  }
  return Status::OK();
}

}  // namespace hvd
