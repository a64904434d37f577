// Maps the opaque integer handles of the C API to HandleStates. Handles are
// never reused, so a stale one is reported instead of aliasing a new op.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/common/spin_lock.h"
#include "core/tensor/handle_state.h"

namespace hvd {

class HandleTable {
 public:
  static HandleTable& Global();

  int64_t Add(std::shared_ptr<HandleState> state);
  // nullptr + an error status for unknown/released handles.
  std::shared_ptr<HandleState> Find(int64_t handle, Status* error);
  Status Release(int64_t handle);
  // True when `handle` names an operation that finished successfully:
  // hvd_wait's common case after a batch, answered without taking a
  // reference to the state.
  bool FinishedOk(int64_t handle);
  size_t size();

 private:
  // Open addressing with linear probing, keyed by id. Ids are handed out in
  // sequence, so `id & mask` places them nearly without collisions, and a
  // training step's thousands of adds and releases allocate nothing.
  struct Slot {
    int64_t id = kEmpty;
    std::shared_ptr<HandleState> state;
  };
  static constexpr int64_t kEmpty = 0;
  static constexpr int64_t kReleased = -1;  // tombstone: keep probing past it

  Slot* Locate(int64_t handle);  // the live slot of `handle`, or nullptr
  void Rehash(size_t capacity);
  Status Unknown(int64_t handle) const;

  SpinLock mu_;  // held for one probe (a rehash when growing)
  int64_t next_ = 1;
  std::vector<Slot> slots_;  // size is a power of two
  size_t live_ = 0;
  size_t used_ = 0;  // live slots and tombstones
};

}  // namespace hvd
