#include "core/handle_table.h"

namespace hvd {

HandleTable& HandleTable::Global() {
  static HandleTable table;
  return table;
}

int64_t HandleTable::Add(std::shared_ptr<HandleState> state) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t h = next_++;
  table_.emplace(h, std::move(state));
  return h;
}

std::shared_ptr<HandleState> HandleTable::Find(int64_t handle, Status* error) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = table_.find(handle);
  if (it == table_.end()) {
    *error = Status::Invalid("unknown handle " + std::to_string(handle) +
                             (handle > 0 && handle < next_ ? " (already released)" : ""));
    return nullptr;
  }
  return it->second;
}

Status HandleTable::Release(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (table_.erase(handle) == 0) {
    return Status::Invalid("hvd_release: unknown handle " + std::to_string(handle) +
                           (handle > 0 && handle < next_ ? " (already released)" : ""));
  }
  return Status::OK();
}

size_t HandleTable::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.size();
}

}  // namespace hvd
