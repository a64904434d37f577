#include "core/dataplane/decorators/shared_buffers.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

namespace hvd {
namespace {

constexpr const char* kPrefix = "hvd-buf.";

struct Buffer {
  uint64_t id;
  size_t bytes;
};

struct Registry {
  std::mutex mu;
  std::map<uint64_t, Buffer> by_start;  // under mu
  uint64_t next_id = 1;                 // under mu
  std::atomic<size_t> count{0};
  std::atomic<uint64_t> frees{0};
};

// Never destroyed: buffers may be freed while the process exits, after a
// function-local static made later would be gone.
Registry& registry() {
  alignas(Registry) static unsigned char storage[sizeof(Registry)];
  static Registry* r = ::new (static_cast<void*>(storage)) Registry();
  return *r;
}

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Names of processes that are gone (a job that died before freeing).
void SweepDead() {
  DIR* d = ::opendir("/dev/shm");
  if (!d) return;
  const int self = static_cast<int>(::getpid());
  while (const dirent* e = ::readdir(d)) {
    int pid = 0;
    unsigned long long id = 0;
    char tail = 0;
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0 ||
        std::sscanf(e->d_name + std::strlen(kPrefix), "%d.%llu%c", &pid, &id, &tail) != 2) {
      continue;
    }
    if (pid > 0 && pid != self && ::kill(pid, 0) != 0 && errno == ESRCH) {
      ::shm_unlink((std::string("/") + e->d_name).c_str());
    }
  }
  ::closedir(d);
}

}  // namespace

std::string SharedBuffers::Name(int32_t pid, uint64_t id) {
  return "/" + std::string(kPrefix) + std::to_string(pid) + "." + std::to_string(id);
}

Status SharedBuffers::Alloc(int64_t bytes, void** out) {
  if (!out) return Status::Invalid("hvd_alloc_shared: the output pointer is NULL");
  *out = nullptr;
  if (bytes <= 0) {
    return Status::Invalid("hvd_alloc_shared: " + std::to_string(bytes) + " bytes");
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  SweepDead();  // allocations are few: a look at /dev/shm each time is cheap
  const uint64_t id = r.next_id++;
  const std::string name = Name(static_cast<int32_t>(::getpid()), id);
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Internal(Errno("hvd_alloc_shared: shm_open " + name));
  // Reserved now: a full /dev/shm fails here, not with SIGBUS at first touch.
  int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void* p = MAP_FAILED;
  if (err == 0) {
    p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) err = errno;
  }
  ::close(fd);
  if (err != 0) {
    ::shm_unlink(name.c_str());
    return Status::Internal("hvd_alloc_shared: " + std::to_string(bytes) + " bytes in " + name +
                            ": " + std::strerror(err));
  }
  r.by_start.emplace(reinterpret_cast<uint64_t>(p), Buffer{id, static_cast<size_t>(bytes)});
  r.count.store(r.by_start.size(), std::memory_order_release);
  *out = p;
  return Status::OK();
}

Status SharedBuffers::Free(void* p) {
  if (!p) return Status::OK();  // as free(NULL)
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_start.find(reinterpret_cast<uint64_t>(p));
  if (it == r.by_start.end()) {
    char where[32];
    std::snprintf(where, sizeof where, "%p", p);
    return Status::Invalid(std::string("hvd_free_shared: ") + where +
                           " is not a buffer from hvd_alloc_shared (or was freed already)");
  }
  ::munmap(p, it->second.bytes);
  ::shm_unlink(Name(static_cast<int32_t>(::getpid()), it->second.id).c_str());
  r.by_start.erase(it);
  r.count.store(r.by_start.size(), std::memory_order_release);
  r.frees.fetch_add(1, std::memory_order_release);
  return Status::OK();
}

bool SharedBuffers::Any() {
  return registry().count.load(std::memory_order_acquire) > 0;
}

uint64_t SharedBuffers::Frees() {
  return registry().frees.load(std::memory_order_acquire);
}

bool SharedBuffers::Find(uint64_t p, uint64_t bytes, SharedRef* ref) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_start.upper_bound(p);
  if (it == r.by_start.begin()) return false;
  --it;
  const uint64_t offset = p - it->first;
  if (offset + bytes > it->second.bytes) return false;
  ref->id = it->second.id;
  ref->offset = offset;
  return true;
}

PeerBuffers::Mapping::~Mapping() {
  ::munmap(addr, bytes);
}

Status PeerBuffers::Map(int32_t pid, const SharedRef& ref, uint64_t bytes, uint8_t** at) {
  const auto key = std::make_pair(pid, ref.id);
  auto it = maps_.find(key);
  if (it == maps_.end()) {
    const std::string name = SharedBuffers::Name(pid, ref.id);
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return Status::Internal(Errno("host-local shared memory: shm_open " + name));
    struct stat st {};
    void* p = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                 0);
    }
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) {
      return Status::Internal("host-local shared memory: mapping " + name + ": " +
                              std::strerror(err));
    }
    it = maps_.emplace(key, std::make_unique<Mapping>(p, static_cast<size_t>(st.st_size))).first;
  }
  const Mapping& m = *it->second;
  if (ref.offset + bytes > m.bytes) {
    return Status::Internal("host-local shared memory: " + std::to_string(bytes) + " bytes at " +
                            std::to_string(ref.offset) + " are outside " +
                            SharedBuffers::Name(pid, ref.id) + " (" + std::to_string(m.bytes) +
                            " bytes)");
  }
  *at = static_cast<uint8_t*>(m.addr) + ref.offset;
  return Status::OK();
}

void PeerBuffers::Forget(int32_t pid) {
  auto it = maps_.lower_bound(std::make_pair(pid, uint64_t{0}));
  while (it != maps_.end() && it->first.first == pid) it = maps_.erase(it);
}

}  // namespace hvd
