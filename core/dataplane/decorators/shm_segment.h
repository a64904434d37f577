// A POSIX shared-memory segment mapped into this process (RAII): one member
// of a host-local group creates it under a random name, the others open it,
// and the creator unlinks the name once everyone has mapped it, so nothing
// is left in /dev/shm even if the job dies. Space is reserved up front
// (posix_fallocate): a full /dev/shm fails here with a clear error, not
// with SIGBUS at the first touch.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/common/status.h"

namespace hvd {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // name: "/hvd-..." (one path component). Create fails if it exists.
  Status Create(const std::string& name, size_t bytes);
  // Maps the first `bytes` of an existing segment (0: all of it).
  Status Open(const std::string& name, size_t bytes);
  // Removes the name (the mapping stays); only the creating process does:
  // a forked child's copy (a DataLoader worker) leaves it.
  void Unlink();

  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
  size_t size() const { return bytes_; }

 private:
  Status Map(int fd, size_t bytes);

  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;  // set while this process created and has not unlinked it
  pid_t creator_ = 0;
};

}  // namespace hvd
