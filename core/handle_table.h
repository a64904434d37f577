// Maps the opaque integer handles of the C API to HandleStates. Handles are
// never reused, so a stale one is reported instead of aliasing a new op.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/handle_state.h"

namespace hvd {

class HandleTable {
 public:
  static HandleTable& Global();

  int64_t Add(std::shared_ptr<HandleState> state);
  // nullptr + an error status for unknown/released handles.
  std::shared_ptr<HandleState> Find(int64_t handle, Status* error);
  Status Release(int64_t handle);
  size_t size();

 private:
  std::mutex mu_;
  int64_t next_ = 1;
  std::unordered_map<int64_t, std::shared_ptr<HandleState>> table_;
};

}  // namespace hvd
