// An index from tensor names to small values (entry pointers, cache slots)
// whose names the caller stores: `key_of(value)` gives a value's name. Open
// addressing with linear probing on a stored hash, at most half full, and
// backward-shift deletion (no tombstones), so a steady stream of inserts
// and removals allocates nothing and probes stay short. It serves the
// per-tensor lookups of the queue and the response cache, where
// std::unordered_map's node per name and out-of-line hash showed.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/name_hash.h"

namespace hvd {

// V: a small copyable value; kNone marks an empty cell and is never stored.
template <typename V, V kNone, typename KeyOf>
class NameIndex {
 public:
  explicit NameIndex(KeyOf key_of = KeyOf()) : key_of_(std::move(key_of)) {}

  size_t size() const { return size_; }

  // The value named `name`, or kNone.
  V Find(std::string_view name) const {
    if (size_ == 0) return kNone;
    return cells_[Probe(name, NameHash()(name))].value;
  }

  // Indexes `v` under key_of(v); false (and nothing changes) when that name
  // is already indexed.
  bool Insert(V v) {
    if ((size_ + 1) * 2 > cells_.size()) Grow();
    const std::string_view name = key_of_(v);
    const size_t hash = NameHash()(name);
    const size_t i = Probe(name, hash);
    if (cells_[i].value != kNone) return false;
    cells_[i] = {hash, v};
    ++size_;
    return true;
  }

  // Unindexes and returns the value named `name` (kNone when none).
  V Remove(std::string_view name) {
    if (size_ == 0) return kNone;
    size_t i = Probe(name, NameHash()(name));
    const V v = cells_[i].value;
    if (v == kNone) return v;
    // Backward shift: move later members of the probe run into the hole
    // unless their home lies cyclically after the hole.
    const size_t mask = cells_.size() - 1;
    for (size_t j = (i + 1) & mask; cells_[j].value != kNone; j = (j + 1) & mask) {
      const size_t home = cells_[j].hash & mask;
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      cells_[i] = cells_[j];
      i = j;
    }
    cells_[i] = Cell();
    --size_;
    return v;
  }

  // Calls f(value) for every indexed value, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Cell& c : cells_) {
      if (c.value != kNone) f(c.value);
    }
  }

  void Clear() {
    for (Cell& c : cells_) c = Cell();
    size_ = 0;
  }

 private:
  struct Cell {
    size_t hash = 0;
    V value = kNone;
  };

  // The cell holding `name`, or the empty cell that ends its probe run.
  size_t Probe(std::string_view name, size_t hash) const {
    const size_t mask = cells_.size() - 1;
    size_t i = hash & mask;
    while (cells_[i].value != kNone &&
           !(cells_[i].hash == hash && key_of_(cells_[i].value) == name)) {
      i = (i + 1) & mask;
    }
    return i;
  }

  void Grow() {
    std::vector<Cell> old(cells_.empty() ? 64 : cells_.size() * 2);
    old.swap(cells_);
    const size_t mask = cells_.size() - 1;
    for (const Cell& c : old) {
      if (c.value == kNone) continue;
      size_t i = c.hash & mask;
      while (cells_[i].value != kNone) i = (i + 1) & mask;
      cells_[i] = c;
    }
  }

  KeyOf key_of_;
  std::vector<Cell> cells_;  // size is zero or a power of two
  size_t size_ = 0;
};

}  // namespace hvd
