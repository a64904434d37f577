// The blocking control operations: barrier, join, and adding and removing
// process sets (each negotiated like a collective, then waited for).
#include <set>
#include <string>

#include "core/api/submit.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {

Status Barrier(int32_t process_set) {
  TensorEntry e;
  e.request.type = OpType::kBarrier;
  return RunBlocking(std::move(e), process_set, nullptr);
}

Status Join(int32_t process_set, int* last_rank) {
  TensorEntry e;
  e.request.type = OpType::kJoin;
  e.request.name = "join." + std::to_string(process_set);
  int64_t last = -1;
  HVD_RETURN_IF_ERROR(RunBlocking(std::move(e), process_set, &last));
  if (last_rank) *last_rank = static_cast<int>(last);
  return Status::OK();
}

Status AddProcessSet(Span<int32_t> ranks, int32_t* id) {
  HVD_RETURN_IF_ERROR(CheckInitialized());
  std::set<int32_t> unique(ranks.begin(), ranks.end());
  const int size = Runtime::Get().topology().size;
  if (ranks.size == 0 || unique.size() != ranks.size || *unique.begin() < 0 ||
      *unique.rbegin() >= size) {
    return Status::Invalid("ranks must be distinct and in [0, " + std::to_string(size) + ")");
  }
  TensorEntry e;
  e.request.type = OpType::kAddProcessSet;
  e.request.set_ranks.assign(unique.begin(), unique.end());
  int64_t value = -1;
  HVD_RETURN_IF_ERROR(RunBlocking(std::move(e), 0, &value));
  *id = static_cast<int32_t>(value);
  return Status::OK();
}

Status RemoveProcessSet(int32_t id) {
  int rank = 0, size = 0;
  HVD_RETURN_IF_ERROR(Runtime::Get().SetInfo(id, &rank, &size));
  if (id == 0) return Status::Invalid("the global process set 0 cannot be removed");
  TensorEntry e;
  e.request.type = OpType::kRemoveProcessSet;
  e.request.set_ranks = {id};
  return RunBlocking(std::move(e), 0, nullptr);
}

Status ProcessSetInfo(int32_t id, int* rank, int* size) {
  return Runtime::Get().SetInfo(id, rank, size);
}

}  // namespace api
}  // namespace hvd
