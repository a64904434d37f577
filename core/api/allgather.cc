// Allgather, alone and grouped (each item a result of its own).
#include <vector>

#include "core/api/checks.h"
#include "core/api/submit.h"

namespace hvd {
namespace api {

Status Allgather(std::string_view name, const Tensor& input, const OpOptions& o, int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  ScratchEntry e;
  FillInput(input, &*e);
  return e.Submit(OpType::kAllgather, name, o, handle);
}

Status GroupedAllgather(Span<GroupItem> items, const OpOptions& o, int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  if (items.size == 0) return Status::Invalid("needs at least one tensor");
  std::vector<std::unique_ptr<TensorEntry>> v(items.size);
  for (size_t i = 0; i < items.size; ++i) {
    v[i] = std::make_unique<TensorEntry>();
    FillInput(items[i].input, v[i].get());
  }
  return SubmitGroup(OpType::kAllgather, items, &v, o, handle, true);
}

}  // namespace api
}  // namespace hvd
