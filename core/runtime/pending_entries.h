// The entries a tensor queue holds, indexed by name. Entries are pooled: a
// finished one is cleared and reused, keeping its name's and shape's memory,
// so a steady stream of submissions allocates nothing. The index is open
// addressing with linear probing and backward-shift deletion (no tombstones,
// no allocation once it has grown). Not thread-safe: TensorQueue locks.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "core/tensor/tensor_entry.h"

namespace hvd {

class PendingEntries {
 public:
  // Swaps *e into a pooled entry, indexes it by name and returns it; *e is
  // left with the pooled entry's cleared contents. nullptr (and *e
  // untouched) when the name is already pending.
  TensorEntry* Insert(TensorEntry* e);
  TensorEntry* Find(std::string_view name) const;
  // Unindexes and returns the entry of `name` (nullptr when none); it stays
  // out of the pool until Recycle.
  TensorEntry* Remove(std::string_view name);
  // Unindexes every entry, appending them to *out.
  void RemoveAll(std::vector<TensorEntry*>* out);
  // Returns erased entries to the pool; they must be Clear()ed already.
  void Recycle(TensorEntry* e) { free_.push_back(e); }
  size_t size() const { return size_; }
  template <typename F>
  void ForEach(F&& f) const {
    for (const Cell& c : cells_) {
      if (c.entry) f(c.entry);
    }
  }

 private:
  struct Cell {
    size_t hash = 0;
    TensorEntry* entry = nullptr;  // null: empty
  };
  // The cell holding `name`, or the empty cell that ends its probe.
  size_t Probe(std::string_view name, size_t hash) const;
  void EraseAt(size_t i);
  void Grow();

  std::vector<std::unique_ptr<TensorEntry>> all_;  // owns every entry ever made
  std::vector<TensorEntry*> free_;
  std::vector<Cell> cells_;  // size is zero or a power of two
  size_t size_ = 0;
};

}  // namespace hvd
