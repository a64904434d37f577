// Submission (submit.cc): a handle for one or more validated entries, the
// calling thread's pooled entry for single-tensor operations, and the
// blocking control operations.
#pragma once

#include <memory>
#include <vector>

#include "core/api/api.h"
#include "core/tensor/tensor_entry.h"

namespace hvd {
namespace api {

// Registers a handle covering `count` entries, fills the options' fields
// and an automatic name where none is set, and submits. With
// per_tensor_results entry i writes the handle's result i (grouped
// allgather/reducescatter). On failure nothing stays behind and *handle is 0.
Status Submit(std::unique_ptr<TensorEntry>* entries, size_t count, const OpOptions& o,
              int64_t* handle, bool per_tensor_results = false);

// A grouped operation's entries (one per item, inputs filled): names,
// type and group, then one handle for all of them, so that they are
// negotiated together, emitted together and fused when they can be.
Status SubmitGroup(OpType type, Span<GroupItem> items,
                   std::vector<std::unique_ptr<TensorEntry>>* entries, const OpOptions& o,
                   int64_t* handle, bool per_tensor_results);

// The calling thread's entry for a single-tensor operation. A successful
// submission hands it to the queue, which gives back a cleared pooled entry
// (tensor_queue.h) whose name and shape memory the next call reuses: the
// hot path copies and allocates nothing. Any failure clears it for the
// next call.
class ScratchEntry {
 public:
  ScratchEntry() : slot_(ThreadSlot()) {
    if (!*slot_) *slot_ = std::make_unique<TensorEntry>();
  }
  ~ScratchEntry() {
    if (!submitted_) (*slot_)->Clear();
  }
  ScratchEntry(const ScratchEntry&) = delete;
  ScratchEntry& operator=(const ScratchEntry&) = delete;

  TensorEntry& operator*() { return **slot_; }
  TensorEntry* operator->() { return slot_->get(); }
  // Names the entry (automatically when `name` is empty) and submits it.
  Status Submit(OpType type, std::string_view name, const OpOptions& o, int64_t* handle);

 private:
  // Out of line (submit.cc): inlined, the compiler recomputes the
  // thread-local's address (a __tls_get_addr call in a shared library) at
  // every use.
  static std::unique_ptr<TensorEntry>* ThreadSlot();

  std::unique_ptr<TensorEntry>* slot_;
  bool submitted_ = false;
};

// Runs a control operation (barrier, join, process sets) to completion;
// *value (may be null) receives the result's value.
Status RunBlocking(TensorEntry entry, int32_t set, int64_t* value);

}  // namespace api
}  // namespace hvd
