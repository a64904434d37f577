#include "core/api/submit.h"

#include <string>

#include "core/common/block_pool.h"
#include "core/runtime/handle_table.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {

Status Submit(std::unique_ptr<TensorEntry>* entries, size_t count, const OpOptions& o,
              int64_t* handle, bool per_tensor_results) {
  Runtime& rt = Runtime::Get();
  const int n = static_cast<int>(count);
  auto state = std::allocate_shared<HandleState>(PoolAllocator<HandleState>(), n, o.callback,
                                                 per_tensor_results ? n : 1);
  for (size_t i = 0; i < count; ++i) {
    TensorEntry& e = *entries[i];
    e.handle = state;
    e.result_index = per_tensor_results ? static_cast<int32_t>(i) : 0;
    e.request.process_set = o.process_set;
    e.request.prescale = o.prescale;
    e.request.postscale = o.postscale;
    if (o.allocator) e.allocator = o.allocator;  // entries arrive cleared
    e.cuda_stream = o.cuda_stream;
    if (e.request.name.empty()) e.request.name = rt.AutoName(e.request.type, o.process_set);
  }
  // The table takes the caller's reference: every shared_ptr copy is a
  // locked instruction, and this runs once per submitted tensor.
  HandleState& st = *state;
  const int64_t id = HandleTable::Global().Add(std::move(state));
  st.set_id(id);
  Status s = rt.Submit(entries, count);
  if (!s.ok()) {
    HandleTable::Global().Release(id);
    *handle = 0;
    return s;
  }
  *handle = id;
  return Status::OK();
}

Status SubmitGroup(OpType type, Span<GroupItem> items,
                   std::vector<std::unique_ptr<TensorEntry>>* entries, const OpOptions& o,
                   int64_t* handle, bool per_tensor_results) {
  std::vector<std::unique_ptr<TensorEntry>>& v = *entries;
  for (size_t i = 0; i < v.size(); ++i) {
    Request& q = v[i]->request;
    q.type = type;
    q.name = items[i].name.empty() ? Runtime::Get().AutoName(type, o.process_set)
                                   : std::string(items[i].name);
  }
  const std::string group = "group:" + v[0]->request.name;
  for (auto& e : v) {
    e->request.group = group;
    e->request.group_size = static_cast<int32_t>(v.size());
  }
  return Submit(v.data(), v.size(), o, handle, per_tensor_results);
}

__attribute__((noinline)) std::unique_ptr<TensorEntry>* ScratchEntry::ThreadSlot() {
  thread_local std::unique_ptr<TensorEntry> entry;
  return &entry;
}

Status ScratchEntry::Submit(OpType type, std::string_view name, const OpOptions& o,
                            int64_t* handle) {
  TensorEntry& e = **slot_;
  e.request.type = type;
  if (!name.empty()) e.request.name.assign(name.data(), name.size());
  Status s = api::Submit(slot_, 1, o, handle);
  submitted_ = s.ok();
  return s;
}

Status RunBlocking(TensorEntry entry, int32_t set, int64_t* value) {
  OpOptions o;
  o.process_set = set;
  int64_t h = 0;
  auto e = std::make_unique<TensorEntry>(std::move(entry));
  HVD_RETURN_IF_ERROR(Submit(&e, 1, o, &h));
  Status err;
  auto state = HandleTable::Global().Find(h, &err);
  Status s = state->Wait(-1);
  if (value) *value = state->result().value;
  HandleTable::Global().Release(h);
  return s;
}

}  // namespace api
}  // namespace hvd
