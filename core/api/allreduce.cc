// Allreduce, alone and grouped: checks, then entries for the runtime.
#include <string>
#include <vector>

#include "core/api/checks.h"
#include "core/api/submit.h"

namespace hvd {
namespace api {

// Runs at the start of every tensor of every training step: the entry is
// the thread's pooled one and nothing is allocated unless a check fails.
Status Allreduce(const AllreduceArgs& a, const OpOptions& o, int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  ScratchEntry e;
  FillInput(a.input, &*e);
  Status s = CheckOutput("output", "input", a.output, &*e);
  if (s.ok() && a.op == ReduceOp::kAdasum) s = CheckAdasumTensor("input", *e);
  if (s.ok()) s = SetReduceOp("input", a.op, o, &*e);
  if (!s.ok()) return s;
  return e.Submit(OpType::kAllreduce, a.name, o, handle);
}

Status GroupedAllreduce(Span<GroupItem> items, ReduceOp op, const OpOptions& o, int64_t* handle) {
  HVD_RETURN_IF_ERROR(CheckOptions(o));
  if (items.size == 0) return Status::Invalid("needs at least one tensor");
  std::vector<std::unique_ptr<TensorEntry>> v(items.size);
  for (size_t i = 0; i < items.size; ++i) {
    const std::string what = ItemName("inputs", i);
    v[i] = std::make_unique<TensorEntry>();
    FillInput(items[i].input, v[i].get());
    HVD_RETURN_IF_ERROR(
        CheckOutput(ItemName("outputs", i).c_str(), what.c_str(), items[i].output, v[i].get()));
    if (op == ReduceOp::kAdasum) HVD_RETURN_IF_ERROR(CheckAdasumTensor(what.c_str(), *v[i]));
    HVD_RETURN_IF_ERROR(SetReduceOp(what.c_str(), op, o, v[i].get()));
  }
  return SubmitGroup(OpType::kAllreduce, items, &v, o, handle, false);
}

}  // namespace api
}  // namespace hvd
