// Broadcast: the root's tensor into every member's, in place.
#include <string>

#include "core/api/checks.h"
#include "core/api/submit.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {

Status Broadcast(std::string_view name, const Tensor& tensor, int root_rank, const OpOptions& o,
                 int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  int set_rank = 0, set_size = 0;
  HVD_RETURN_IF_ERROR(Runtime::Get().SetInfo(o.process_set, &set_rank, &set_size));
  if (root_rank < 0 || root_rank >= set_size) {
    return Status::Invalid("root rank " + std::to_string(root_rank) + " is outside process set " +
                           std::to_string(o.process_set) + " (size " + std::to_string(set_size) +
                           ")");
  }
  ScratchEntry e;
  FillInput(tensor, &*e);
  e->output = tensor.data;
  e->request.root = root_rank;
  return e.Submit(OpType::kBroadcast, name, o, handle);
}

}  // namespace api
}  // namespace hvd
