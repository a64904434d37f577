#include "core/dataplane/decorators/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace {

Status Errno(const std::string& what, int err) {
  return Status::Backend("shared memory: " + what + ": " + std::strerror(err));
}

}  // namespace

ShmSegment::~ShmSegment() {
  Unlink();
  if (addr_) ::munmap(addr_, bytes_);
}

Status ShmSegment::Create(const std::string& name, size_t bytes) {
  rendezvous::UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  if (fd.get() < 0) return Errno("shm_open(" + name + ", O_CREAT)", errno);
  name_ = name;
  creator_ = ::getpid();
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return Errno("ftruncate", errno);
  // Reserve the pages now: a /dev/shm too small for them fails here.
  if (const int e = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); e != 0) {
    return Errno("reserving " + std::to_string(bytes) + " bytes in /dev/shm", e);
  }
  return Map(fd.get(), bytes);
}

Status ShmSegment::Open(const std::string& name, size_t bytes) {
  rendezvous::UniqueFd fd(::shm_open(name.c_str(), O_RDWR, 0600));
  if (fd.get() < 0) return Errno("shm_open(" + name + ")", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno("fstat", errno);
  if (static_cast<size_t>(st.st_size) < bytes) {
    return Status::Backend("shared memory: " + name + " is smaller than expected");
  }
  return Map(fd.get(), bytes > 0 ? bytes : static_cast<size_t>(st.st_size));
}

Status ShmSegment::Map(int fd, size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Errno("mmap of " + std::to_string(bytes) + " bytes", errno);
  addr_ = p;
  bytes_ = bytes;
  return Status::OK();
}

void ShmSegment::Unlink() {
  if (name_.empty()) return;
  if (::getpid() == creator_) ::shm_unlink(name_.c_str());
  name_.clear();
}

}  // namespace hvd
