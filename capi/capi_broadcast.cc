// hvd_broadcast_async and hvd_alltoall_async: each rank's rows to others.
#include <algorithm>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

hvd_status Broadcast(const char* name, DLTensor* tensor, int root_rank, const hvd_op_options* opts,
                     hvd_handle* handle) {
  const char* fn = "hvd_broadcast_async";
  api::OpOptions o;
  api::Tensor t;
  Status s = ReadSingle(fn, opts, "tensor", tensor, handle, &o, &t);
  if (!s.ok()) return Report(s);
  return Submitted(fn, api::Broadcast(name ? name : "", t, root_rank, o, handle));
}

hvd_status Alltoall(const char* name, const DLTensor* input, const int32_t* splits, int nsplits,
                    const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_alltoall_async";
  api::OpOptions o;
  api::Tensor t;
  Status s = ReadSingle(fn, opts, "input", input, handle, &o, &t);
  if (!s.ok()) return Report(s);
  // A negative count is as wrong as any other that is not the set's size.
  const api::Span<int32_t> span{splits, splits ? static_cast<size_t>(std::max(nsplits, 0)) : 0};
  return Submitted(fn, api::Alltoall(name ? name : "", t, span, o, handle));
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_broadcast_async(const char* name, DLTensor* tensor, int root_rank,
                               const hvd_op_options* opts, hvd_handle* handle) {
  return hvd::capi::Guard("hvd_broadcast_async", [&] {
    return hvd::capi::Broadcast(name, tensor, root_rank, opts, handle);
  });
}

hvd_status hvd_alltoall_async(const char* name, const DLTensor* input, const int32_t* splits,
                              int nsplits, const hvd_op_options* opts, hvd_handle* handle) {
  return hvd::capi::Guard("hvd_alltoall_async", [&] {
    return hvd::capi::Alltoall(name, input, splits, nsplits, opts, handle);
  });
}

}  // extern "C"
