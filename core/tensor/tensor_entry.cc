#include "core/tensor/tensor_entry.h"

#include <utility>

namespace hvd {

void* TensorEntry::AllocateResult(size_t nbytes, const std::vector<int64_t>& shape, Status* error) {
  OpResult& r = handle->result(result_index);
  r.shape = shape;
  r.dtype = request.dtype;
  r.device = request.device;
  if (allocator) {
    r.data = allocator(nbytes, shape, request.dtype, request.device);
    if (r.data || nbytes == 0) return r.data;
    if (request.device.kind == DeviceKind::kCUDA) {
      // No host fallback: device collectives cannot write host memory.
      // The executor returns this before its collective.
      *error = Status::Invalid(
          "could not allocate " + std::to_string(nbytes) + " bytes of device memory on " +
          DeviceName(request.device) + " for the result of tensor '" + request.name + "' (" +
          (r.alloc_failure.empty() ? std::string("the allocator returned NULL") : r.alloc_failure) +
          ")");
      return nullptr;
    }
    *error = Status::Invalid("the allocator returned NULL for " + std::to_string(nbytes) +
                             " bytes of tensor '" + request.name + "'");
  }
  // Also when the caller's allocator failed: this rank must still take part
  // in the collective (the others are already in it), so it receives into
  // memory of its own and reports the error afterwards.
  r.owned = HostBuffer(nbytes);
  r.data = r.owned.data();
  return r.data;
}

void TensorEntry::Clear() {
  request.Reset();
  input = nullptr;
  output = nullptr;
  num_elements = 0;
  bytes = 0;
  handle.reset();
  result_index = 0;
  allocator = nullptr;
  cuda_stream = nullptr;
  enqueued = {};
  flight_token = 0;
}

void TensorEntry::Swap(TensorEntry& o) noexcept {
  using std::swap;
  request.Swap(o.request);
  swap(input, o.input);
  swap(output, o.output);
  swap(num_elements, o.num_elements);
  swap(bytes, o.bytes);
  handle.swap(o.handle);
  swap(result_index, o.result_index);
  allocator.swap(o.allocator);
  swap(cuda_stream, o.cuda_stream);
  swap(enqueued, o.enqueued);
  swap(flight_token, o.flight_token);
}

}  // namespace hvd
