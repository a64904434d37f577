#include "core/runtime/pending_entries.h"

#include <utility>

#include "core/common/name_hash.h"

namespace hvd {
namespace {

size_t HashName(std::string_view name) {
  return NameHash()(name);
}

}  // namespace

size_t PendingEntries::Probe(std::string_view name, size_t hash) const {
  const size_t mask = cells_.size() - 1;
  size_t i = hash & mask;
  while (cells_[i].entry && !(cells_[i].hash == hash && cells_[i].entry->request.name == name)) {
    i = (i + 1) & mask;
  }
  return i;
}

void PendingEntries::Grow() {
  std::vector<Cell> old(cells_.empty() ? 64 : cells_.size() * 2);
  old.swap(cells_);
  const size_t mask = cells_.size() - 1;
  for (const Cell& c : old) {
    if (!c.entry) continue;
    size_t i = c.hash & mask;
    while (cells_[i].entry) i = (i + 1) & mask;
    cells_[i] = c;
  }
}

TensorEntry* PendingEntries::Insert(TensorEntry* e) {
  // At most half full: probes stay short.
  if ((size_ + 1) * 2 > cells_.size()) Grow();
  const size_t hash = HashName(e->request.name);
  const size_t i = Probe(e->request.name, hash);
  if (cells_[i].entry) return nullptr;
  if (free_.empty()) {
    all_.push_back(std::make_unique<TensorEntry>());
    free_.push_back(all_.back().get());
  }
  TensorEntry* slot = free_.back();
  free_.pop_back();
  slot->Swap(*e);
  cells_[i] = {hash, slot};
  ++size_;
  return slot;
}

TensorEntry* PendingEntries::Find(std::string_view name) const {
  if (size_ == 0) return nullptr;
  return cells_[Probe(name, HashName(name))].entry;
}

TensorEntry* PendingEntries::Remove(std::string_view name) {
  if (size_ == 0) return nullptr;
  const size_t i = Probe(name, HashName(name));
  TensorEntry* e = cells_[i].entry;
  if (e) EraseAt(i);
  return e;
}

void PendingEntries::RemoveAll(std::vector<TensorEntry*>* out) {
  for (Cell& c : cells_) {
    if (c.entry) out->push_back(c.entry);
    c = Cell();
  }
  size_ = 0;
}

void PendingEntries::EraseAt(size_t i) {
  // Backward-shift deletion: move later members of the probe run into the
  // hole unless their home lies cyclically after the hole.
  const size_t mask = cells_.size() - 1;
  for (size_t j = (i + 1) & mask; cells_[j].entry; j = (j + 1) & mask) {
    const size_t home = cells_[j].hash & mask;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    cells_[i] = cells_[j];
    i = j;
  }
  cells_[i] = Cell();
  --size_;
}

}  // namespace hvd
