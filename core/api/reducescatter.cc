// Reducescatter, alone and grouped (each item a result of its own). Blocks
// of dimension 0 are scattered, so a scalar has none (Horovod raises too).
#include <string>
#include <vector>

#include "core/api/checks.h"
#include "core/api/submit.h"

namespace hvd {
namespace api {

Status Reducescatter(std::string_view name, const Tensor& input, ReduceOp op, const OpOptions& o,
                     int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  HVD_RETURN_IF_ERROR(CheckScatterOp(op));
  if (input.ndim == 0) return Status::Invalid("input must have at least one dimension");
  ScratchEntry e;
  FillInput(input, &*e);
  HVD_RETURN_IF_ERROR(SetReduceOp("input", op, o, &*e));
  return e.Submit(OpType::kReducescatter, name, o, handle);
}

Status GroupedReducescatter(Span<GroupItem> items, ReduceOp op, const OpOptions& o,
                            int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  HVD_RETURN_IF_ERROR(CheckScatterOp(op));
  if (items.size == 0) return Status::Invalid("needs at least one tensor");
  std::vector<std::unique_ptr<TensorEntry>> v(items.size);
  for (size_t i = 0; i < items.size; ++i) {
    const std::string what = ItemName("inputs", i);
    if (items[i].input.ndim == 0) {
      return Status::Invalid(what + " is a scalar; reducescatter needs at least one dimension");
    }
    v[i] = std::make_unique<TensorEntry>();
    FillInput(items[i].input, v[i].get());
    HVD_RETURN_IF_ERROR(SetReduceOp(what.c_str(), op, o, v[i].get()));
  }
  return SubmitGroup(OpType::kReducescatter, items, &v, o, handle, true);
}

}  // namespace api
}  // namespace hvd
