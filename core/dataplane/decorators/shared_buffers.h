// Host memory that the other processes of this host can map
// (hvd_alloc_shared): each buffer is a POSIX shared-memory object named
// after this process and a number never reused, "/hvd-buf.<pid>.<id>",
// mapped here until freed. An allreduce whose every member's tensors lie in
// such buffers reduces between them directly (shm_mapped.cc): each member
// reads every member's input of its share and writes every member's output,
// so each byte is read once and written once, with no copy through the
// slots.
//
// A name stays in /dev/shm until its buffer is freed, since the peers open
// it when a call first needs it; every allocation removes the names of
// processes that are gone (a job that died).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/common/status.h"
#include "core/dataplane/decorators/shm_segment.h"

namespace hvd {

// Where bytes lie in one process's shared buffers.
struct SharedRef {
  uint64_t id = 0;      // the buffer
  uint64_t offset = 0;  // from its start
};

class SharedBuffers {
 public:
  // A zero-filled buffer of `bytes` (> 0) at *out.
  static Status Alloc(int64_t bytes, void** out);
  // A pointer Alloc returned (not yet freed).
  static Status Free(void* p);
  // Whether [p, p + bytes) lies within one of this process's buffers.
  static bool Find(uint64_t p, uint64_t bytes, SharedRef* ref);
  // Whether this process has any buffer (a load, for every allreduce).
  static bool Any();
  // Buffers this process has freed so far: a peer that saw another count
  // drops its mappings of this process's buffers.
  static uint64_t Frees();
  static std::string Name(int32_t pid, uint64_t id);
};

// Other processes' buffers, mapped here when a call first needs them.
class PeerBuffers {
 public:
  PeerBuffers() = default;
  PeerBuffers(const PeerBuffers&) = delete;
  PeerBuffers& operator=(const PeerBuffers&) = delete;
  // The address here of `bytes` at `ref` in process pid's buffers.
  Status Map(int32_t pid, const SharedRef& ref, uint64_t bytes, uint8_t** at);
  // Unmaps every buffer of `pid` (it freed one; the others map again).
  void Forget(int32_t pid);

 private:
  std::map<std::pair<int32_t, uint64_t>, std::unique_ptr<ShmSegment>> maps_;
};

}  // namespace hvd
