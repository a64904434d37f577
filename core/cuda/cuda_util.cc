#include "core/cuda/cuda_util.h"

#include <chrono>
#include <thread>

namespace hvd {

Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::OK();
  return Status::Backend(std::string("CUDA: ") + what + ": " + cudaGetErrorName(err) + " (" +
                         cudaGetErrorString(err) + ")");
}

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

CudaDeviceGuard::CudaDeviceGuard(int device) {
  status_ = CudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
  if (status_.ok() && previous_ != device)
    status_ = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

CudaStream::~CudaStream() {
  if (stream_) (void)cudaStreamDestroy(stream_);
}

Status CudaStream::Create() {
  if (stream_) return Status::OK();
  return CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags");
}

Status CudaStream::Wait(double timeout_s, AbortCheck abort_check, void* user) const {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto pause = std::chrono::microseconds(1);
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return Status::OK();
    if (e != cudaErrorNotReady) return CudaStatus(e, "cudaStreamQuery");
    if (abort_check) HVD_RETURN_IF_ERROR(abort_check(user));
    if (timeout_s > 0 && std::chrono::duration<double>(Clock::now() - start).count() > timeout_s) {
      return Status::Timeout("GPU work did not finish within " + std::to_string(timeout_s) +
                             " s (a peer may be stuck or gone)");
    }
    // Spin briefly for short collectives, then back off to spare the core.
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::microseconds(200)) pause *= 2;
  }
}

CudaEvent::~CudaEvent() {
  if (event_) (void)cudaEventDestroy(event_);
}

Status CudaEvent::Create() {
  if (event_) return Status::OK();
  return CudaStatus(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming),
                    "cudaEventCreateWithFlags");
}

namespace {

// How each kind of CudaBuffer allocates and frees.
cudaError_t Allocate(CudaMemory kind, void** p, size_t bytes) {
  return kind == CudaMemory::kDevice ? cudaMalloc(p, bytes) : cudaMallocHost(p, bytes);
}

void Release(CudaMemory kind, void* p) {
  (void)(kind == CudaMemory::kDevice ? cudaFree(p) : cudaFreeHost(p));
}

}  // namespace

template <CudaMemory K>
void CudaBuffer<K>::Free() {
  if (ptr_) Release(K, ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

template <CudaMemory K>
Status CudaBuffer<K>::Reserve(int64_t bytes) {
  if (bytes <= bytes_) return Status::OK();
  Free();
  const cudaError_t e = Allocate(K, &ptr_, static_cast<size_t>(bytes));
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    (void)cudaGetLastError();  // out-of-memory is not sticky; clear it
    const char* what = K == CudaMemory::kDevice ? "cudaMalloc of " : "cudaMallocHost of ";
    return CudaStatus(e, (what + std::to_string(bytes) + " bytes").c_str());
  }
  bytes_ = bytes;
  return Status::OK();
}

template class CudaBuffer<CudaMemory::kDevice>;
template class CudaBuffer<CudaMemory::kPinnedHost>;

}  // namespace hvd
