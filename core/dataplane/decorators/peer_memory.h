// Reading another process's memory on this host with one kernel copy
// (process_vm_readv, "cross-memory attach"), as Open MPI's shared-memory
// transport does for large messages. Allowed between processes of one user
// unless the kernel's ptrace policy (Yama) or a seccomp filter (some
// containers) forbids it: callers probe once and keep their slot copies
// where it fails.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "core/common/status.h"

namespace hvd {

// Appends the pieces of [addr, addr + bytes) to *iov (nothing for 0 bytes).
inline void AddIovec(uint64_t addr, int64_t bytes, std::vector<iovec>* iov) {
  if (bytes > 0) {
    iov->push_back(
        {reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), static_cast<size_t>(bytes)});
  }
}

// Copies the bytes that `remote` lists in process `pid` into the bytes that
// `local` lists (both the same total), however many entries and partial
// reads it takes; consumes both lists. A gone process is kPeerLost, any
// other failure kBackend (the message names the pid).
Status ReadPeerMemory(pid_t pid, std::vector<iovec>* local, std::vector<iovec>* remote);

}  // namespace hvd
