// One submitted tensor on this rank, from hvd_*_async until the background
// thread completes it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/coordination/message.h"
#include "core/tensor/handle_state.h"

namespace hvd {

// Allocates result memory (bytes, shape, dtype, device) -> pointer or nullptr.
using ResultAllocator =
    std::function<void*(size_t, const std::vector<int64_t>&, DataType, const Device&)>;

struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;  // allreduce/broadcast: caller memory
  int64_t num_elements = 0;
  int64_t bytes = 0;
  std::shared_ptr<HandleState> handle;
  int32_t result_index = 0;  // the handle's result this entry writes (grouped ops: its index)
  ResultAllocator allocator;
  void* cuda_stream = nullptr;
  std::chrono::steady_clock::time_point enqueued;
  uint64_t flight_token = 0;  // the flight recorder's slot (0: not recorded)
  // PendingEntries' bookkeeping: the index of the pool slot that owns this
  // entry while a queue holds it. Not part of the entry's contents: Clear
  // and Swap leave it alone.
  size_t pool_slot = 0;

  // Memory for a result of `bytes` with `shape`, owned by the handle unless
  // an allocator was given. Never null: if the allocator fails, *error is
  // set and hvd-owned memory is returned so the collective can still run.
  void* AllocateResult(size_t bytes, const std::vector<int64_t>& shape, Status* error);
  // Back to a default entry, keeping the name's and shape's memory: the
  // queue reuses entries, so a steady stream of submissions allocates none.
  void Clear();
  // std::swap, field by field (a new field must go here and into Clear).
  void Swap(TensorEntry& o) noexcept;
};

}  // namespace hvd
