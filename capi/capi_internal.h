// What the C layer's files share: status reporting (hvd_last_error), the
// exception guard every extern "C" function ends in, option and handle
// lookups, and submission. Nothing here is exported.
#pragma once

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "core/common/status.h"
#include "core/runtime/handle_table.h"
#include "core/runtime/runtime.h"
#include "core/tensor/tensor_entry.h"
#include "hvd/hvd.h"

namespace hvd {
namespace capi {

// Sets the calling thread's last error when `s` is an error (successful
// calls leave it alone, like errno) and returns its code.
hvd_status Report(const Status& s);
hvd_status Fail(Code code, const std::string& message);
// "fn: message", same code.
Status Prefixed(const char* fn, const Status& s);
// Report(s), naming `fn` in the message of an error.
hvd_status ReportFrom(const char* fn, const Status& s);

inline Runtime& RT() {
  return Runtime::Get();
}

// A C enum argument as the int the caller passed: a caller may pass any
// value, and reading one outside the enum through the enum type from memory
// (a lambda's reference capture) is undefined behaviour. Taken as an int at
// the boundary, it is checked before it becomes an enum.
template <typename E>
int EnumValue(E e) {
  return static_cast<int>(e);
}

// kNotInitialized naming `fn` unless hvd_init has succeeded.
Status CheckInit(const char* fn);

// Sets the last error to "fn: what" without throwing (under memory
// pressure the message may be shortened or empty).
void ReportException(const char* fn, const char* what) noexcept;

// Runs `body`, the whole of one extern "C" function. No exception crosses
// the C ABI (nor JNI, nor a ctypes callback): any that escapes `body`
// becomes the last error "fn: <what>" and `on_error` is returned.
template <typename F, typename R = std::invoke_result_t<F>>
R Guarded(const char* fn, R on_error, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    ReportException(fn, "out of memory");
  } catch (const std::exception& e) {
    ReportException(fn, e.what());
  } catch (...) {
    ReportException(fn, "unknown exception");
  }
  return on_error;
}

// For functions that return hvd_status: an exception is HVD_ERR_INTERNAL.
template <typename F>
hvd_status Guard(const char* fn, F&& body) noexcept {
  return Guarded(fn, HVD_ERR_INTERNAL, std::forward<F>(body));
}

// Copies the caller's options over the defaults, honouring struct_size so
// binaries built against an older (shorter) struct keep working.
template <typename T>
Status ReadOptions(const T* in, T* out, const char* fn) {
  if (!in) return Status::OK();
  if (in->struct_size < sizeof(size_t) || in->struct_size > sizeof(T)) {
    return Status::Invalid(std::string(fn) + ": options.struct_size is " +
                           std::to_string(in->struct_size) +
                           "; initialise the struct with its *_INIT macro");
  }
  std::memcpy(static_cast<void*>(out), in, in->struct_size);
  out->struct_size = sizeof(T);
  return Status::OK();
}

// The state behind `handle`; null with *error = "fn: unknown handle ...".
// Inline: it runs in every hvd_poll/hvd_wait.
inline std::shared_ptr<HandleState> FindHandle(const char* fn, hvd_handle handle, Status* error) {
  auto state = HandleTable::Global().Find(handle, error);
  if (!state) *error = Prefixed(fn, *error);
  return state;
}

// What hvd needs of a validated DLTensor, without copying its shape.
struct TensorView {
  DataType dtype = DataType::kFloat32;
  Device device;
  int64_t num_elements = 0;
  void* data = nullptr;
};

// Validates a DLTensor (dtype, device, shape, contiguity) into *v; errors
// read "fn: what ..." (capi_ops.cc).
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, TensorView* v);

// Registers a handle covering `count` entries, fills the common request
// fields from the options and submits (capi_ops.cc). With per_tensor_results
// entry i writes the handle's result i (grouped allgather/reducescatter).
// On failure nothing stays behind.
hvd_status Submit(const char* fn, std::unique_ptr<TensorEntry>* entries, size_t count,
                  const hvd_op_options& o, hvd_handle* handle, bool per_tensor_results = false);

// Runs a control operation (barrier, join, process sets) to completion;
// *value (may be null) receives the result's value.
hvd_status RunBlocking(const char* fn, TensorEntry entry, int32_t set, int64_t* value);

}  // namespace capi
}  // namespace hvd
