#include "core/runtime/handle_table.h"

#include <string>

namespace hvd {

HandleTable& HandleTable::Global() {
  static HandleTable table;
  return table;
}

void HandleTable::Rehash(size_t capacity) {
  std::vector<Slot> old(capacity);
  old.swap(slots_);
  const size_t mask = capacity - 1;
  for (auto& s : old) {
    if (s.id <= 0) continue;
    size_t i = static_cast<size_t>(s.id) & mask;
    while (slots_[i].id != kEmpty) i = (i + 1) & mask;
    slots_[i] = std::move(s);
  }
  used_ = live_;
}

int64_t HandleTable::Add(std::shared_ptr<HandleState> state) {
  std::lock_guard<SpinLock> lock(mu_);
  // Keep at most half the slots in use (live or tombstone); grow when the
  // live handles alone fill a quarter.
  if (slots_.empty() || (used_ + 1) * 2 > slots_.size()) {
    size_t capacity = slots_.empty() ? 1024 : slots_.size();
    while ((live_ + 1) * 4 > capacity) capacity *= 2;
    Rehash(capacity);
  }
  const int64_t h = next_++;
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(h) & mask;
  while (slots_[i].id > 0) i = (i + 1) & mask;  // ids are unique: any free slot will do
  if (slots_[i].id == kEmpty) ++used_;
  slots_[i].id = h;
  slots_[i].state = std::move(state);
  ++live_;
  return h;
}

HandleTable::Slot* HandleTable::Locate(int64_t handle) {
  if (handle <= 0 || slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(handle) & mask;; i = (i + 1) & mask) {
    if (slots_[i].id == handle) return &slots_[i];
    if (slots_[i].id == kEmpty) return nullptr;
  }
}

Status HandleTable::Unknown(int64_t handle) const {
  return Status::Invalid("unknown handle " + std::to_string(handle) +
                         (handle > 0 && handle < next_ ? " (already released)" : ""));
}

std::shared_ptr<HandleState> HandleTable::Find(int64_t handle, Status* error) {
  std::lock_guard<SpinLock> lock(mu_);
  Slot* s = Locate(handle);
  if (!s) {
    *error = Unknown(handle);
    return nullptr;
  }
  return s->state;
}

bool HandleTable::FinishedOk(int64_t handle) {
  std::lock_guard<SpinLock> lock(mu_);
  Slot* s = Locate(handle);
  return s && s->state->done() && s->state->Poll().ok();
}

Status HandleTable::Release(int64_t handle) {
  std::shared_ptr<HandleState> state;  // destroyed outside the lock
  {
    std::lock_guard<SpinLock> lock(mu_);
    Slot* s = Locate(handle);
    if (!s) return Unknown(handle);
    state = std::move(s->state);
    s->id = kReleased;
    --live_;
    // A tombstone just before an empty slot ends no probe chain: empty it,
    // and the tombstones before it. Handles released in order thus leave the
    // table clean instead of forcing periodic rehashes.
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>(s - slots_.data());
    if (slots_[(i + 1) & mask].id == kEmpty) {
      while (slots_[i].id == kReleased) {
        slots_[i].id = kEmpty;
        --used_;
        i = (i - 1) & mask;
      }
    }
  }
  return Status::OK();
}

size_t HandleTable::size() {
  std::lock_guard<SpinLock> lock(mu_);
  return live_;
}

}  // namespace hvd
