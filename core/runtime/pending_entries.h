// The entries a tensor queue holds, indexed by name. Entries are pooled: a
// finished one is cleared and reused, keeping its name's and shape's memory,
// so a steady stream of submissions allocates nothing. A submitted entry
// changes hands by pointer: the pool takes it and gives the caller a cleared
// one back, so nothing is copied. Not thread-safe: TensorQueue locks.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "core/common/name_index.h"
#include "core/tensor/tensor_entry.h"

namespace hvd {

class PendingEntries {
 public:
  // Takes *e into the pool, indexes it by name and returns it; *e gets a
  // cleared pooled entry in exchange. nullptr (and *e untouched) when the
  // name is already pending.
  TensorEntry* Insert(std::unique_ptr<TensorEntry>* e);
  // Undoes the Insert of `name` that gave *e its current (cleared) entry:
  // *e gets its own entry back, the pool the cleared one.
  void Uninsert(std::string_view name, std::unique_ptr<TensorEntry>* e);
  TensorEntry* Find(std::string_view name) const { return index_.Find(name); }
  // Unindexes and returns the entry of `name` (nullptr when none); it stays
  // out of the pool until Recycle.
  TensorEntry* Remove(std::string_view name) { return index_.Remove(name); }
  // Unindexes every entry, appending them to *out.
  void RemoveAll(std::vector<TensorEntry*>* out);
  // Returns erased entries to the pool; they must be Clear()ed already.
  void Recycle(TensorEntry* e) { free_.push_back(e); }
  size_t size() const { return index_.size(); }
  template <typename F>
  void ForEach(F&& f) const {
    index_.ForEach([&f](const TensorEntry* e) { f(e); });
  }

 private:
  struct NameOf {
    std::string_view operator()(const TensorEntry* e) const { return e->request.name; }
  };

  // Owns every entry in the pool (indexed, taken or free); an entry's
  // pool_slot is its index here.
  std::vector<std::unique_ptr<TensorEntry>> all_;
  std::vector<TensorEntry*> free_;
  NameIndex<TensorEntry*, nullptr, NameOf> index_;
};

}  // namespace hvd
