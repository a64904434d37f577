// CUDA runtime errors as hvd::Status, and RAII owners for every CUDA
// resource hvd creates (streams, events, device and pinned host memory), so
// an error on any path frees what was made before it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/common/status.h"

namespace hvd {

// Code::kBackend with "<what>: <cudaGetErrorString>" unless err is cudaSuccess.
Status CudaStatus(cudaError_t err, const char* what);

#define HVD_CUDA_CHECK(expr) HVD_RETURN_IF_ERROR(::hvd::CudaStatus((expr), #expr))

// Number of visible devices; 0 (not an error) when the driver or a device is
// missing, which is what tests and the runtime use to decide to skip.
int CudaDeviceCount();

// Makes `device` current for the scope and restores the previous one: the
// caller's thread may use another device and hvd must not change it.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

// A non-blocking stream (never implicitly ordered with the legacy default
// stream, so hvd does not serialise with unrelated framework work).
class CudaStream {
 public:
  CudaStream() = default;
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  Status Create();
  cudaStream_t get() const { return stream_; }
  // Polls until the work queued so far is done; `abort_check` (may be null)
  // is asked between polls so a lost NCCL peer ends the wait with its error,
  // and timeout_s (<= 0: none) bounds the wait with Code::kTimeout.
  using AbortCheck = Status (*)(void* user);
  Status Wait(double timeout_s, AbortCheck abort_check = nullptr, void* user = nullptr) const;

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  CudaEvent() = default;
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  Status Create();  // timing disabled: cheapest kind, only for ordering
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Growable CUDA memory: device memory on the current device (kDevice) or
// page-locked host memory (kPinnedHost: copies from/to it run
// asynchronously and at full PCIe/NVLink speed, which pageable memory does
// not). Grows by reallocating (the old contents are dropped): it backs
// fusion, staging and scratch buffers only.
enum class CudaMemory { kDevice, kPinnedHost };

template <CudaMemory K>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  ~CudaBuffer() { Free(); }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  Status Reserve(int64_t bytes);
  void* data() const { return ptr_; }
  int64_t capacity() const { return bytes_; }

 private:
  void Free();
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

using DeviceBuffer = CudaBuffer<CudaMemory::kDevice>;
using PinnedBuffer = CudaBuffer<CudaMemory::kPinnedHost>;
extern template class CudaBuffer<CudaMemory::kDevice>;
extern template class CudaBuffer<CudaMemory::kPinnedHost>;

}  // namespace hvd
