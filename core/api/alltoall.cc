// Alltoall: rows of dimension 0 to each member, evenly or by splits.
#include <string>

#include "core/api/checks.h"
#include "core/api/submit.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {
namespace {

// The splits against the input's first dimension and the set size.
Status CheckSplits(Span<int32_t> splits, int set_size, int64_t dim0) {
  if (!splits.data) {
    if (dim0 % set_size == 0) return Status::OK();
    return Status::Invalid("without splits, dimension 0 (" + std::to_string(dim0) +
                           ") must be divisible by the set size (" + std::to_string(set_size) +
                           ")");
  }
  int64_t sum = 0;
  bool negative = false;
  for (int32_t n : splits) {
    sum += n;
    negative |= n < 0;
  }
  if (splits.size != static_cast<size_t>(set_size) || negative || sum != dim0) {
    return Status::Invalid("splits must have one non-negative entry per rank of the set (" +
                           std::to_string(set_size) + ") summing to dimension 0 (" +
                           std::to_string(dim0) + "); got " + std::to_string(splits.size) +
                           " entries summing to " + std::to_string(sum));
  }
  return Status::OK();
}

}  // namespace

Status Alltoall(std::string_view name, const Tensor& input, Span<int32_t> splits,
                const OpOptions& o, int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  int set_rank = 0, set_size = 0;
  HVD_RETURN_IF_ERROR(Runtime::Get().SetInfo(o.process_set, &set_rank, &set_size));
  if (input.ndim == 0) return Status::Invalid("input must have at least one dimension");
  HVD_RETURN_IF_ERROR(CheckSplits(splits, set_size, input.shape[0]));
  ScratchEntry e;
  FillInput(input, &*e);
  if (splits.data) e->request.splits.assign(splits.begin(), splits.end());
  return e.Submit(OpType::kAlltoall, name, o, handle);
}

}  // namespace api
}  // namespace hvd
