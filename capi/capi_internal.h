// What the C layer's files share: status reporting (hvd_last_error), the
// exception guard every extern "C" function ends in, and the conversion of
// C arguments (options, DLTensors, enums) into core/api/api.h's types.
// Nothing here is exported; nothing here knows the core's internals.
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/api/api.h"
#include "core/common/status.h"
#include "core/common/types.h"
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

// The argument conversions below (capi_convert.cc) name what is wrong as
// "fn: what ...".

// hvd_op_options as api::OpOptions; NULL leaves *out as it is (callers pass
// a default-constructed one: the same defaults as HVD_OP_OPTIONS_INIT).
Status ReadOpOptions(const hvd_op_options* in, const char* fn, api::OpOptions* out);
// The C callback as an api::Callback (empty when `fn` is NULL).
api::Callback ToCallback(hvd_callback fn, void* user);
// HVD_OP_* as a ReduceOp; unknown values are an error.
Status ReadReduceOp(const char* fn, int op, ReduceOp* out);
// A DLTensor (dtype, device, shape, contiguity) as an api::Tensor, which
// keeps pointing at t's shape.
Status ReadTensor(const char* fn, const char* what, const DLTensor* t, api::Tensor* out);
// An allreduce output; laid out as the input (the usual case) it needs no
// checks beyond its data pointer. The API compares it with the input.
Status ReadOutput(const char* fn, const char* what, const DLTensor* input, const api::Tensor& in,
                  const DLTensor* t, api::Tensor* out);
// The arguments of a single-tensor operation, in this order: initialised,
// valid options, a valid input tensor (`what`), a handle to fill.
Status ReadSingle(const char* fn, const hvd_op_options* opts, const char* what,
                  const DLTensor* input, const hvd_handle* handle, api::OpOptions* o,
                  api::Tensor* t);
// A grouped operation's arrays as items (outputs: allreduce's only).
Status ReadGroup(const char* fn, const char* const* names, const DLTensor* const* inputs,
                 DLTensor* const* outputs, bool with_outputs, int count,
                 std::vector<api::GroupItem>* items);

// What an API call that submits returns to C: HVD_OK, or its error as
// "fn: message".
inline hvd_status Submitted(const char* fn, const Status& s) {
  return s.ok() ? HVD_OK : Report(Prefixed(fn, s));
}

}  // namespace capi
}  // namespace hvd
