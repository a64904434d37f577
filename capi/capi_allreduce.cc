// hvd_allreduce_async and hvd_grouped_allreduce_async.
#include <string>
#include <vector>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

// The call at the start of every tensor of every training step: nothing
// here allocates (api::Allreduce reuses the thread's pooled entry).
hvd_status Allreduce(const char* name, const DLTensor* input, DLTensor* output, int op,
                     const hvd_op_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_allreduce_async";
  api::OpOptions o;
  api::AllreduceArgs a;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, fn, &o);
  if (s.ok()) s = ReadReduceOp(fn, op, &a.op);
  if (s.ok()) s = ReadTensor(fn, "input", input, &a.input);
  if (s.ok()) s = ReadOutput(fn, "output", input, a.input, output, &a.output);
  if (s.ok() && !handle) s = Status::Invalid(std::string(fn) + ": handle is NULL");
  if (!s.ok()) return Report(s);
  if (name) a.name = name;
  return Submitted(fn, api::Allreduce(a, o, handle));
}

hvd_status GroupedAllreduce(const char* const* names, const DLTensor* const* inputs,
                            DLTensor* const* outputs, int count, int op, const hvd_op_options* opts,
                            hvd_handle* handle) {
  const char* fn = "hvd_grouped_allreduce_async";
  api::OpOptions o;
  ReduceOp rop = ReduceOp::kSum;
  std::vector<api::GroupItem> items;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadOpOptions(opts, fn, &o);
  if (s.ok()) s = ReadReduceOp(fn, op, &rop);
  if (s.ok()) s = ReadGroup(fn, names, inputs, outputs, true, count, &items);
  if (s.ok() && !handle) s = Status::Invalid(std::string(fn) + ": handle is NULL");
  if (!s.ok()) return Report(s);
  return Submitted(fn, api::GroupedAllreduce({items.data(), items.size()}, rop, o, handle));
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_allreduce_async(const char* name, const DLTensor* input, DLTensor* output,
                               hvd_reduce_op op, const hvd_op_options* opts, hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_allreduce_async", [&] {
    return hvd::capi::Allreduce(name, input, output, op_value, opts, handle);
  });
}

hvd_status hvd_grouped_allreduce_async(const char* const* names, const DLTensor* const* inputs,
                                       DLTensor* const* outputs, int count, hvd_reduce_op op,
                                       const hvd_op_options* opts, hvd_handle* handle) {
  const int op_value = hvd::capi::EnumValue(op);
  return hvd::capi::Guard("hvd_grouped_allreduce_async", [&] {
    return hvd::capi::GroupedAllreduce(names, inputs, outputs, count, op_value, opts, handle);
  });
}

}  // extern "C"
