// The operations whose results hvd allocates by gathering or scattering
// rows: allgather and reducescatter, alone and grouped.
#include <string>
#include <vector>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

// Reducescatter's ops: sum and average only (no other value converts).
Status ReadScatterOp(const char* fn, int op, ReduceOp* out) {
  if (op != HVD_OP_SUM && op != HVD_OP_AVERAGE) {
    return Status::Invalid(std::string(fn) + ": only HVD_OP_SUM and HVD_OP_AVERAGE are supported");
  }
  *out = static_cast<ReduceOp>(op);
  return Status::OK();
}

hvd_status Allgather(const char* name, const DLTensor* input, const hvd_op_options* opts,
                     hvd_handle* handle) {
  const char* fn = "hvd_allgather_async";
  api::OpOptions o;
  api::Tensor t;
  Status s = ReadSingle(fn, opts, "input", input, handle, &o, &t);
  if (!s.ok()) return Report(s);
  return Submitted(fn, api::Allgather(name ? name : "", t, o, handle));
}

hvd_status Reducescatter(const char* name, const DLTensor* input, int op,
                         const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_reducescatter_async";
  api::OpOptions o;
  api::Tensor t;
  ReduceOp rop = ReduceOp::kSum;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, fn, &o);
  if (s.ok()) s = ReadScatterOp(fn, op, &rop);
  if (s.ok()) s = ReadTensor(fn, "input", input, &t);
  if (s.ok() && !handle) s = Status::Invalid(std::string(fn) + ": handle is NULL");
  if (!s.ok()) return Report(s);
  return Submitted(fn, api::Reducescatter(name ? name : "", t, rop, o, handle));
}

// Grouped: one handle, each input a result of its own (hvd_result_at).
hvd_status Grouped(const char* fn, bool scatter, const char* const* names,
                   const DLTensor* const* inputs, int count, int op, const hvd_op_options* opts,
                   hvd_handle* handle) {
  api::OpOptions o;
  ReduceOp rop = ReduceOp::kSum;
  std::vector<api::GroupItem> items;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, fn, &o);
  if (s.ok() && scatter) s = ReadScatterOp(fn, op, &rop);
  if (s.ok()) s = ReadGroup(fn, names, inputs, nullptr, false, count, &items);
  if (s.ok() && !handle) s = Status::Invalid(std::string(fn) + ": handle is NULL");
  if (!s.ok()) return Report(s);
  const api::Span<api::GroupItem> span{items.data(), items.size()};
  return Submitted(fn, scatter ? api::GroupedReducescatter(span, rop, o, handle)
                               : api::GroupedAllgather(span, o, handle));
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_allgather_async(const char* name, const DLTensor* input, const hvd_op_options* opts,
                               hvd_handle* handle) {
  return hvd::capi::Guard("hvd_allgather_async",
                          [&] { return hvd::capi::Allgather(name, input, opts, handle); });
}

hvd_status hvd_reducescatter_async(const char* name, const DLTensor* input, hvd_reduce_op op,
                                   const hvd_op_options* opts, hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_reducescatter_async", [&] {
    return hvd::capi::Reducescatter(name, input, op_value, opts, handle);
  });
}

hvd_status hvd_grouped_allgather_async(const char* const* names, const DLTensor* const* inputs,
                                       int count, const hvd_op_options* opts, hvd_handle* handle) {
  return hvd::capi::Guard("hvd_grouped_allgather_async", [&] {
    return hvd::capi::Grouped("hvd_grouped_allgather_async", false, names, inputs, count,
                              HVD_OP_SUM, opts, handle);
  });
}

hvd_status hvd_grouped_reducescatter_async(const char* const* names, const DLTensor* const* inputs,
                                           int count, hvd_reduce_op op, const hvd_op_options* opts,
                                           hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_grouped_reducescatter_async", [&] {
    return hvd::capi::Grouped("hvd_grouped_reducescatter_async", true, names, inputs, count,
                              op_value, opts, handle);
  });
}

}  // extern "C"
