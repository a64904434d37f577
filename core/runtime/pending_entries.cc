#include "core/runtime/pending_entries.h"

#include <utility>

namespace hvd {

TensorEntry* PendingEntries::Insert(std::unique_ptr<TensorEntry>* e) {
  // The entry to give back first: nothing can fail after indexing.
  if (free_.empty()) {
    all_.push_back(std::make_unique<TensorEntry>());
    all_.back()->pool_slot = all_.size() - 1;
    free_.push_back(all_.back().get());
  }
  TensorEntry* in = e->get();
  if (!index_.Insert(in)) return nullptr;
  TensorEntry* out = free_.back();
  free_.pop_back();
  // The caller's entry takes the given-out entry's place in the pool.
  const size_t slot = out->pool_slot;
  all_[slot].swap(*e);
  in->pool_slot = slot;
  return in;
}

void PendingEntries::Uninsert(std::string_view name, std::unique_ptr<TensorEntry>* e) {
  TensorEntry* in = index_.Remove(name);
  if (!in) return;
  all_[in->pool_slot].swap(*e);
  free_.push_back(all_[in->pool_slot].get());
}

void PendingEntries::RemoveAll(std::vector<TensorEntry*>* out) {
  index_.ForEach([out](TensorEntry* e) { out->push_back(e); });
  index_.Clear();
}

}  // namespace hvd
